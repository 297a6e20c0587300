"""`tipline run` wiring, in process: Slack in Socket Mode through the durable queue, the REST API, and
/healthz + /metrics on the one HTTP server, with every check counted in the metrics."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import time

import aiohttp
from pydantic import SecretStr

from adapters.run import run
from bot.check_service import CHECKING, CheckService
from bot.chat_app import ChatApp
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_socket import FakeSlackSocket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_run_with_slack_socket_mode_serves_checks_and_metrics(settings):
    fake = await FakeSlackSocket().start()
    port = free_port()
    s = settings.model_copy(update={
        "slack_bot_token": SecretStr(fake.token), "slack_app_token": SecretStr(fake.app_token),
        "slack_api_url": fake.base_url, "api_token": SecretStr("rest-token"), "http_port": port,
        "progress_after_s": 0.0})  # the progress post at once, then the update that makes it the card
    stop = asyncio.Event()
    task = asyncio.create_task(run(s, stop))
    try:
        await fake.wait_for(lambda: fake.connected, timeout=60)
        ts = f"{int(time.time())}.000777"
        env = await fake.push("events_api", {
            "token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0TIPLINE", "type": "event_callback",
            "event_id": "EvRUN1", "event_time": int(time.time()),
            "event": {"type": "app_mention", "user": "U0CAROL", "channel": "C0RUN", "ts": ts, "team": TEAM_ID,
                      "text": f"<@{BOT_USER_ID}> The moon landings were faked in a studio"},
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]})
        await fake.wait_for(lambda: fake.ack_of(env))

        def card():
            for sent in fake.posts_in_thread("C0RUN", ts):
                for upd in fake.updates_of("C0RUN", sent.result.get("ts", "")):
                    if upd.params.get("blocks"):
                        return upd
            return None
        upd = await fake.wait_for(card, timeout=60)
        assert "False" in json.dumps(upd.params["blocks"], ensure_ascii=False)

        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as r:
                assert r.status == 200
            async with http.post(f"{base}/v1/checks", json={"text": "Vaccines cause autism in children"},
                                 headers={"Authorization": "Bearer rest-token", "Idempotency-Key": "k1"}) as r:
                assert r.status in (200, 201), await r.text()
            for _ in range(50):
                async with http.get(f"{base}/metrics") as r:
                    assert r.status == 200
                    text = await r.text()
                counted = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                              if line.startswith("tipline_checks_total{"))
                if counted >= 2:
                    break
                await asyncio.sleep(0.2)
            assert counted >= 2, text
            assert "tipline_stage_seconds" in text and "tipline_queue_depth" in text
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await fake.stop()


def _new_objects(kind: type, before: set[int]) -> list[object]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, kind) and id(o) not in before]


async def test_run_builds_one_chat_app_and_one_check_service_for_every_adapter(settings):
    """Telegram, Slack (Socket Mode) and the REST API in one `tipline run`: one `ChatApp`, one
    `CheckService`, one queue; a Telegram message and a Slack mention are both answered through it."""
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, (CheckService, ChatApp))}
    tg = await FakeTelegram().start()
    slack = await FakeSlackSocket().start()
    s = settings.model_copy(update={
        "telegram_token": SecretStr(tg.token), "telegram_api_url": tg.base_url,
        "slack_bot_token": SecretStr(slack.token), "slack_app_token": SecretStr(slack.app_token),
        "slack_api_url": slack.base_url, "api_token": SecretStr("rest-token"), "http_port": free_port(),
        "progress_after_s": 0.0})  # placeholders at once, then the edits these wait for
    stop = asyncio.Event()
    task = asyncio.create_task(run(s, stop))
    try:
        await slack.wait_for(lambda: slack.connected, timeout=60)
        await tg.wait_for(lambda: tg.called("deleteWebhook"), timeout=60)
        msg = await tg.send_user_message("Vaccines cause autism in children")

        def tg_card():
            for sent in tg.replies_to(msg["message_id"]):
                if isinstance(sent.result, dict):
                    for e in tg.edits_of(sent.result["message_id"]):
                        if not e.params["text"].startswith(CHECKING):
                            return e
            return None
        assert "False" in (await tg.wait_for(tg_card, timeout=60)).params["text"]

        ts = f"{int(time.time())}.000888"
        await slack.push("events_api", {
            "token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0TIPLINE", "type": "event_callback",
            "event_id": "EvONE1", "event_time": int(time.time()),
            "event": {"type": "app_mention", "user": "U0CAROL", "channel": "C0ONE", "ts": ts, "team": TEAM_ID,
                      "text": f"<@{BOT_USER_ID}> The moon landings were faked in a studio"},
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]})

        def slack_card():
            for sent in slack.posts_in_thread("C0ONE", ts):
                for upd in slack.updates_of("C0ONE", sent.result.get("ts", "")):
                    if upd.params.get("blocks"):
                        return upd
            return None
        await slack.wait_for(slack_card, timeout=60)

        services = _new_objects(CheckService, before)
        chats = _new_objects(ChatApp, before)
        assert len(services) == 1 and len(chats) == 1
        assert chats[0].service is services[0] and chats[0].queue is not None
        assert chats[0].queue.service is services[0]
        assert set(chats[0].notifiers) == {"telegram", "slack"}
        # digests and alerts: both platforms post through the one service, run as a background task
        assert chats[0].digests is not None and set(chats[0].digests.posters) == {"telegram", "slack"}
        assert any(t.get_name() == "tipline-digests" and not t.done() for t in asyncio.all_tasks())
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await slack.stop()
        await tg.stop()
