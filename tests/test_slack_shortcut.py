"""Slack: the "Check this message" message shortcut, and answering privately where the app is not a member.

Real bolt AsyncApp behind a real aiohttp server, real engine, the fake Slack Web API (which can
refuse a channel with `not_in_channel` and serves response URLs). Requests are signed as Slack
signs them; a shortcut arrives as Slack sends interactivity: form-encoded `payload=<json>`.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.slack import SHORTCUT_CHECK, SlackBot, SlackConfig
from bot.chat_app import ChatApp
from bot.app import build_app
from bot.queue import JobQueue
from bot.check_service import CHECKING, CheckService
from schema.models import Verdict
from storage.jobs import JobStore
from tests.chat_support import queued_chat
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.test_slack import SECRET, new_ts, post
from tests.conftest import SeededDataDir, isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHANNEL = "C0RUMOURS"
USER = "U0BOB"
CHECK_ID = re.compile(r"Check id: `([0-9a-f]+)`")
FORM = "application/x-www-form-urlencoded"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def s_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("shortcut") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def fake():
    server = await FakeSlack().start()
    yield server
    await server.stop()


def config(fake: FakeSlack) -> SlackConfig:
    return SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0)


@pytest_asyncio.fixture(loop_scope="module")
async def bot(fake: FakeSlack, s_app):
    sb = SlackBot(config(fake), await queued_chat(s_app.engine, add_factchecks=s_app.kb.add))
    await sb.start()
    yield sb
    await sb.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def durable(fake: FakeSlack, s_app):
    """The bot as `tipline run` runs it: every check a job in the durable queue."""
    queue = JobQueue(JobStore(s_app.db), CheckService(s_app.engine, progress_interval=0.0), workers=2)
    sb = SlackBot(config(fake), ChatApp(queue, add_factchecks=s_app.kb.add))
    await sb.start()
    await queue.start()
    yield sb, queue
    await queue.stop()
    await sb.stop()


def shortcut(text: str, *, channel: str = CHANNEL, thread_ts: str | None = None, response_url: str = "",
             trigger_id: str | None = None) -> tuple[str, dict[str, Any]]:
    """(form body, payload) of a message shortcut on a message by someone else."""
    message: dict[str, Any] = {"type": "message", "user": "U0CAROL", "text": text, "ts": new_ts(), "team": TEAM_ID}
    if thread_ts:
        message["thread_ts"] = thread_ts
    payload = {"type": "message_action", "token": "legacy", "action_ts": new_ts(), "callback_id": SHORTCUT_CHECK,
               "trigger_id": trigger_id or f"{new_ts()}.shortcut", "response_url": response_url,
               "team": {"id": TEAM_ID, "domain": "tipline-test"},
               "channel": {"id": channel, "name": "rumours"},
               "user": {"id": USER, "username": "bob", "team_id": TEAM_ID},
               "message_ts": message["ts"], "message": message}
    return urlencode({"payload": json.dumps(payload)}), payload


async def card_in_thread(fake: FakeSlack, channel: str, thread_ts: str) -> tuple[Any, Any]:
    def find():
        for sent in fake.posts_in_thread(channel, thread_ts):
            for upd in fake.updates_of(channel, sent.result.get("ts", "")):
                if upd.params.get("blocks"):
                    return sent, upd
        return None
    return await fake.wait_for(find, timeout=60)


def blocks_text(params: dict[str, Any]) -> str:
    return json.dumps(params.get("blocks", []), ensure_ascii=False)


async def test_shortcut_checks_the_message_and_answers_in_its_thread(fake, bot, s_app):
    root = new_ts()
    body, payload = shortcut("The 5G rollout caused the coronavirus outbreak &lt;!channel&gt;", thread_ts=root)
    status, text = await post(bot, body, content_type=FORM)
    assert status == 200 and text == ""  # acked with an empty body
    sent, upd = await card_in_thread(fake, CHANNEL, root)
    assert sent.params["text"] == CHECKING and sent.params["thread_ts"] == root != payload["message"]["ts"]
    blocks = blocks_text(upd.params)
    assert "False" in blocks and f"<@{USER}>" in blocks
    assert "<!channel>" not in blocks + upd.params["text"] and "&lt;!channel&gt;" in blocks
    stored = await s_app.db.get_check(CHECK_ID.search(blocks)[1])
    assert stored.verdict == Verdict.REFUTED
    assert stored.text == "The 5G rollout caused the coronavirus outbreak <!channel>"


async def test_shortcut_on_a_top_level_message_threads_under_it(fake, bot):
    body, payload = shortcut("Drinking bleach cures COVID-19")
    await post(bot, body, content_type=FORM)
    sent, _ = await card_in_thread(fake, CHANNEL, payload["message"]["ts"])
    assert sent.params["channel"] == CHANNEL


async def test_shortcut_on_a_message_without_text_says_so_privately(fake, bot):
    body, _ = shortcut(f"<@{BOT_USER_ID}>  ", response_url=fake.response_url("empty"))
    status, _ = await post(bot, body, content_type=FORM)
    assert status == 200
    [answer] = await fake.wait_for(lambda: fake.responses.get("empty"))
    assert answer["response_type"] == "ephemeral" and "no text" in answer["text"]
    assert not fake.called("chat.postMessage")


async def test_durable_shortcut_is_one_job_even_when_slack_delivers_it_twice(fake, durable, s_app):
    sb, queue = durable
    before = (await queue.store.counts()).get("done", 0)  # the other tests' checks, through the same database
    body, payload = shortcut("Vaccines cause autism in children", trigger_id="111.222.shortcut-once")
    assert (await post(sb, body, content_type=FORM))[0] == 200
    assert (await post(sb, body, content_type=FORM))[0] == 200  # Slack's retry of the same interaction
    job = await queue.store.get("slack:shortcut:111.222.shortcut-once")
    assert job is not None and job.payload["where"]["thread_ts"] == payload["message"]["ts"]
    sent, upd = await card_in_thread(fake, CHANNEL, payload["message"]["ts"])
    for _ in range(200):  # until the queue has nothing left (a doubled job would have run by then)
        if await queue.idle():
            break
        await asyncio.sleep(0.05)
    done = await queue.store.get_id(job.id)
    assert done.status == "done" and done.check_id and done.check_id in upd.params["text"]
    assert await queue.store.counts() == {"done": before + 1}
    assert len(fake.posts_in_thread(CHANNEL, payload["message"]["ts"])) == 1
    assert "False" in blocks_text(upd.params)


def check_command(text: str, response_url: str, channel: str) -> str:
    return urlencode({"token": "legacy", "team_id": TEAM_ID, "channel_id": channel, "channel_name": "elsewhere",
                      "user_id": USER, "user_name": "bob", "command": "/check", "text": text,
                      "response_url": response_url, "trigger_id": f"{new_ts()}.cmd", "api_app_id": "A0TIPLINE"})


async def test_check_where_the_app_is_not_a_member_answers_privately(fake, s_app):
    mode = "durable"
    queue = JobQueue(JobStore(s_app.db), CheckService(s_app.engine, progress_interval=0.0), workers=1)
    sb = SlackBot(config(fake), ChatApp(queue, add_factchecks=s_app.kb.add))
    await sb.start()
    await queue.start()
    try:
        fake.not_in_channel.add("C0ELSEWHERE")
        status, body = await post(sb, check_command("The 5G rollout caused the coronavirus outbreak",
                                                    fake.response_url(mode), "C0ELSEWHERE"), content_type=FORM)
        assert status == 200 and json.loads(body)["response_type"] == "ephemeral"
        [answer] = await fake.wait_for(lambda: fake.responses.get(mode), timeout=60)
    finally:
        await queue.stop()
        await sb.stop()
    assert answer["response_type"] == "ephemeral"
    blocks = blocks_text(answer)
    assert "False" in blocks and f"<@{USER}>" in blocks and CHECK_ID.search(blocks)
    assert CHECK_ID.search(blocks)[1] in answer["text"]
    [refused] = fake.called("chat.postMessage")  # tried once, refused, then answered privately
    assert refused.result == {"ok": False, "error": "not_in_channel"}


async def test_the_readme_documents_the_shortcut_callback_id():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"`{SHORTCUT_CHECK}`" in readme and "Check this message" in readme
