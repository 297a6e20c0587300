"""A resumed Slack job finds the reply it sent before a crash: its first message carries the
job in Slack message metadata, and after a restart with an intent but no message id in the journal, the job reads
the thread (`conversations.replies`, `include_all_metadata`) and edits that message instead of posting a second.

The crash is made deterministic with our own parts: the first process's worker claims the job, journals the
intent and posts its "Checking…" through the real Slack responder, and dies before the id is journaled (nothing
more runs). The second process is a new JobStore on the same database and journal, and a started queue.
Real SQLite, Qdrant Edge, engine and slack-bolt app, against the fake Slack Web API on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from adapters.slack import REPLY_EVENT, SlackBot, SlackConfig, SlackResponderFactory
from bot.app import build_app
from bot.check_service import CHECKING, CheckService
from bot.chat_app import ChatApp
from bot.queue import JobQueue
from storage.jobs import JobStore
from storage.reply_journal import ReplyJournal
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.slack_api import FakeSlack
from tests.test_slack import SECRET, event_body, mention, post

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIM = "The 5G rollout caused the coronavirus outbreak"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("find-reply") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


async def _crash_after_the_first_post(app, fake: FakeSlack, journal_path: Path, channel: str) -> tuple[str, int]:
    """The first process: the mention is queued, a worker claims it, journals the intent, posts "Checking…"
    (applied by Slack) and is killed before the id reaches the journal. Returns (thread ts, job id)."""
    store = JobStore(app.db, ReplyJournal(journal_path))
    queue = JobQueue(store, CheckService(app.engine, progress_interval=0.0), workers=1)
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0),
                   ChatApp(queue, add_factchecks=app.kb.add))
    await bot.start()
    try:
        ev = mention(f"<@U0TIPBOT> {CLAIM}", channel=channel)
        status, _ = await post(bot, event_body(ev))
        assert status == 200
        job = await store.claim(["slack"])
        assert job is not None and job.reply_ref is None
        store.note_reply_intent(job.id)
        responder = SlackResponderFactory(bot.app.client).build({**job.payload["where"], "job": job.id}, None)
        await responder.progress(CHECKING)
        assert responder.ts is not None  # Slack applied it; the id dies with the process
        return ev["ts"], job.id
    finally:
        await bot.stop()


async def _restart(app, fake: FakeSlack, journal_path: Path):
    store = JobStore(app.db, ReplyJournal(journal_path))
    queue = JobQueue(store, CheckService(app.engine, progress_interval=0.0), workers=1)
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0),
                   ChatApp(queue, add_factchecks=app.kb.add))
    await bot.start()
    await queue.start()
    return store, queue, bot


async def test_the_resumed_job_edits_the_reply_it_sent_before_the_crash(app, tmp_path: Path) -> None:
    fake = await FakeSlack().start()
    journal = tmp_path / "reply-refs.journal"
    try:
        thread, job_id = await _crash_after_the_first_post(app, fake, journal, "C0FIND")
        (placeholder,) = fake.posts_in_thread("C0FIND", thread)
        assert placeholder.params["metadata"] == {"event_type": REPLY_EVENT, "event_payload": {"job": str(job_id)}}
        store, queue, bot = await _restart(app, fake, journal)
        try:
            assert store.uncertain_jobs == {job_id}
            ts = placeholder.result["ts"]
            await fake.wait_for(lambda: [u for u in fake.updates_of("C0FIND", ts) if u.params.get("blocks")],
                                timeout=60)
            assert len(fake.posts_in_thread("C0FIND", thread)) == 1  # no second message: the first became the card
            (read,) = fake.called("conversations.replies")
            assert read.params["ts"] == thread and read.result["ok"]
            assert (await store.get_id(job_id)).reply_ref == ts
        finally:
            await queue.stop()
            await bot.stop()
    finally:
        await fake.stop()


async def test_without_the_history_scope_the_job_answers_anew(app, tmp_path: Path) -> None:
    """An app that may not read the conversation: Slack answers `missing_scope`, the job posts its card as a
    new message (the placeholder stays behind, as on Telegram) and nothing fails."""
    fake = await FakeSlack(scopes={"reactions:write"}).start()
    journal = tmp_path / "reply-refs.journal"
    try:
        thread, _ = await _crash_after_the_first_post(app, fake, journal, "C0NOREAD")
        store, queue, bot = await _restart(app, fake, journal)
        try:
            await fake.wait_for(lambda: [u for u in fake.called("chat.update") if u.params.get("blocks")], timeout=60)
            (read,) = fake.called("conversations.replies")
            assert read.result == {"ok": False, "error": "missing_scope", "needed": "channels:history",
                                   "provided": "reactions:write"}
            first, second = fake.posts_in_thread("C0NOREAD", thread)  # a new "Checking…", edited into the card
            (card,) = [u for u in fake.called("chat.update") if u.params.get("blocks")]
            assert card.params["ts"] == second.result["ts"] != first.result["ts"]
        finally:
            await queue.stop()
            await bot.stop()
    finally:
        await fake.stop()


async def test_fake_reads_threads_as_slack_does() -> None:
    """The fake's conversations.replies: root first, oldest first, pages by cursor, metadata only on request."""
    fake = await FakeSlack().start()
    try:
        from slack_sdk.web.async_client import AsyncWebClient

        client = AsyncWebClient(token=fake.token, base_url=fake.base_url)
        root = (await client.chat_postMessage(channel="C1", text="root"))["ts"]
        meta = {"event_type": REPLY_EVENT, "event_payload": {"job": "7"}}
        for i in range(3):
            await client.chat_postMessage(channel="C1", text=f"r{i}", thread_ts=root, metadata=meta)
        first = await client.conversations_replies(channel="C1", ts=root, limit=2)
        assert [m["text"] for m in first["messages"]] == ["root", "r0"] and "metadata" not in first["messages"][1]
        cursor = first["response_metadata"]["next_cursor"]
        rest = await client.conversations_replies(channel="C1", ts=root, limit=2, cursor=cursor,
                                                  include_all_metadata=True)
        assert [m["text"] for m in rest["messages"]] == ["r1", "r2"] and rest["messages"][0]["metadata"] == meta
        assert not rest["has_more"]
    finally:
        await fake.stop()
