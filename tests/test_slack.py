"""The Slack adapter end to end: real bolt AsyncApp behind a real aiohttp server, real engine, fake Web API.

Requests are signed exactly as Slack signs them (v0 HMAC-SHA256 over "v0:{ts}:{body}"). One app
(model + SQLite + embedded Qdrant + seed KB) is built for the module; each test gets a fresh fake
Web API and a fresh bot listening on 127.0.0.1, port 0.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
import time
from datetime import date
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
import pytest_asyncio

from adapters.slack import SlackBot, SlackConfig, link, render_blocks, slack_to_plain
from bot.app import build_app
from bot.render import Reply
from bot.check_service import CHECKING
from bot.requests import CheckRequest
from schema.models import Citation, Verdict
from tests.chat_support import queued_chat
from tests.fakes.slack_api import BOT_ID, BOT_USER_ID, TEAM_ID, Call, FakeSlack
from tests.conftest import SeededDataDir, isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0GENERAL"
DM = "D0ALICE"
USER = "U0ALICE"
CHECK_ID = re.compile(r"Check id: `([0-9a-f]+)`")
_ts = itertools.count(1)


def new_ts() -> str:
    return f"{int(time.time())}.{next(_ts):06d}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def slack_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("slack") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def fake():
    server = await FakeSlack().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def bot(fake: FakeSlack, slack_app):
    config = SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0)
    sb = SlackBot(config, await queued_chat(slack_app.engine, add_factchecks=slack_app.kb.add))
    await sb.start()
    yield sb
    await sb.stop()


def signed_headers(body: str, *, secret: str = SECRET, ts: int | None = None, content_type: str) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Signature": sig, "X-Slack-Request-Timestamp": str(ts), "Content-Type": content_type}


async def post(bot: SlackBot, body: str, content_type: str = "application/json", **sign_kw) -> tuple[int, str]:
    headers = signed_headers(body, content_type=content_type, **sign_kw)
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{bot.port}/slack/events", data=body.encode(), headers=headers) as r:
            return r.status, await r.text()


def event_body(event: dict) -> str:
    return json.dumps({"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0TIPLINE", "type": "event_callback",
                       "event_id": f"Ev{next(_ts):08d}", "event_time": int(time.time()), "event": event,
                       "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]})


def mention(text: str, *, ts: str | None = None, thread_ts: str | None = None, channel: str = CHANNEL) -> dict:
    ev = {"type": "app_mention", "user": USER, "text": text, "ts": ts or new_ts(), "channel": channel,
          "event_ts": ts, "team": TEAM_ID}
    if thread_ts:
        ev["thread_ts"] = thread_ts
    return ev


def dm(text: str, **extra) -> dict:
    ev = {"type": "message", "channel_type": "im", "channel": DM, "user": USER, "text": text, "ts": new_ts(),
          "team": TEAM_ID}
    ev.update(extra)
    return ev


def blocks_text(call: Call) -> str:
    return json.dumps(call.params.get("blocks", []), ensure_ascii=False)


async def card(fake: FakeSlack, channel: str, thread_ts: str) -> tuple[Call, Call]:
    """(the progress post in the thread, the chat.update that made it a verdict card)."""
    def find():
        for sent in fake.posts_in_thread(channel, thread_ts):
            for upd in fake.updates_of(channel, sent.result.get("ts", "")):
                if upd.params.get("blocks"):
                    return sent, upd
        return None
    return await fake.wait_for(find)


# --- events ------------------------------------------------------------------------------------


async def test_mention_gets_progress_then_block_kit_verdict_in_thread(fake, bot, slack_app):
    ev = mention(f"<@{BOT_USER_ID}> The 5G rollout caused the coronavirus outbreak")
    status, _ = await post(bot, event_body(ev))
    assert status == 200
    sent, upd = await card(fake, CHANNEL, ev["ts"])
    assert sent.params["text"] == CHECKING
    assert sent.token == fake.token
    blocks = blocks_text(upd)
    assert "False" in blocks and "❌" in blocks
    check_id = CHECK_ID.search(blocks)[1]
    assert check_id in upd.params["text"]  # the plain-text fallback carries it too
    stored = await slack_app.db.get_check(check_id)
    assert stored is not None and stored.verdict == Verdict.REFUTED
    assert stored.text == "The 5G rollout caused the coronavirus outbreak"  # the mention is not the claim
    assert "<https://" in blocks and "[1]" in blocks
    assert [b["type"] for b in upd.params["blocks"]][0] == "section"
    assert fake.called("auth.test")


async def test_threaded_mention_answers_in_the_thread_root(fake, bot):
    root = new_ts()
    ev = mention(f"<@{BOT_USER_ID}> Drinking bleach cures COVID-19", thread_ts=root)
    await post(bot, event_body(ev))
    sent, upd = await card(fake, CHANNEL, root)
    assert sent.params["thread_ts"] == root != ev["ts"]
    assert CHECK_ID.search(blocks_text(upd))


async def test_empty_threaded_mention_explains_usage(fake, bot):
    root = new_ts()
    await post(bot, event_body(mention(f"<@{BOT_USER_ID}>  ", thread_ts=root)))
    [sent] = await fake.wait_for(lambda: fake.posts_in_thread(CHANNEL, root))
    assert "mention me" in sent.params["text"] and "/check" in sent.params["text"]
    assert not fake.called("chat.update")


async def test_direct_message_is_checked(fake, bot):
    ev = dm("The 5G rollout caused the coronavirus outbreak")
    await post(bot, event_body(ev))
    sent, upd = await card(fake, DM, ev["ts"])
    assert "False" in blocks_text(upd)


async def test_own_and_other_bots_messages_and_edits_are_ignored(fake, bot):
    ignored = [
        dm("The 5G rollout caused the coronavirus outbreak", user=BOT_USER_ID, bot_id=BOT_ID),  # ourselves
        dm("The 5G rollout caused the coronavirus outbreak", subtype="bot_message", bot_id="B0OTHER"),
        dm("The 5G rollout caused the coronavirus outbreak", bot_id="B0OTHER", user="U0OTHERBOT"),
        dm("", subtype="message_changed", message={"text": "The 5G rollout caused the coronavirus outbreak"}),
        dm("<@U0ALICE> has joined the channel", subtype="channel_join"),
        {**dm("The 5G rollout caused the coronavirus outbreak"), "channel_type": "channel", "channel": CHANNEL},
    ]
    for ev in ignored:
        status, _ = await post(bot, event_body(ev))
        assert status == 200
    ok = dm("Drinking bleach cures COVID-19")
    await post(bot, event_body(ok))
    await card(fake, DM, ok["ts"])
    posts = fake.called("chat.postMessage")
    assert [p.params["thread_ts"] for p in posts] == [ok["ts"]]


async def test_hostile_text_is_escaped(fake, bot):
    # Typed literally, Slack sends the markup escaped; a real @channel arrives as <!channel>.
    text = (f"<@{BOT_USER_ID}> &lt;!channel&gt; &lt;@U999&gt; &lt;http://evil.example|click&gt; <!here> "
            "vaccines cause autism")
    ev = mention(text)
    await post(bot, event_body(ev))
    _, upd = await card(fake, CHANNEL, ev["ts"])
    out = blocks_text(upd) + upd.params["text"]
    for bad in ("<!channel>", "<@U999>", "<http://evil", "<!here>"):
        assert bad not in out
    assert "&lt;!channel&gt; &lt;@U999&gt; &lt;http://evil.example|click&gt; @here" in out
    assert all(e.get("verbatim") for b in upd.params["blocks"] if b["type"] != "actions"
               for e in ([b["text"]] if "text" in b else b["elements"]))
    [actions] = [b for b in upd.params["blocks"] if b["type"] == "actions"]  # buttons: plain_text only
    assert {e["text"]["type"] for e in actions["elements"]} == {"plain_text"}


async def test_citation_titles_and_urls_cannot_inject_markup():
    cit = Citation(n=1, title="<!channel> Evil | <@U1> >x", url="https://ex.org/a?b=1&c=2|<x>",
                   publisher="<b>Pub</b>", published_at=date(2024, 1, 2), rating="<!everyone>")
    bad = Citation(n=2, title="js", url="javascript:alert(1)", publisher="", published_at=None, rating="")
    reply = Reply(check_id="abc123", emoji="❌", label="False", confidence_pct=90, reasoning="<@U2> said so",
                  citations=[cit, bad], related_heading="Related", related=[], notes=["<!subteam^S1>"])
    blocks, text = render_blocks(reply, CheckRequest(text="<!channel> hi", chat_id="C", target_id="1"))
    out = json.dumps(blocks, ensure_ascii=False) + text
    assert re.findall(r"<[^>]*>", out) == ["<https://ex.org/a?b=1&amp;c=2%7C%3Cx%3E|&lt;!channel&gt; Evil ¦ "
                                           "&lt;@U1&gt; &gt;x>"]
    assert "[2] js" in out and "javascript" not in out  # a non-http(s) URL is shown as its title only
    assert "&lt;b&gt;Pub&lt;/b&gt; — 2024-01-02" in out and "rated “&lt;!everyone&gt;”" in out
    assert link("ftp://x.example/", "t") == "t"


async def test_slack_markup_to_plain_text():
    assert slack_to_plain("<@UB> hi <@U1|bob> in <#C1|general> <!here> <https://a.b/c|site> <https://a.b>"
                          " &lt;x&gt; &amp;", "UB") == "  hi @bob in #general @here site (https://a.b/c) https://a.b <x> &"


# --- signatures --------------------------------------------------------------------------------


async def test_forged_signature_is_rejected(fake, bot):
    body = event_body(mention(f"<@{BOT_USER_ID}> The 5G rollout caused the coronavirus outbreak"))
    status, _ = await post(bot, body, secret="not-the-secret")
    assert status == 401
    ev = dm("The 5G rollout caused the coronavirus outbreak")
    tampered = event_body(ev)
    headers = signed_headers(tampered, content_type="application/json")
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{bot.port}/slack/events",
                          data=tampered.replace("5G", "6G").encode(), headers=headers) as r:
            assert r.status == 401
    assert not [c for c in fake.calls if c.method != "auth.test"]


@pytest.mark.parametrize("bad", [
    {"X-Slack-Request-Timestamp": "not-a-number"},
    {"X-Slack-Request-Timestamp": "1e9"},
    {"X-Slack-Request-Timestamp": ""},
    {"X-Slack-Request-Timestamp": "９９９"},  # full-width digits: str.isdigit() but not ASCII
    {"X-Slack-Signature": "v1=abc"},
    {"X-Slack-Signature": "v0=" + "z" * 64},
    {"X-Slack-Signature": None},
], ids=["words", "float", "empty", "fullwidth", "version", "not-hex", "missing"])
async def test_malformed_signature_headers_get_401_not_500(fake, bot, bad):
    body = event_body(dm("The 5G rollout caused the coronavirus outbreak"))
    headers = signed_headers(body, content_type="application/json")
    for name, value in bad.items():
        if value is None:
            headers.pop(name)
        else:
            headers[name] = value
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{bot.port}/slack/events", data=body.encode(), headers=headers) as r:
            assert r.status == 401, await r.text()
    assert not [c for c in fake.calls if c.method != "auth.test"]


async def test_stale_timestamp_is_rejected(fake, bot):
    body = event_body(dm("The 5G rollout caused the coronavirus outbreak"))
    status, _ = await post(bot, body, ts=int(time.time()) - 10 * 60)
    assert status == 401
    assert not [c for c in fake.calls if c.method != "auth.test"]


# --- /check ------------------------------------------------------------------------------------


async def test_check_slash_command_acks_fast_then_posts(fake, bot):
    form = urlencode({"token": "legacy", "team_id": TEAM_ID, "channel_id": CHANNEL, "channel_name": "general",
                      "user_id": USER, "user_name": "alice", "command": "/check",
                      "text": "The 5G rollout caused the coronavirus outbreak",
                      "response_url": "https://hooks.slack.com/commands/T/1/x", "trigger_id": "1.2.abc",
                      "api_app_id": "A0TIPLINE"})
    started = time.monotonic()
    status, body = await post(bot, form, content_type="application/x-www-form-urlencoded")
    assert status == 200 and time.monotonic() - started < 2.0
    assert json.loads(body) == {"text": "🔎 Checking…", "response_type": "ephemeral"}
    [sent] = await fake.wait_for(lambda: [c for c in fake.called("chat.postMessage") if c.params.get("blocks")])
    assert sent.params["channel"] == CHANNEL and "thread_ts" not in sent.params
    blocks = blocks_text(sent)
    assert "False" in blocks and CHECK_ID.search(blocks) and f"<@{USER}>" in blocks


async def test_empty_check_command_answers_usage_only(fake, bot):
    form = urlencode({"team_id": TEAM_ID, "channel_id": CHANNEL, "user_id": USER, "command": "/check",
                      "text": " ", "trigger_id": "1.2.abd"})
    status, body = await post(bot, form, content_type="application/x-www-form-urlencoded")
    assert status == 200 and "/check <text>" in json.loads(body)["text"]
    assert not fake.called("chat.postMessage")


# --- adapters/run.py --------------------------------------------------------------------------------


async def test_run_starts_slack_http_server_from_settings(fake, settings):
    import asyncio
    import socket

    from pydantic import SecretStr

    from adapters.run import run

    with socket.socket() as s:  # a free port for the server run() starts
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The test settings plus Slack credentials and a free port for the HTTP server.
    configured = settings.model_copy(update={
        "slack_bot_token": SecretStr(fake.token), "slack_signing_secret": SecretStr(SECRET),
        "slack_api_url": fake.base_url, "http_host": "127.0.0.1", "http_port": port,
        "progress_after_s": 0.0})  # the progress post at once, then the update that makes it the card
    stop = asyncio.Event()
    task = asyncio.create_task(run(configured, stop))
    try:
        ev = dm("Vaccines cause autism in children")
        body = event_body(ev)
        async with aiohttp.ClientSession() as s:
            for _ in range(300):  # until the app is built and the server is listening
                try:
                    async with s.post(f"http://127.0.0.1:{port}/slack/events", data=body.encode(),
                                      headers=signed_headers(body, content_type="application/json")) as r:
                        assert r.status == 200
                        break
                except aiohttp.ClientConnectorError:
                    assert not task.done(), task
                    await asyncio.sleep(0.1)
        _, upd = await card(fake, DM, ev["ts"])
        assert "False" in blocks_text(upd)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
