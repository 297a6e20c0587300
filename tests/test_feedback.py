"""Evidence view, card buttons and feedback: storage, Telegram and Slack end to end.

The engine is the real one (one app for the module); each test has its own SQLite database. The card
whose evidence the tests read (hostile markup, known similarities and timings) is a stored Result that
the real repeat reuse answers with, as it does for a message forwarded again (at once: sent finished,
not edited from "Checking…"); the adapters are real (PTB polling the fake Bot API; bolt behind aiohttp,
signed requests).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.slack import SECTION_LIMIT, SlackBot, SlackConfig, render_evidence
from bot.chat_app import ChatApp
from tests.chat_support import queued_chat
from adapters.telegram import TelegramBot, TelegramConfig, render_evidence_html, tg_len
from bot.evidence import FEEDBACK_THANKS, UNKNOWN_CHECK, parse_callback
from bot.app import build_app
from bot.check_service import CHECKING
from bot.chat_settings import CheckExtras
from bot.domains import GLOBAL
from bot.repeats import RepeatTracker
from schema.models import Citation, Match, Result, Step, Verdict, new_check_id
from storage.feedback import UNMATCHED_REASON, FeedbackStore
from storage.sqlite import Database
from tests.fakes.slack_api import TEAM_ID, FakeSlack
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.test_slack import SECRET, dm, event_body, mention, post

HOSTILE = '<b>x</b> <!channel> <@U1>'


def make_result(text: str, *, matched: bool = True, verdict: Verdict | None = None, n_matches: int = 2) -> Result:
    tier = "auto" if matched else "suggest"
    matches = [Match(factcheck_id=f"fc{i}", claim=f"Claim {i} {HOSTILE}", url=f"https://factcheck.example/{i}?a=1&b=2",
                     publisher="Checkers & Co", rating_text="False", verdict=Verdict.REFUTED,
                     similarity=round(0.91 - min(i, 50) / 100, 2), method="hybrid", tier=tier if i == 0 else "none")
               for i in range(n_matches)]
    verdict = verdict or (Verdict.REFUTED if matched else Verdict.NOT_ENOUGH_EVIDENCE)
    return Result(
        id=new_check_id(), text=text, verdict=verdict, label=verdict.label, confidence=0.87,
        reasoning="Because of the fact-checks below.",
        citations=[Citation(n=1, url="https://factcheck.example/0?a=1&b=2", title=f"Debunk {HOSTILE}",
                            publisher="Checkers", rating="False", snippet="It is not true.")],
        matches=matches,
        steps=[Step(name="intake", ms=1.25, detail="42 chars"), Step(name="match", ms=12.5, detail="0.91/auto"),
               Step(name="verdict", ms=0.5, detail="REFUTED (0.87), offline")],
    )


@pytest_asyncio.fixture(scope="module")
async def fb_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("feedback") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


# Asked again in the Sources tests: answered with this stored Result (everything else: the real engine).
ASKED_BEFORE = "The 5G rollout caused the coronavirus outbreak"


async def chat_app(engine, db: Database) -> ChatApp:
    """The real engine; checks kept in the test's own database, where a repeat of `ASKED_BEFORE` finds
    its stored Result."""
    stored = make_result(ASKED_BEFORE)
    await db.save_check(stored)
    await RepeatTracker(db).record(ASKED_BEFORE, GLOBAL, stored.id)
    return await queued_chat(engine, db, extras=CheckExtras(db))  # repeat reuse (no tracked chats here)


@pytest_asyncio.fixture
async def db(tmp_path):
    d = await Database.open(tmp_path / "t.sqlite3")
    yield d
    await d.close()


# --- storage ---------------------------------------------------------------------------------------


async def test_a_later_vote_replaces_the_earlier_one(db):
    r = make_result("x")
    await db.save_check(r)
    store = FeedbackStore(db)
    await store.record(r.id, "telegram", 7, 1)
    await store.record(r.id, "telegram", 7, -1)
    await store.record(r.id, "slack", "7", 1)  # same user id, other platform: a separate vote
    votes = await store.votes(r.id)
    # Kept under each voter's pseudonym (storage/personal.py), never the id itself.
    assert [(v.platform, v.user_id, v.vote) for v in votes] == [("slack", db.pseudonym("slack", 7), 1),
                                                                ("telegram", db.pseudonym("telegram", "7"), -1)]
    with pytest.raises(KeyError):
        await store.record("nope", "telegram", 7, 1)
    with pytest.raises(ValueError):
        await store.record(r.id, "telegram", 7, 0)
    with pytest.raises(sqlite3.IntegrityError):  # the table refuses it too
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO feedback VALUES (?, 'x', 'u', 2, NULL)", (r.id,))


async def test_thumbs_down_queues_only_unmatched_or_unsettled_checks(db):
    matched, unmatched = make_result("a"), make_result("b", matched=False)
    nee_with_auto = make_result("c", verdict=Verdict.NOT_ENOUGH_EVIDENCE)
    for r in (matched, unmatched, nee_with_auto):
        await db.save_check(r)
    store = FeedbackStore(db)
    assert await store.record(matched.id, "telegram", 1, -1) is False  # 👎 on a matched, settled check
    assert await store.record(unmatched.id, "telegram", 1, 1) is False  # 👍 never queues
    assert await store.open_reviews() == []
    assert await store.record(unmatched.id, "telegram", 1, -1) is True
    assert await store.record(unmatched.id, "slack", "U2", -1) is True  # queued once
    assert await store.record(nee_with_auto.id, "slack", "U2", -1) is True
    items = await store.open_reviews()
    assert sorted(i.check_id for i in items) == sorted([unmatched.id, nee_with_auto.id])
    assert all(i.reason == UNMATCHED_REASON and i.resolved_at is None for i in items)
    assert await store.resolve(unmatched.id)
    assert [i.check_id for i in await store.open_reviews()] == [nee_with_auto.id]


def test_callback_data_round_trip_and_foreign_data():
    assert parse_callback("fb:down:abc123") == ("down", "abc123")
    assert parse_callback("fb:up:abc123") == ("up", "abc123")
    assert parse_callback("src:abc123") == ("sources", "abc123")
    assert parse_callback("fb:down:") is None and parse_callback("other") is None and parse_callback(None) is None


def test_evidence_views_escape_and_split_under_the_limits():
    big = make_result("long", n_matches=120)
    parts = render_evidence_html(big)
    assert len(parts) > 1 and all(tg_len(p) <= 4096 for p in parts)
    joined = "\n".join(parts)
    assert "<b>x</b>" not in joined and "&lt;b&gt;x&lt;/b&gt;" in joined
    assert "similarity 0.91 · tier auto" in joined and "match — 12.5 ms — 0.91/auto" in joined
    assert 'href="https://factcheck.example/119?a=1&amp;b=2"' in joined
    messages = render_evidence(big)
    sections = [b["text"]["text"] for blocks, _ in messages for b in blocks]
    assert all(len(s) <= SECTION_LIMIT for s in sections) and all(len(b) <= 50 for b, _ in messages)
    slack_text = "\n".join(sections)
    assert "<!channel>" not in slack_text and "&lt;!channel&gt;" in slack_text
    assert "<https://factcheck.example/119?a=1&amp;b=2|" in slack_text and "tier auto · via hybrid" in slack_text


# --- Telegram end to end ---------------------------------------------------------------------------


@pytest_asyncio.fixture
async def tg(db, fb_app):
    fake = await FakeTelegram().start()
    config = TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                            poll_timeout=1.0)
    bot = TelegramBot(config, await chat_app(fb_app.engine, db))
    await bot.start()
    yield fake, bot
    await bot.stop()
    await fake.stop()


async def tg_card(fake: FakeTelegram, user_msg: dict):
    """(the card message as the fake stores it, the call that made it a card: its final editMessageText,
    or the sendMessage itself for a stored verdict sent at once)."""
    def find():
        for sent in fake.replies_to(user_msg["message_id"]):
            if sent.params.get("reply_markup"):
                return sent.result, sent
            for e in fake.edits_of(sent.result["message_id"]):
                if not e.params["text"].startswith(CHECKING):
                    return sent.result, e
        return None
    return await fake.wait_for(find)


async def test_telegram_card_has_buttons_and_thumbs_down_is_stored_and_queued(tg, db):
    fake, _ = tg
    msg = await fake.send_user_message("an unmatched claim")
    card, edit = await tg_card(fake, msg)
    check_id = re.search(r"Check id: <code>([0-9a-f]+)</code>", edit.params["text"])[1]
    [row] = edit.params["reply_markup"]["inline_keyboard"]
    assert [(b["text"], b["callback_data"]) for b in row] == [
        ("Sources", f"src:{check_id}"), ("👍", f"fb:up:{check_id}"), ("👎", f"fb:down:{check_id}")]

    qid = await fake.press_button(card, f"fb:down:{check_id}")
    [answer] = await fake.wait_for(lambda: [c for c in fake.called("answerCallbackQuery")
                                            if c.params["callback_query_id"] == qid])
    assert answer.params["text"] == FEEDBACK_THANKS
    [vote] = await FeedbackStore(db).votes(check_id)
    assert (vote.platform, vote.user_id, vote.vote) == ("telegram", db.pseudonym("telegram", 4242), -1)
    assert [i.check_id for i in await FeedbackStore(db).open_reviews()] == [check_id]

    qid = await fake.press_button(card, f"fb:up:{check_id}")  # changing one's mind replaces the vote
    await fake.wait_for(lambda: [c for c in fake.called("answerCallbackQuery")
                                 if c.params["callback_query_id"] == qid])
    assert [v.vote for v in await FeedbackStore(db).votes(check_id)] == [1]


async def test_telegram_sources_button_sends_the_evidence_in_reply_to_the_card(tg):
    fake, _ = tg
    msg = await fake.send_user_message("The 5G rollout caused the coronavirus outbreak")
    card, edit = await tg_card(fake, msg)
    check_id = re.search(r"Check id: <code>([0-9a-f]+)</code>", edit.params["text"])[1]
    qid = await fake.press_button(card, f"src:{check_id}")
    [sent] = await fake.wait_for(lambda: fake.replies_to(card["message_id"]))
    text = sent.params["text"]
    assert sent.params["parse_mode"] == "HTML"
    assert f"Evidence for check <code>{check_id}</code>" in text
    assert "similarity 0.91 · tier auto · via hybrid" in text and "similarity 0.90 · tier none" in text
    assert "intake — 1.2 ms — 42 chars" in text or "intake — 1.3 ms — 42 chars" in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    assert [c.params["callback_query_id"] for c in fake.called("answerCallbackQuery")] == [qid]


async def test_telegram_evidence_command_known_and_unknown_id(tg, db):
    fake, _ = tg
    r = make_result("stored earlier", matched=False)
    await db.save_check(r)
    ok = await fake.send_user_message(f"/evidence {r.id}")
    [sent] = await fake.wait_for(lambda: fake.replies_to(ok["message_id"]))
    assert f"Evidence for check <code>{r.id}</code>" in sent.params["text"]
    assert "https://factcheck.example/1?a=1&amp;b=2" in sent.params["text"]
    bad = await fake.send_user_message("/evidence nope")
    [sent] = await fake.wait_for(lambda: fake.replies_to(bad["message_id"]))
    assert sent.params["text"] == UNKNOWN_CHECK
    cmds = [c["command"] for c in fake.called("setMyCommands")[0].params["commands"]]
    assert "evidence" in cmds


# --- Slack end to end ------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def slack(db, fb_app):
    fake = await FakeSlack().start()
    config = SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0)
    bot = SlackBot(config, await chat_app(fb_app.engine, db))
    await bot.start()
    yield fake, bot
    await bot.stop()
    await fake.stop()


async def slack_card(fake: FakeSlack, channel: str, thread_ts: str):
    """(the card's post, the call that made it a card: its chat.update, or the post itself for a stored
    verdict posted at once)."""
    def find():
        for sent in fake.posts_in_thread(channel, thread_ts):
            if sent.params.get("blocks"):
                return sent, sent
            for upd in fake.updates_of(channel, sent.result.get("ts", "")):
                if upd.params.get("blocks"):
                    return sent, upd
        return None
    return await fake.wait_for(find)


def block_actions(action_id: str, check_id: str, *, channel: str, message_ts: str, thread_ts: str,
                  user: str = "U0ALICE") -> str:
    payload = {
        "type": "block_actions", "team": {"id": TEAM_ID, "domain": "tipline-test"},
        "user": {"id": user, "username": "alice", "team_id": TEAM_ID}, "api_app_id": "A0TIPLINE",
        "token": "legacy", "trigger_id": "123.456.abc",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False,
                      "thread_ts": thread_ts},
        "channel": {"id": channel, "name": "general"},
        "message": {"type": "message", "ts": message_ts, "thread_ts": thread_ts, "text": "card"},
        "actions": [{"type": "button", "action_id": action_id, "block_id": "tipline_card_actions",
                     "value": check_id, "action_ts": "1700000000.1",
                     "text": {"type": "plain_text", "text": "x"}}],
    }
    return urlencode({"payload": json.dumps(payload)})


async def test_slack_card_has_actions_and_signed_block_actions_store_the_vote(slack, db):
    fake, bot = slack
    ev = mention("<@U0TIPBOT> an unmatched claim")
    await post(bot, event_body(ev))
    sent, upd = await slack_card(fake, ev["channel"], ev["ts"])
    [actions] = [b for b in upd.params["blocks"] if b["type"] == "actions"]
    check_id = actions["elements"][0]["value"]
    assert [(e["action_id"], e["value"]) for e in actions["elements"]] == [
        ("tipline_sources", check_id), ("tipline_fb_up", check_id), ("tipline_fb_down", check_id)]
    assert await db.get_check(check_id) is not None

    body = block_actions("tipline_fb_down", check_id, channel=ev["channel"], message_ts=sent.result["ts"],
                         thread_ts=ev["ts"])
    status, _ = await post(bot, body, content_type="application/x-www-form-urlencoded")
    assert status == 200
    [eph] = await fake.wait_for(lambda: fake.called("chat.postEphemeral"))
    assert eph.params["text"] == FEEDBACK_THANKS and eph.params["user"] == "U0ALICE"
    assert eph.params["channel"] == ev["channel"] and eph.result["ok"]
    [vote] = await FeedbackStore(db).votes(check_id)
    assert (vote.platform, vote.user_id, vote.vote) == ("slack", db.pseudonym("slack", "U0ALICE"), -1)
    assert [i.check_id for i in await FeedbackStore(db).open_reviews()] == [check_id]

    # a forged interaction is refused and changes nothing
    forged = block_actions("tipline_fb_up", check_id, channel=ev["channel"], message_ts=sent.result["ts"],
                           thread_ts=ev["ts"])
    status, _ = await post(bot, forged, content_type="application/x-www-form-urlencoded", secret="wrong")
    assert status == 401
    assert [v.vote for v in await FeedbackStore(db).votes(check_id)] == [-1]


async def test_slack_sources_button_posts_the_evidence_in_the_thread(slack):
    fake, bot = slack
    ev = mention("<@U0TIPBOT> The 5G rollout caused the coronavirus outbreak")
    await post(bot, event_body(ev))
    sent, upd = await slack_card(fake, ev["channel"], ev["ts"])
    [actions] = [b for b in upd.params["blocks"] if b["type"] == "actions"]
    check_id = actions["elements"][0]["value"]
    await post(bot, block_actions("tipline_sources", check_id, channel=ev["channel"], message_ts=sent.result["ts"],
                                  thread_ts=ev["ts"]), content_type="application/x-www-form-urlencoded")
    ev_post = await fake.wait_for(lambda: [c for c in fake.posts_in_thread(ev["channel"], ev["ts"])
                                           if "Evidence for check" in c.params.get("text", "")])
    text = json.dumps(ev_post[0].params["blocks"], ensure_ascii=False)
    assert f"Evidence for check `{check_id}`" in text and "tier auto · via hybrid" in text
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text


async def test_slack_evidence_dm_and_slash_command(slack, db):
    fake, bot = slack
    r = make_result("stored earlier")
    await db.save_check(r)
    ok = dm(f"evidence {r.id}")
    await post(bot, event_body(ok))
    [sent] = await fake.wait_for(lambda: fake.posts_in_thread("D0ALICE", ok["ts"]))
    assert f"Evidence for check `{r.id}`" in json.dumps(sent.params["blocks"], ensure_ascii=False)
    bad = dm("evidence nope")
    await post(bot, event_body(bad))
    [sent] = await fake.wait_for(lambda: fake.posts_in_thread("D0ALICE", bad["ts"]))
    assert sent.params["text"] == UNKNOWN_CHECK

    def slash(text: str) -> str:
        return urlencode({"team_id": TEAM_ID, "channel_id": "C0GENERAL", "user_id": "U0ALICE",
                          "command": "/evidence", "text": text, "trigger_id": "1.2.ev"})
    status, body = await post(bot, slash(r.id), content_type="application/x-www-form-urlencoded")
    answer = json.loads(body)
    assert status == 200 and answer["response_type"] == "ephemeral"
    assert f"Evidence for check `{r.id}`" in json.dumps(answer["blocks"], ensure_ascii=False)
    _, body = await post(bot, slash("nope"), content_type="application/x-www-form-urlencoded")
    assert json.loads(body)["text"] == UNKNOWN_CHECK
