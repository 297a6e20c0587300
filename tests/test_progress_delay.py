"""The progress message held back (bot/progress_delay.py, `TIPLINE_PROGRESS_AFTER_S`).

End to end through the durable queue, the real adapters and the real engine against the fake Bot API and the
fake Slack Web API: a check done before the delay is answered with one message (the card) and only
"typing…" / an :eyes: reaction before it, nothing a kill -9 could orphan; a check still running after the
delay (its screenshot's download held by the fake: a slow provider) gets its "🔎 Checking…" then, and the
card is an edit of it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from adapters.slack import WORKING_REACTION, SlackBot, SlackConfig
from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.check_service import CHECKING, CheckService
from bot.chat_app import ChatApp
from bot.queue import BUSY_TEXT, JobQueue
from evals.bench_ocr import VARIANTS, render
from storage.jobs import JobStore
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.test_slack import SECRET, event_body, mention, post

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIM = "The 5G rollout caused the coronavirus outbreak"
TG_CARD = re.compile(r"Check id: <code>[0-9a-f]+</code>")


class HeldDownloads(FakeTelegram):
    """The fake Bot API, but a file download waits for `gate`: a check reading a screenshot runs as long
    as the test wants, without touching the bot's code."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.gate = asyncio.Event()

    async def _download(self, request: web.Request) -> web.StreamResponse:
        await self.gate.wait()
        return await super()._download(request)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("progress-delay") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


def asker(user: int) -> dict:
    """A private chat of its own per test: a fresh fake's update and message ids start over, and the
    queue's idempotency key (update, chat, message) must not find the job of an earlier test."""
    return {"chat": FakeTelegram.private_chat(user), "sender": {"id": user, "is_bot": False, "first_name": "A"}}


@asynccontextmanager
async def telegram(fake: FakeTelegram, app, progress_after: float, *, queue_max: int = 200,
                   start: bool = True) -> AsyncIterator[JobQueue]:
    """The fake Bot API started, a bot and its queue on it; all three stopped on the way out."""
    await fake.start()
    queue = JobQueue(JobStore(app.db), CheckService(app.engine, progress_interval=0.0, images=app.images), workers=1,
                     progress_after=progress_after, queue_max=queue_max)
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0),
                      ChatApp(queue, add_factchecks=app.kb.add))
    try:
        await bot.start()
        if start:
            await queue.start()
        yield queue
    finally:
        await queue.stop()
        await bot.stop()
        await fake.stop()


@asynccontextmanager
async def slack(fake: FakeSlack, app) -> AsyncIterator[SlackBot]:
    """The fake Slack Web API started, a bot (held-back progress: 30 s) and its running queue on it."""
    await fake.start()
    queue = JobQueue(JobStore(app.db), CheckService(app.engine, progress_interval=0.0), workers=1,
                     progress_after=30.0)
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0),
                   ChatApp(queue, add_factchecks=app.kb.add))
    try:
        await bot.start()
        await queue.start()
        yield bot
    finally:
        await queue.stop()
        await bot.stop()
        await fake.stop()


async def test_telegram_fast_check_is_one_message_after_typing(app):
    fake = FakeTelegram()
    # 30 s: far more than an offline check takes here (~0.3 s), so this check is "fast" for certain
    async with telegram(fake, app, progress_after=30.0) as queue:
        msg = await fake.send_user_message(CLAIM, **asker(31_001))
        sent = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60)
        await asyncio.sleep(0.3)  # a placeholder or a second message would show up now
        replies = fake.replies_to(msg["message_id"])
        assert len(replies) == 1 and TG_CARD.search(sent[0].params["text"])  # the card, straight away
        assert not sent[0].params["text"].startswith(CHECKING)
        assert not fake.edits_of(sent[0].result["message_id"])
        chat_id = msg["chat"]["id"]
        typing = [c for c in fake.calls if c.method == "sendChatAction" and str(c.params["chat_id"]) == str(chat_id)]
        assert typing and all(c.params["action"] == "typing" and c.result is True for c in typing)
        assert fake.calls.index(typing[0]) < fake.calls.index(replies[0])  # "typing…" came first
        assert await queue.idle()


async def test_telegram_slow_check_gets_the_placeholder_after_the_delay_then_the_card_in_it(app):
    fake = HeldDownloads()
    async with telegram(fake, app, progress_after=0.2):
        try:
            msg = await fake.send_user_message(photo=render(CLAIM, VARIANTS[0]), **asker(31_002))
            # The download is held, so the check cannot end: after 0.2 s the placeholder goes out.
            placeholder = (await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60))[0]
            assert placeholder.params["text"] == f"{CHECKING} reading the text in the image"
            assert not fake.downloads  # sent while the check was still waiting on its "provider"
            fake.gate.set()
            mid = placeholder.result["message_id"]
            card = await fake.wait_for(lambda: [e for e in fake.edits_of(mid) if TG_CARD.search(e.params["text"])],
                                       timeout=60)
            assert f"Text read from the image: “{CLAIM}”" in card[0].params["text"]
            await asyncio.sleep(0.3)
            assert len(fake.replies_to(msg["message_id"])) == 1  # the placeholder became the card: one message
            assert fake.called("sendChatAction")
        finally:
            fake.gate.set()


async def test_telegram_fast_refusal_is_one_sentence_without_a_placeholder(app):
    """The `say` path: a screenshot with no text, read within the delay, gets its one sentence as the one
    message (before, a "reading the text in the image" placeholder was edited into it)."""
    fake = FakeTelegram()
    async with telegram(fake, app, progress_after=30.0):
        msg = await fake.send_user_message(document=(render(" ", VARIANTS[0]), "image/png", "blank.png"),
                                           **asker(31_006))
        sent = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60)
        await asyncio.sleep(0.3)
        assert len(fake.replies_to(msg["message_id"])) == 1
        assert sent[0].params["text"].startswith("I found no text in that image")
        assert not fake.edits_of(sent[0].result["message_id"])


async def test_telegram_delay_zero_sends_the_placeholder_at_once(app):
    """`TIPLINE_PROGRESS_AFTER_S=0`: the old behaviour, a placeholder first and the card edited into it."""
    fake = FakeTelegram()
    async with telegram(fake, app, progress_after=0.0):
        msg = await fake.send_user_message("Drinking bleach cures COVID-19", **asker(31_003))
        first = (await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60))[0]
        assert first.params["text"].startswith(CHECKING)
        await fake.wait_for(lambda: [e for e in fake.edits_of(first.result["message_id"])
                                     if "Check id:" in e.params["text"]], timeout=60)
        assert len(fake.replies_to(msg["message_id"])) == 1


async def test_telegram_busy_notice_waits_the_delay_too_then_becomes_the_card(app):
    """queue_max 0: every request is "busy". With no worker running yet the job still waits after the
    delay, so "#N in line" goes out then; once a worker takes the job, the card is an edit of it."""
    fake = FakeTelegram()
    async with telegram(fake, app, progress_after=0.2, queue_max=0, start=False) as queue:
        msg = await fake.send_user_message("Drinking bleach cures COVID-19", **asker(31_004))
        notice = (await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60))[0]
        assert notice.params["text"] == BUSY_TEXT.format(n=1)
        await queue.start()
        mid = notice.result["message_id"]
        await fake.wait_for(lambda: [e for e in fake.edits_of(mid) if TG_CARD.search(e.params["text"])], timeout=60)
        assert len(fake.replies_to(msg["message_id"])) == 1


async def test_telegram_busy_job_taken_within_the_delay_gets_no_notice(app):
    fake = FakeTelegram()
    async with telegram(fake, app, progress_after=30.0, queue_max=0) as queue:
        msg = await fake.send_user_message("Drinking bleach cures COVID-19", **asker(31_005))
        sent = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]), timeout=60)
        assert TG_CARD.search(sent[0].params["text"])  # the card first: no "#N in line" before it
        await queue.stop()  # the notice still waiting out its 30 s is dropped, not sent
        assert len(fake.replies_to(msg["message_id"])) == 1 and await queue.idle()


# --- Slack ----------------------------------------------------------------------------------------


async def test_slack_reaction_while_checking_then_one_card_and_the_reaction_removed(app):
    fake = FakeSlack()
    async with slack(fake, app) as bot:
        ev = mention(f"<@U0TIPBOT> {CLAIM}", channel="C0DELAY")
        status, _ = await post(bot, event_body(ev))
        assert status == 200
        await fake.wait_for(lambda: fake.called("reactions.remove"), timeout=60)
        target = {"channel": "C0DELAY", "timestamp": ev["ts"], "name": WORKING_REACTION}
        added, removed = fake.called("reactions.add"), fake.called("reactions.remove")
        assert [c.params for c in added] == [target] and added[0].result == {"ok": True}
        assert [c.params for c in removed] == [target] and removed[0].result == {"ok": True}
        posts = fake.posts_in_thread("C0DELAY", ev["ts"])
        assert len(posts) == 1 and posts[0].params.get("blocks")  # the card is the only message
        assert not posts[0].params["text"].startswith(CHECKING) and not fake.called("chat.update")
        order = [fake.calls.index(c) for c in (added[0], posts[0], removed[0])]
        assert order == sorted(order)  # eyes, then the card, then the eyes taken away
        assert fake.reactions == set()


async def test_slack_without_the_reactions_scope_still_answers_and_stops_asking(app):
    """An app installed before reactions:write was in the manifest: Slack answers `missing_scope`; the
    check is answered as usual and the bot stops calling reactions.* after the first refusal."""
    fake = FakeSlack(scopes=set())
    async with slack(fake, app) as bot:
        events = [mention(f"<@U0TIPBOT> {text}", channel="C0NOSCOPE")
                  for text in (CLAIM, "Drinking bleach cures COVID-19")]
        for ev in events:
            await post(bot, event_body(ev))
            await fake.wait_for(lambda ev=ev: [p for p in fake.posts_in_thread("C0NOSCOPE", ev["ts"])
                                               if p.params.get("blocks")], timeout=60)
        refused = fake.called("reactions.add")
        assert len(refused) == 1 and refused[0].result["error"] == "missing_scope"
        assert not fake.called("reactions.remove")
        assert all(len(fake.posts_in_thread("C0NOSCOPE", ev["ts"])) == 1 for ev in events)


async def test_slack_fake_answers_reactions_as_slack_does():
    """The wire format the presence relies on: a second add is `already_reacted`, a remove of nothing
    `no_reaction` (SlackPresence treats both as done)."""
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    fake = await FakeSlack().start()
    try:
        client = AsyncWebClient(token=fake.token, base_url=fake.base_url)
        target = {"channel": "C1", "timestamp": "1700000000.000100", "name": "eyes"}
        assert (await client.reactions_add(**target))["ok"]
        with pytest.raises(SlackApiError) as err:
            await client.reactions_add(**target)
        assert err.value.response["error"] == "already_reacted"
        assert (await client.reactions_remove(**target))["ok"]
        with pytest.raises(SlackApiError) as err:
            await client.reactions_remove(**target)
        assert err.value.response["error"] == "no_reaction"
    finally:
        await fake.stop()
