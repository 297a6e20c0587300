"""A recorded review reaches everyone who asked about the claim, once, where they asked.

Real engine (model + SQLite + embedded Qdrant + seed KB), the real durable job queue, real PTB and
bolt against the fake Telegram and Slack servers; Slack requests are signed as Slack signs them.
Each test uses its own made-up claim (the app and its database are shared by the module), one the
seed knowledge base has no fact-check for, so the engine leaves it unsettled until a person reviews it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.slack import SlackBot, SlackConfig
from bot.chat_app import ChatApp
from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.notify import ReviewNotices
from bot.queue import JobQueue
from bot.check_service import CHECKING, CheckService
from storage.jobs import JobStore
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.test_slack import SECRET, event_body, mention, new_ts, post
from tests.conftest import SeededDataDir, isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN = 9001  # Telegram admin
SLACK_ADMIN = "U0ADMIN"
CHANNEL = "C0NEWS"
TG_CHECK_ID = re.compile(r"Check id: <code>([0-9a-f]+)</code>")
SLACK_CHECK_ID = re.compile(r"Check id: `([0-9a-f]+)`")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def n_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("notify") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def tg():
    server = await FakeTelegram().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def sl():
    server = await FakeSlack().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def bots(n_app, tg: FakeTelegram, sl: FakeSlack):
    """Both adapters on one durable queue, as `tipline run` wires them."""
    queue = JobQueue(JobStore(n_app.db), CheckService(n_app.engine, progress_interval=0.0), workers=2)
    admins = (str(ADMIN), SLACK_ADMIN)
    chat = ChatApp(queue, admins=admins, add_factchecks=n_app.kb.add)
    tb = TelegramBot(TelegramConfig(token=tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url,
                                    poll_timeout=1.0), chat)
    sb = SlackBot(SlackConfig(bot_token=sl.token, signing_secret=SECRET, api_url=sl.base_url, port=0), chat)
    await tb.start()
    await sb.start()
    await queue.start()
    yield tb, sb
    await queue.stop()
    await tb.stop()
    await sb.stop()


def person(uid: int) -> dict[str, Any]:
    return {"id": uid, "is_bot": False, "first_name": f"User{uid}"}


async def tg_card(tg: FakeTelegram, message: dict[str, Any]) -> str:
    """The verdict card the bot made of its reply to `message` (Telegram HTML)."""
    def find() -> str | None:
        for sent in tg.replies_to(message["message_id"]):
            if sent.params["chat_id"] != message["chat"]["id"] or not isinstance(sent.result, dict):
                continue
            for edit in tg.edits_of(sent.result["message_id"]):
                if not edit.params["text"].startswith(CHECKING):
                    return edit.params["text"]
        return None
    return await tg.wait_for(find, timeout=60)


async def slack_card(sl: FakeSlack, channel: str, thread_ts: str) -> str:
    def find() -> str | None:
        for sent in sl.posts_in_thread(channel, thread_ts):
            for upd in sl.updates_of(channel, sent.result.get("ts", "")):
                if upd.params.get("blocks"):
                    return json.dumps(upd.params["blocks"], ensure_ascii=False)
        return None
    return await sl.wait_for(find, timeout=60)


def tg_notices(tg: FakeTelegram, message: dict[str, Any]) -> list[Any]:
    return [c for c in tg.replies_to(message["message_id"]) if c.params["chat_id"] == message["chat"]["id"]
            and "reviewed" in c.params["text"]]


def slack_notices(sl: FakeSlack, channel: str, thread_ts: str) -> list[Any]:
    return [c for c in sl.posts_in_thread(channel, thread_ts)
            if c.result.get("ok") and "reviewed" in c.params.get("text", "")]


async def admin_review(tg: FakeTelegram, args: str) -> str:
    cmd = await tg.send_user_message(f"/review {args}", chat=FakeTelegram.private_chat(ADMIN), sender=person(ADMIN))
    [answer] = await tg.wait_for(lambda: tg.replies_to(cmd["message_id"]), timeout=60)
    return answer.params["text"]


async def test_a_telegram_review_tells_every_asker_of_the_claim_once_on_both_platforms(n_app, tg, sl, bots):
    claim = "Purple elephants <i>were</i> spotted grazing on the lawn of the Ohio state capitol last night"
    # 1. a private chat; 2. a forum topic, /check as a reply to a reworded-only-in-case/punctuation copy;
    # 3. a Slack channel mention (typed markup arrives escaped); 4. someone asking about something else.
    private = await tg.send_user_message(claim, chat=FakeTelegram.private_chat(5001), sender=person(5001))
    forum = FakeTelegram.group_chat(-1007777, forum=True)
    original = tg.make_message("PURPLE elephants <i>were</i> spotted grazing on the lawn of the Ohio State "
                               "Capitol last night!!", chat=forum, sender=person(5002), thread_id=77)
    await tg.send_user_message("/check", chat=forum, sender=person(5003), reply_to=original, thread_id=77)
    ev = mention(f"<@{BOT_USER_ID}> Purple elephants &lt;i&gt;were&lt;/i&gt; spotted grazing on the lawn of the "
                 "Ohio state capitol last night", channel=CHANNEL)
    assert (await post(bots[1], event_body(ev)))[0] == 200
    other = await tg.send_user_message("Orange giraffes were seen skating on the frozen Lake Geneva yesterday",
                                       chat=FakeTelegram.private_chat(5004), sender=person(5004))

    card = await tg_card(tg, private)
    forum_card = await tg_card(tg, original)
    slack_check = SLACK_CHECK_ID.search(await slack_card(sl, CHANNEL, ev["ts"]))[1]
    await tg_card(tg, other)
    check_id = TG_CHECK_ID.search(card)[1]
    assert len({check_id, TG_CHECK_ID.search(forum_card)[1], slack_check}) == 3  # three separate checks

    url = "https://checks.example/purple?a=1&b=2"
    answer = await admin_review(tg, f"{check_id} Pants on Fire {url}")
    assert "Recorded “False”" in answer and "Told 3 askers" in answer

    [dm_notice] = tg_notices(tg, private)
    text = dm_notice.params["text"]
    assert dm_notice.params["parse_mode"] == "HTML"
    assert "False" in text and "Pants on Fire" in text and f"<code>{check_id}</code>" in text
    assert '<a href="https://checks.example/purple?a=1&amp;b=2">' in text
    assert "&lt;i&gt;were&lt;/i&gt;" in text and "<i>were" not in text  # the claim is escaped
    [topic_notice] = tg_notices(tg, original)
    assert topic_notice.params["message_thread_id"] == 77
    assert topic_notice.params["reply_parameters"]["message_id"] == original["message_id"]
    [slack_notice] = slack_notices(sl, CHANNEL, ev["ts"])
    blocks = json.dumps(slack_notice.params["blocks"], ensure_ascii=False)
    assert slack_notice.params["text"].startswith("<@U0ALICE> ")
    assert "<https://checks.example/purple?a=1&amp;b=2|" in blocks and check_id in blocks
    assert "&lt;i&gt;were&lt;/i&gt;" in blocks and "<i>" not in blocks
    assert not tg_notices(tg, other)

    # Asked again (a second review of the same claim): nobody is told twice.
    again = await admin_review(tg, f"{check_id} False {url}")
    assert "Recorded" in again and "Told" not in again
    assert len(tg_notices(tg, private)) == len(tg_notices(tg, original)) == 1
    assert len(slack_notices(sl, CHANNEL, ev["ts"])) == 1
    notified = await ReviewNotices(n_app.db, {}).notified()
    assert sorted((p, c) for p, c, _, _ in notified if c in (str(5001), str(-1007777), CHANNEL)) == [
        ("slack", CHANNEL), ("telegram", "-1007777"), ("telegram", "5001")]


def command_form(command: str, text: str, user: str, response_url: str, channel: str = CHANNEL) -> str:
    return urlencode({"token": "legacy", "team_id": TEAM_ID, "channel_id": channel, "channel_name": "news",
                      "user_id": user, "user_name": user.lower(), "command": command, "text": text,
                      "response_url": response_url, "trigger_id": f"{new_ts()}.trig", "api_app_id": "A0TIPLINE"})


async def test_slack_review_command_is_for_admins_and_notifies_askers(n_app, tg, sl, bots):
    _, sb = bots
    claim = "Blue penguins were spotted surfing on the Thames next to Tower Bridge this morning"
    asker = await tg.send_user_message(claim, chat=FakeTelegram.private_chat(6001), sender=person(6001))
    check_id = TG_CHECK_ID.search(await tg_card(tg, asker))[1]
    ev = mention(f"<@{BOT_USER_ID}> {claim}", channel="C0GONE")
    await post(sb, event_body(ev))
    await slack_card(sl, "C0GONE", ev["ts"])
    sl.not_in_channel.add("C0GONE")  # a Slack asker whose channel the bot has left since

    # A non-admin is refused in the ack; nothing is recorded or sent.
    status, body = await post(sb, command_form("/review", f"{check_id} False https://x.example/a", "U0ALICE",
                                               sl.response_url("alice")),
                              content_type="application/x-www-form-urlencoded")
    assert status == 200 and json.loads(body)["text"] == "Only admins can use the review queue."
    assert not tg_notices(tg, asker)

    # The admin's listing comes in the ack; a verdict is acked at once, the outcome follows privately.
    status, body = await post(sb, command_form("/review", "", SLACK_ADMIN, sl.response_url("list")),
                              content_type="application/x-www-form-urlencoded")
    assert json.loads(body)["response_type"] == "ephemeral"
    # Slack auto-links a URL in a slash command's text when "escape links" is on: <url|label>.
    status, body = await post(sb, command_form(
        "/review", f"{check_id} Misleading <https://checks.example/penguins|checks.example/penguins>",
        SLACK_ADMIN, sl.response_url("verdict")), content_type="application/x-www-form-urlencoded")
    assert status == 200 and json.loads(body) == {"text": "⏳ Recording the verdict…", "response_type": "ephemeral"}
    [outcome] = await sl.wait_for(lambda: sl.responses.get("verdict"), timeout=60)
    assert outcome["response_type"] == "ephemeral"
    assert "Recorded “Misleading”" in outcome["text"] and "Told 1 asker " in outcome["text"]
    [notice] = tg_notices(tg, asker)
    assert '<a href="https://checks.example/penguins">' in notice.params["text"]
    refused = [c for c in sl.posts_in_thread("C0GONE", ev["ts"]) if c.result.get("error") == "not_in_channel"]
    assert len(refused) == 1 and not slack_notices(sl, "C0GONE", ev["ts"])  # refused: not recorded as told

    # Back in the channel: the next review reaches that asker, and only that one.
    sl.not_in_channel.discard("C0GONE")
    await post(sb, command_form("/review", f"{check_id} Misleading https://checks.example/penguins", SLACK_ADMIN,
                                sl.response_url("again")), content_type="application/x-www-form-urlencoded")
    [outcome] = await sl.wait_for(lambda: sl.responses.get("again"), timeout=60)
    assert "Told 1 asker " in outcome["text"]
    [slack_notice] = slack_notices(sl, "C0GONE", ev["ts"])
    assert "Misleading" in slack_notice.params["text"]
    assert len(tg_notices(tg, asker)) == 1
