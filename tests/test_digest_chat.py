"""Digests, /trending and alerts end to end: fake Telegram Bot API and fake Slack Web API on loopback, real
PTB and bolt, the real engine's matcher, the corroborator's stories, SQLite, embedded Qdrant and the
ONNX model. Time comes from a manual clock the tests advance; the scheduler is the background task
`tipline run` starts (`DigestService.run`), woken by the clock, never by real minutes passing.
"""

from __future__ import annotations

import asyncio
from html import escape as html_escape
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.slack import ACTION_DIGEST_CHECK, SlackBot, SlackConfig
from adapters.telegram import DIGEST_CHECK, TelegramBot, TelegramConfig
from bot.app import build_app
from bot.check_service import CHECKING
from bot.chat_app import build_digests
from bot.digest_schedule import DigestService
from core.i18n import t
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.test_feedback import block_actions
from tests.fakes.slack_api import TEAM_ID
from tests.test_slack import SECRET, event_body, post
from tests.test_telegram import assert_valid_telegram_html
from tests.test_tracking_chat import channel_post, eventually, slash

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN, MEMBER = 91, 92
FIVE_G = ["BREAKING: the 5G rollout caused the coronavirus outbreak, engineers say. Share widely!",
          "5G rollout caused the coronavirus outbreak!! read before they delete it",
          "Engineers confirm the 5G rollout caused the coronavirus outbreak"]
BRIDGE = ["The city council will close the Main Street bridge for repairs next month",
          "Main Street bridge to close next month for repairs, the city council says"]
DAILY = {"id": -1004440001, "type": "channel", "title": "Daily News", "username": "dailynews"}
WIRE = {"id": -1004440002, "type": "channel", "title": "World <Wire>", "username": "worldwire"}
RUMOURS = {"id": -1004440003, "type": "supergroup", "title": "Rumours & more"}
UNTRACKED = {"id": -1004440004, "type": "supergroup", "title": "Never opted in", "username": "secretgroup"}
EDITORS = {"id": -1004440005, "type": "supergroup", "title": "Editors"}


class ManualClock:
    """The scheduler's `Clock`, advanced by the test; sleepers wake when it passes their time."""

    def __init__(self, now: float):
        self.t = now
        self._changed = asyncio.Condition()

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t: float, stop: asyncio.Event) -> None:
        async def reached() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self.t >= t)
        waits = [asyncio.ensure_future(reached()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def advance(self, seconds: float) -> None:
        async with self._changed:
            self.t += seconds
            self._changed.notify_all()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("digest") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def tg(app):
    fake = await FakeTelegram().start()
    # A minute behind the fake's message dates (whole seconds), so the first window surely holds them.
    clock = ManualClock(time.time() - 60)
    digests = build_digests(app.settings, app, clock)
    assert digests is not None
    chat = await queued_chat(app.engine, corroborator=app.corroborator,
                             digests=digests)
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    stop = asyncio.Event()
    loop = asyncio.create_task(digests.run(stop))  # what adapters/run.py starts
    yield fake, clock, digests
    stop.set()
    await loop
    await bot.stop()
    await fake.stop()


def user(uid: int) -> dict[str, Any]:
    return {"id": uid, "is_bot": False, "first_name": f"U{uid}"}


async def command(fake: FakeTelegram, chat: dict, text: str, uid: int = ADMIN) -> str:
    msg = fake.make_message(text, chat=chat, sender=user(uid))
    await fake.queue_message(msg)
    [r] = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]))
    return r.params["text"]


def posts_to(fake: FakeTelegram, chat: dict, start: str) -> list:
    return [c for c in fake.called("sendMessage") if c.params.get("chat_id") == chat["id"]
            and str(c.params.get("text", "")).startswith(start)]


async def test_telegram_digest_schedule_trending_alerts_and_opt_outs(tg, app):
    fake, clock, digests = tg
    store = app.corroborator.store
    fake.chat_admins[RUMOURS["id"]] = {ADMIN: "administrator"}
    fake.chat_admins[EDITORS["id"]] = {ADMIN: "administrator"}

    # Three chats opt in; a fourth never does. The 5G story reaches all four, the bridge story two.
    for ch in (DAILY, WIRE):
        await fake.queue_message(channel_post(fake, ch, "/track on"))
        await eventually(lambda ch=ch: store.is_tracked("telegram", ch["id"]))
    assert (await command(fake, RUMOURS, "/track on")).startswith("Tracking is on")
    posts = [(DAILY, FIVE_G[0]), (DAILY, BRIDGE[0]), (WIRE, FIVE_G[2]), (WIRE, BRIDGE[1]), (RUMOURS, FIVE_G[1]),
             (UNTRACKED, FIVE_G[1] + " (untracked)")]
    for ch, text in posts:
        msg = channel_post(fake, ch, text) if ch["type"] == "channel" else \
            fake.make_message(text, chat=ch, sender=user(MEMBER))
        await fake.queue_message(msg)
    await eventually(lambda: store.count("telegram", RUMOURS["id"]))
    await eventually(lambda: store.count("telegram", WIRE["id"]))
    await eventually(lambda: _count(store, 5))
    assert await store.count("telegram", UNTRACKED["id"]) == 0

    # Only admins: a member is refused (in the chat's language: English, nothing stored there).
    assert await command(fake, EDITORS, "/digest now", MEMBER) == t("digest.refused", "en")
    assert await command(fake, EDITORS, "/digest on weekly") == t("digest.usage", "en")
    on = await command(fake, EDITORS, "/digest on every 6 h top 3")
    assert on.startswith("Digest is on: every 6 h, top 3 stories. Next: ")

    # Nothing is posted before the period is over; 6 h later the background task posts it.
    sent_before = len(fake.called("sendMessage"))
    await clock.advance(3 * 3600)
    await eventually(lambda: _ticked(digests, 2))
    assert not posts_to(fake, EDITORS, "<b>📰")
    await clock.advance(3 * 3600 + 1)
    [dg] = await fake.wait_for(lambda: posts_to(fake, EDITORS, "<b>📰"))
    assert len(fake.called("sendMessage")) > sent_before
    html = dg.params["text"]
    assert_valid_telegram_html(html)
    assert html.startswith(f"<b>{t('digest.title', 'en', hours=6)}</b>")
    first, second = html.split("<b>1.</b>")[1].split("<b>2.</b>")
    assert "5G" in first and "bridge" in second.lower()  # three chats outrank two
    assert "@dailynews" in first and "@worldwire" in first and "Rumours &amp; more" in first
    assert "secretgroup" not in html and "Never opted in" not in html and "untracked" not in html
    assert "3 chats (2 channels), 3 messages" in first
    assert "❌ <b>False</b>" in first and "<a href=" in first  # the seed fact-check, auto tier
    assert "Not checked yet" in second
    [[button]] = dg.params["reply_markup"]["inline_keyboard"]
    assert button["text"] == "Check #2" and button["callback_data"].startswith(DIGEST_CHECK + "telegram:")
    assert "reply_parameters" not in dg.params  # a scheduled digest is a post, not a reply

    # The "Check #2" button checks the bridge story; the card answers the digest.
    await fake.press_button(dg.result, button["callback_data"], sender=user(MEMBER))

    def card():
        for sent in fake.replies_to(dg.result["message_id"]):
            for e in [sent, *fake.edits_of(sent.result["message_id"])]:
                if "Check id" in str(e.params.get("text", "")) and not e.params["text"].startswith(CHECKING):
                    return e
    assert "bridge" in (await fake.wait_for(card)).params["text"].lower()

    # /trending answers at once, as a reply, with the same items.
    trending = fake.make_message("/trending 24", chat=EDITORS, sender=user(ADMIN))
    await fake.queue_message(trending)
    [tr] = await fake.wait_for(lambda: fake.replies_to(trending["message_id"]))
    assert tr.params["text"].startswith(f"<b>{t('digest.title', 'en', hours=24)}</b>") and "@worldwire" in \
        tr.params["text"]
    assert await command(fake, EDITORS, "/trending 9999") == t("trending.usage", "en")

    # Alerts: not below the threshold; then once per story, across ticks and across a restart.
    assert await command(fake, EDITORS, "/alerts on 1") == t("alerts.usage", "en")
    assert (await command(fake, EDITORS, "/alerts on 4")).startswith("Alerts are on")
    assert await digests.run_alerts() == 0  # the false story is in 3 tracked chats (the 4th never opted in)
    assert (await command(fake, EDITORS, "/alerts on 3")).startswith("Alerts are on")
    await clock.advance(61)
    [alert] = await fake.wait_for(lambda: posts_to(fake, EDITORS, "<b>🚨"))
    assert t("alert.title", "en", label="False", chats=3) in alert.params["text"]
    assert "@dailynews" in alert.params["text"] and "Rumours &amp; more" in alert.params["text"]
    assert "bridge" not in alert.params["text"].lower()  # not fact-checked: no alert
    assert_valid_telegram_html(alert.params["text"])
    assert await digests.run_alerts() == 0  # the story was claimed before it was sent
    restarted = build_digests(app.settings, app, clock)
    assert restarted is not None
    restarted.posters = digests.posters
    await restarted.tick()
    assert await restarted.run_alerts() == 0
    assert len(posts_to(fake, EDITORS, "<b>🚨")) == 1

    # Languages: the schedule's `lang` words the digest and the answers.
    uk = await command(fake, EDITORS, "/digest on daily 09:30 top 2 lang uk")
    assert uk.startswith("Дайджест увімкнено: щодня о 09:30 UTC, історій: 2.")
    now = fake.make_message("/digest now", chat=EDITORS, sender=user(ADMIN))
    await fake.queue_message(now)
    [ukd] = await fake.wait_for(lambda: fake.replies_to(now["message_id"]))
    assert ukd.params["text"].startswith(f"<b>{t('digest.title', 'uk', hours=24)}</b>")
    assert "Неправда" in ukd.params["text"] and "Ще не перевірено" in ukd.params["text"]

    # Opt-outs: /track off drops a chat from the next digest at once; /forget removes it too.
    assert (await command(fake, RUMOURS, "/track off")).startswith("Tracking is off")
    text = (await _trending(fake)).params["text"]
    assert "Rumours" not in text and t("digest.count", "uk", chats=2, channels=2, messages=2) in text
    await fake.queue_message(channel_post(fake, WIRE, "/forget"))
    await eventually(lambda: _gone(store, WIRE["id"]))
    empty = await _trending(fake)
    assert "@worldwire" not in empty.params["text"] and "reply_markup" not in empty.params
    assert html_escape(t("digest.empty", "uk", hours=24)) in empty.params["text"]

    assert await command(fake, EDITORS, "/digest off") == "Дайджест вимкнено."
    assert await digests.store.schedule("telegram", EDITORS["id"]) is None


async def _ticked(digests: DigestService, n: int) -> bool:
    return digests.ticks >= n


async def _count(store, n: int) -> bool:
    return await store.count() >= n


async def _gone(store, chat_id: int) -> bool:
    return await store.count("telegram", chat_id) == 0


async def _trending(fake: FakeTelegram) -> Any:
    msg = fake.make_message("/trending", chat=EDITORS, sender=user(ADMIN))
    await fake.queue_message(msg)
    [r] = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]))
    return r


# --- Slack ---------------------------------------------------------------------------------------

SLACK_ADMIN, SLACK_MEMBER = "U0DIGESTADM", "U0DIGESTBOB"
FORM = "application/x-www-form-urlencoded"


@pytest_asyncio.fixture(loop_scope="module")
async def slack(app):
    fake = await FakeSlack().start()
    digests = build_digests(app.settings, app, ManualClock(time.time()))
    chat = await queued_chat(app.engine, admins=(SLACK_ADMIN,),
                             corroborator=app.corroborator, digests=digests)
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0), chat)
    await bot.start()
    yield fake, bot, digests
    await bot.stop()
    await fake.stop()


async def test_slack_digest_command_rights_blocks_alerts_and_check_button(slack, app):
    fake, bot, digests = slack
    assert isinstance(digests, DigestService)
    store = app.corroborator.store
    stamps: dict[str, str] = {}
    for channel, text in (("C0DGA", BRIDGE[0]), ("C0DGB", BRIDGE[1])):
        status, _ = await post(bot, slash("/track", "on", channel, SLACK_ADMIN), content_type=FORM)
        assert status == 200
        ts = stamps[channel] = f"{int(time.time()) - 600}.000{len(stamps)}00"
        await post(bot, event_body({"type": "message", "channel_type": "channel", "channel": channel,
                                    "user": SLACK_MEMBER, "text": text, "ts": ts, "team": TEAM_ID}))
        await eventually(lambda channel=channel: store.count("slack", channel))

    status, body = await post(bot, slash("/digest", "now", "C0DGEDIT", SLACK_MEMBER), content_type=FORM)
    assert status == 200 and "text" not in body  # acked at once; the answer follows
    [refused] = await fake.wait_for(lambda: [c for c in fake.called("chat.postEphemeral")
                                             if c.params.get("user") == SLACK_MEMBER])
    assert refused.params["text"] == t("digest.refused", "en")

    await post(bot, slash("/digest", "now", "C0DGEDIT", SLACK_ADMIN), content_type=FORM)
    [dg] = await fake.wait_for(lambda: [c for c in fake.called("chat.postMessage")
                                        if c.params.get("channel") == "C0DGEDIT"])
    blocks = dg.params["blocks"]
    text = json.dumps(blocks, ensure_ascii=False)
    assert "<#C0DGA>" in text and "<#C0DGB>" in text and "Not checked yet" in text
    [actions] = [b for b in blocks if b["type"] == "actions"][-1:]
    [button] = actions["elements"]
    assert button["action_id"] == ACTION_DIGEST_CHECK and button["value"].startswith(("slack:", "telegram:"))

    fake.not_in_channel.add("C0DGOUT")  # the app was never invited there: one sentence, to the admin alone
    command = slash("/trending", "6", "C0DGOUT", SLACK_ADMIN) + "&" + urlencode({"response_url": fake.response_url("out")})
    await post(bot, command, content_type=FORM)
    [failed] = await fake.wait_for(lambda: fake.responses.get("out"))
    assert failed["text"] == t("digest.failed", "en") and failed["response_type"] == "ephemeral"

    await post(bot, slash("/alerts", "on 1", "C0DGEDIT", SLACK_ADMIN), content_type=FORM)
    [usage] = await fake.wait_for(lambda: [c for c in fake.called("chat.postEphemeral")
                                           if c.params.get("text") == t("alerts.usage", "en")])
    assert usage.params["user"] == SLACK_ADMIN

    body = block_actions(ACTION_DIGEST_CHECK, button["value"], channel="C0DGEDIT", message_ts=dg.result["ts"],
                         thread_ts=dg.result["ts"], user=SLACK_MEMBER)
    status, _ = await post(bot, body, content_type=FORM)
    assert status == 200

    def card():
        for sent in fake.posts_in_thread("C0DGEDIT", dg.result["ts"]):
            for c in [sent, *fake.updates_of("C0DGEDIT", sent.result.get("ts", ""))]:
                if c.params.get("blocks") and "Check id" in json.dumps(c.params["blocks"]):
                    return c
    assert "bridge" in json.dumps((await fake.wait_for(card)).params["blocks"]).lower()

    # a button for a story forgotten meanwhile: one sentence, no check
    await post(bot, slash("/forget", "", "C0DGA", SLACK_ADMIN), content_type=FORM)
    await post(bot, slash("/forget", "", "C0DGB", SLACK_ADMIN), content_type=FORM)
    gone = block_actions(ACTION_DIGEST_CHECK, f"slack:C0DGA:{stamps['C0DGA']}", channel="C0DGEDIT", message_ts=dg.result["ts"],
                         thread_ts=dg.result["ts"], user=SLACK_MEMBER)
    await post(bot, gone, content_type=FORM)
    await fake.wait_for(lambda: [c for c in fake.called("chat.postEphemeral")
                                 if c.params.get("text") == t("digest.gone", "en")])
