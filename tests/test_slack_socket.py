"""Slack Socket Mode end to end: the real bolt app connected over a real WebSocket to a fake Slack,
events and slash commands arriving as envelopes, acknowledged, answered in the thread."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.slack import SlackBot, SlackConfig
from adapters.slack_socket import SlackSocketMode
from bot.app import build_app
from tests.chat_support import queued_chat
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_socket import FakeSlackSocket
from tests.conftest import SeededDataDir, isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHANNEL = "C0SOCKET"
USER = "U0BOB"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def socket_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("socket") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def fake():
    server = await FakeSlackSocket().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def socket_bot(fake: FakeSlackSocket, socket_app):
    # No signing secret is involved in Socket Mode: Slack authenticates the WebSocket instead.
    config = SlackConfig(bot_token=fake.token, signing_secret="unused-in-socket-mode", api_url=fake.base_url,
                         port=0)
    bot = SlackBot(config, await queued_chat(socket_app.engine, add_factchecks=socket_app.kb.add))
    socket = SlackSocketMode(bot, fake.app_token, ping_interval=30)
    await socket.start()
    await fake.wait_for(lambda: fake.connected)
    yield bot
    await socket.stop()
    await bot.chat.aclose()


def event_payload(event: dict) -> dict:
    return {"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0TIPLINE", "type": "event_callback",
            "event_id": f"Ev{time.time_ns()}", "event_time": int(time.time()), "event": event,
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]}


async def test_a_mention_over_the_socket_is_acked_and_answered_in_thread(fake, socket_bot):
    ts = f"{int(time.time())}.000101"
    env = await fake.push("events_api", event_payload(
        {"type": "app_mention", "user": USER, "text": f"<@{BOT_USER_ID}> Vaccines cause autism in children",
         "ts": ts, "channel": CHANNEL, "team": TEAM_ID}))
    await fake.wait_for(lambda: fake.ack_of(env))

    def verdict():
        for sent in fake.posts_in_thread(CHANNEL, ts):
            for upd in fake.updates_of(CHANNEL, sent.result.get("ts", "")):
                if upd.params.get("blocks"):
                    return upd
        return None
    upd = await fake.wait_for(verdict)
    assert "False" in json.dumps(upd.params["blocks"], ensure_ascii=False)
    assert fake.opened == 1


async def test_a_slash_command_over_the_socket_is_acked_with_a_payload(fake, socket_bot):
    env = await fake.push("slash_commands", {
        "token": "legacy", "team_id": TEAM_ID, "channel_id": CHANNEL, "user_id": USER, "command": "/check",
        "text": "The moon landings were faked in a studio", "trigger_id": "13345224609.738474920.8088930838d88f",
        "response_url": f"http://127.0.0.1:{fake.port}/response"}, accepts_response_payload=True)
    ack = await fake.wait_for(lambda: fake.ack_of(env))
    assert "Checking" in json.dumps(ack.get("payload", {}), ensure_ascii=False)

    def card():
        return next((c for c in fake.called("chat.postMessage")
                     if c.params.get("channel") == CHANNEL and "moon" in json.dumps(c.params.get("blocks", ""))), None)
    posted = await fake.wait_for(card)
    assert "False" in json.dumps(posted.params["blocks"], ensure_ascii=False)


async def test_a_wrong_app_token_is_refused_at_construction(socket_bot):
    with pytest.raises(ValueError, match="xapp-"):
        SlackSocketMode(socket_bot, "xoxb-not-an-app-token")
