"""`tipline doctor`, `tipline --version`, the `tipline run` banner, and `tipline run` failing or waiting in
one sentence: the real CLI in a subprocess, against fake services on 127.0.0.1 speaking their wire format."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.banner import tipline_version
from tests.conftest import SeededDataDir, subprocess_env
from tests.fakes.embeddings_api import FakeEmbeddings
from tests.fakes.openai_api import FakeOpenAI
from tests.fakes.qdrant_api import FakeQdrant
from tests.fakes.search_api import FakeSearchAPI
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram

ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path: Path, model_dir: Path, **settings: str) -> dict[str, str]:
    return subprocess_env(model_dir, TIPLINE_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT),
                          **{f"TIPLINE_{k.upper()}": v for k, v in settings.items()})


async def _tipline(tmp_path: Path, env: dict[str, str], *argv: str, timeout: float = 120) -> tuple[int, str, str]:
    """The CLI as a child process; the event loop keeps serving the fakes meanwhile. cwd: no .env there."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", *argv, env=env, cwd=tmp_path,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _rows(table: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in table.splitlines()[1:]:
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[1] in ("ok", "FAIL", "warn", "off", "local"):
            rows[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"tipline {tipline_version()}" and tipline_version() != "unknown"


async def test_doctor_reaches_everything_configured(tmp_path: Path, model_dir: Path) -> None:
    from core.encoders.embeddings import Embedder

    tg, slack, llm = await FakeTelegram().start(), await FakeSlack().start(), await FakeOpenAI().start()
    search, qdrant = await FakeSearchAPI().start(), await FakeQdrant(api_key="qk", collections=["factchecks"]).start()
    emb = await FakeEmbeddings(embedder=Embedder(model_dir=model_dir, workers=1)).start()
    try:
        env = _env(tmp_path, model_dir, telegram_token=tg.token, telegram_api_url=tg.base_url,
                   slack_bot_token=slack.token, slack_signing_secret="s3cret", slack_api_url=slack.base_url,
                   llm_base_url=llm.base_url, llm_api_key="sk-test", qdrant_url=qdrant.url, qdrant_api_key="qk",
                   embed_url=emb.base_url, searxng_url=search.url("/searxng"),
                   brave_api_key=search.brave_key, brave_url=search.url("/brave/res/v1/web/search"),
                   factcheck_api_key=search.factcheck_key,
                   factcheck_url=search.url("/factcheck/v1alpha1/claims:search"),
                   gdelt_url=search.url("/gdelt/api/v2/doc/doc"), api_token="t0ken")
        code, out, err = await _tipline(tmp_path, env, "doctor")
        rows = _rows(out)
        assert code == 0, out + err
        assert rows["telegram"] == ("ok", "@tipline_bot (getMe); privacy mode on (groups: /check and mentions)")
        assert rows["slack"][0] == "ok" and "Tipline Test" in rows["slack"][1]
        assert rows["llm"] == ("ok", f"gpt-5-mini is served at {llm.base_url}")
        assert rows["qdrant"] == ("ok", f"{qdrant.url}: 1 collections")
        assert rows["embeddings"] == ("ok", f"sentence-transformers/all-MiniLM-L6-v2 at {emb.base_url}: 384 dimensions")
        for name in ("searxng", "brave", "factcheck_api", "gdelt", "data_dir", "rest_api"):
            assert rows[name][0] == "ok", (name, rows[name])
        assert "Everything configured works." in out
        # one read-only call each: nothing was sent or changed
        assert [c.method for c in tg.calls] == ["getMe"] and [c.method for c in slack.calls] == ["auth.test"]
        assert len(search.hits("gdelt")) == len(search.hits("brave")) == 1
    finally:
        for fake in (tg, slack, llm, search, qdrant, emb):
            await fake.stop()


async def test_doctor_says_what_is_wrong_and_exits_1(tmp_path: Path, model_dir: Path) -> None:
    tg, slack, llm, search = (await FakeTelegram().start(), await FakeSlack().start(), await FakeOpenAI().start(),
                              await FakeSearchAPI().start())
    qdrant = await FakeQdrant(api_key="right").start()
    search.fail("searxng", status=403, body="403 Forbidden", content_type="text/html")
    try:
        env = _env(tmp_path, model_dir, telegram_token="123:WRONG", telegram_api_url=tg.base_url,
                   slack_bot_token="xoxb-wrong", slack_app_token="xapp-1", slack_api_url=slack.base_url,
                   llm_base_url=llm.base_url, llm_model="llama3.1:70b", qdrant_url=qdrant.url, qdrant_api_key="wrong",
                   embed_url=f"http://127.0.0.1:{_free_port()}/v1", searxng_url=search.url("/searxng"),
                   brave_api_key="not-the-key", brave_url=search.url("/brave/res/v1/web/search"))
        code, out, err = await _tipline(tmp_path, env, "doctor", "--timeout", "5")
        rows = _rows(out)
        assert code == 1 and "Traceback" not in out + err
        assert rows["telegram"][0] == "FAIL" and "copy it again from @BotFather" in rows["telegram"][1]
        assert rows["slack"] == ("FAIL", "auth.test: invalid_auth: the bot token (xoxb-…) was refused")
        assert rows["llm"][0] == "FAIL" and "TIPLINE_LLM_MODEL=llama3.1:70b is not served" in rows["llm"][1]
        assert "gpt-4o-mini" in rows["llm"][1]  # what it does serve
        assert rows["qdrant"][0] == "FAIL" and "TIPLINE_QDRANT_API_KEY" in rows["qdrant"][1]
        assert rows["embeddings"][0] == "FAIL" and "cannot connect to 127.0.0.1" in rows["embeddings"][1]
        assert rows["searxng"][0] == "FAIL" and "JSON output is off" in rows["searxng"][1]
        assert rows["brave"][0] == "FAIL" and "subscription token is invalid" in rows["brave"][1]
        assert rows["gdelt"][0] == "off" and rows["factcheck_api"][0] == "off"
        assert "checks failed" in out
    finally:
        for fake in (tg, slack, llm, search, qdrant):
            await fake.stop()


async def test_doctor_offline_reaches_no_provider_and_exits_0(tmp_path: Path, model_dir: Path) -> None:
    search = await FakeSearchAPI().start()
    try:
        env = _env(tmp_path, model_dir, offline="true", gdelt_url=search.url("/gdelt/api/v2/doc/doc"),
                   searxng_url=search.url("/searxng"), llm_base_url="http://127.0.0.1:9/v1")
        code, out, _ = await _tipline(tmp_path, env, "doctor")
        rows = _rows(out)
        assert code == 0
        assert "Offline (TIPLINE_OFFLINE=true)" in out
        for name in ("llm", "searxng", "gdelt", "brave", "factcheck_api"):
            assert rows[name][0] == "off" and "TIPLINE_OFFLINE=true" in rows[name][1]
        assert search.requests == []
    finally:
        await search.stop()


async def test_run_prints_a_banner_then_stops_on_sigterm(tmp_path: Path, model_dir: Path,
                                                          seeded: SeededDataDir) -> None:
    seeded.copy_to(tmp_path / "data")  # run() builds the app before anything else: skip the first-start seeding
    tg = await FakeTelegram().start()
    port = _free_port()
    env = _env(tmp_path, model_dir, telegram_token=tg.token, telegram_api_url=tg.base_url, api_token="t0ken",
               http_port=str(port))
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", "run", env=env, cwd=tmp_path,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        lines: list[str] = []
        while not any(line.startswith("vectors:") for line in lines):
            line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
            assert line, "tipline run ended before its banner: " + "".join(lines)
            lines.append(line.rstrip("\n"))
        banner = "\n".join(lines)
        assert lines[0] == (f"tipline {tipline_version()}: starting; loading the models and the knowledge base in "
                            f"{tmp_path / 'data'}…")
        assert f"tipline {tipline_version()} · data dir {tmp_path / 'data'} · " in banner
        assert "mode: no language model (verdicts only from matching fact-checks)" in banner
        assert "telegram: long polling as @tipline_bot" in banner
        assert f"http: http://127.0.0.1:{port} (REST API /v1/checks, /v1/factchecks · /healthz · /metrics)" in banner
        assert "evidence: knowledge base, evidence index, linked sites" in banner
        assert f"vectors: embedded, {tmp_path / 'data' / 'qdrant-edge'}" in banner
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await tg.stop()


async def test_a_wrong_telegram_token_ends_in_one_sentence(tmp_path: Path, model_dir: Path,
                                                            seeded: SeededDataDir) -> None:
    seeded.copy_to(tmp_path / "data")
    tg = await FakeTelegram().start()
    try:
        env = _env(tmp_path, model_dir, telegram_token="123:WRONG", telegram_api_url=tg.base_url,
                   http_port=str(_free_port()))
        code, out, err = await _tipline(tmp_path, env, "run")
        assert code == 1
        assert err.strip().splitlines()[-1] == ("tipline: Telegram does not accept the bot token in "
                                                 "TIPLINE_TELEGRAM_TOKEN: copy it again from @BotFather "
                                                 "(/mybots, then API Token)")
        assert "unexpected error" not in err and "Traceback" not in err
    finally:
        await tg.stop()


async def test_no_network_to_telegram_ends_in_one_sentence(tmp_path: Path, model_dir: Path,
                                                            seeded: SeededDataDir) -> None:
    seeded.copy_to(tmp_path / "data")
    dead = f"http://127.0.0.1:{_free_port()}/bot"  # nothing listens there
    env = _env(tmp_path, model_dir, telegram_token="123:ABC", telegram_api_url=dead, http_port=str(_free_port()))
    code, _, err = await _tipline(tmp_path, env, "run")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"tipline: cannot reach the Telegram Bot API at {dead.removesuffix('/bot')} (")
    assert "check the network, HTTPS_PROXY" in last and "unexpected error" not in err


async def test_run_with_nothing_configured_waits_as_a_service_and_says_what_to_set(tmp_path: Path,
                                                                                   model_dir: Path) -> None:
    """No terminal (compose, systemd): it must not exit, or `restart: unless-stopped` loops it for ever."""
    import aiohttp

    port = _free_port()
    env = _env(tmp_path, model_dir, http_port=str(port))
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", "run", env=env, cwd=tmp_path,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert "no chat adapter is configured: set TIPLINE_TELEGRAM_TOKEN" in line and "waiting" in line
        async with aiohttp.ClientSession() as http:
            for _ in range(100):
                try:
                    async with http.get(f"http://127.0.0.1:{port}/healthz") as resp:
                        body = await resp.json()
                        break
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.1)
        assert resp.status == 503 and body["status"] == "unconfigured" and "TIPLINE_API_TOKEN" in body["error"]
        assert proc.returncode is None  # still there: no restart loop
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_run_with_nothing_configured_on_a_terminal_exits_with_the_sentence(tmp_path: Path,
                                                                           model_dir: Path) -> None:
    import pty

    env = _env(tmp_path, model_dir)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "adapters.main", "run"], env=env, cwd=tmp_path,
                              stdin=follower, capture_output=True, text=True, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("tipline: no chat adapter is configured: set TIPLINE_TELEGRAM_TOKEN")


@pytest.mark.parametrize("argv", [["doctor", "--help"], ["run", "--help"]])
def test_the_commands_are_documented(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "adapters.main", *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0 and "usage: tipline" in proc.stdout


async def test_doctor_reports_telegrams_webhook_delivery_errors(tmp_path: Path, model_dir: Path) -> None:
    tg = await FakeTelegram().start()
    hook = "https://bot.example.org/telegram/webhook"
    try:
        env = _env(tmp_path, model_dir, telegram_token=tg.token, telegram_api_url=tg.base_url,
                   telegram_webhook_url=hook, telegram_webhook_secret="s3cret")
        code, out, _ = await _tipline(tmp_path, env, "doctor")
        assert code == 0 and _rows(out)["telegram"][1].endswith(
            "; the webhook is not set (tipline run sets it to TIPLINE_TELEGRAM_WEBHOOK_URL)")
        tg.webhook = {"url": hook, "secret_token": "s3cret", "allowed_updates": None}
        tg.webhook_error = "Wrong response from the webhook: 502 Bad Gateway"
        code, out, _ = await _tipline(tmp_path, env, "doctor")
        assert code == 1 and _rows(out)["telegram"] == (
            "FAIL", f"Telegram cannot deliver to {hook}: Wrong response from the webhook: 502 Bad Gateway "
                    "(0 updates waiting)")
        assert all(c.method in ("getMe", "getWebhookInfo") for c in tg.calls)  # nothing changed
    finally:
        await tg.stop()


async def test_doctor_checks_slacks_app_level_token_in_socket_mode(tmp_path: Path, model_dir: Path) -> None:
    from tests.fakes.slack_socket import FakeSlackSocket

    slack = await FakeSlackSocket().start()
    try:
        env = _env(tmp_path, model_dir, slack_bot_token=slack.token, slack_app_token=slack.app_token,
                   slack_api_url=slack.base_url)
        code, out, _ = await _tipline(tmp_path, env, "doctor")
        assert code == 0 and _rows(out)["slack"] == ("ok", "tipline in Tipline Test (auth.test), Socket Mode")
        code, out, _ = await _tipline(tmp_path, {**env, "TIPLINE_SLACK_APP_TOKEN": "xapp-1-revoked"}, "doctor")
        assert code == 1 and _rows(out)["slack"] == (
            "FAIL", "apps.connections.open: invalid_auth: the app-level token (TIPLINE_SLACK_APP_TOKEN) was "
                    "refused; it needs the connections:write scope")
    finally:
        await slack.stop()


async def test_doctor_on_the_defaults_reaches_nothing_and_says_nothing_leaves(tmp_path: Path,
                                                                              model_dir: Path) -> None:
    """The defaults with no route to the internet (a proxy that is not there): no search provider is on,
    so nothing is reached, the run exits 0, and the privacy row says nothing from messages leaves."""
    env = _env(tmp_path, model_dir)
    del env["TIPLINE_GDELT_URL"]
    env.update({"HTTPS_PROXY": f"http://127.0.0.1:{_free_port()}", "HTTP_PROXY": f"http://127.0.0.1:{_free_port()}"})
    code, out, err = await _tipline(tmp_path, env, "doctor", "--timeout", "5")
    rows = _rows(out)
    assert code == 0, out + err
    assert rows["gdelt"] == ("off", "not configured (TIPLINE_GDELT_URL)")
    assert rows["privacy"] == ("ok", "nothing from messages leaves the machine")


@pytest.mark.parametrize("app_token,sentence", [
    ("xapp-1-revoked", "tipline: Slack refused TIPLINE_SLACK_APP_TOKEN (invalid_auth): create an app-level token "
                       "with the connections:write scope under Basic Information, App-Level Tokens"),
    ("xoxb-not-an-app-token", "tipline: TIPLINE_SLACK_APP_TOKEN must be an app-level token starting with xapp-"),
])
async def test_a_wrong_slack_app_token_ends_in_one_sentence(tmp_path: Path, model_dir: Path, app_token: str,
                                                            sentence: str, seeded: SeededDataDir) -> None:
    seeded.copy_to(tmp_path / "data")
    from tests.fakes.slack_socket import FakeSlackSocket

    slack = await FakeSlackSocket().start()
    try:
        env = _env(tmp_path, model_dir, slack_bot_token=slack.token, slack_app_token=app_token,
                   slack_api_url=slack.base_url, http_port=str(_free_port()))
        code, _, err = await _tipline(tmp_path, env, "run")
        assert code == 1 and err.strip().splitlines()[-1] == sentence
        assert "unexpected error" not in err
    finally:
        await slack.stop()
