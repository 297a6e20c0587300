"""Fact-checks added while the bot runs: POST /v1/factchecks on a real `tipline run`, `tipline ingest
--server`, the automatic hand-off when the data dir is in use, and the sentence when no hand-off is possible."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import SeededDataDir, model_cache

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "ingest-test-token"
CSV = ("claim,url,rating,publisher,date\n"
       "Eating carrots lets you see in total darkness,https://fc.example/carrots,False,FC Example,2021-02-03\n"
       ",https://fc.example/empty,False,FC Example,2021-02-03\n"
       "A second claim about tides and the moon,https://fc.example/tides,True,FC Example,2022-01-01\n")


@dataclass
class Bot:
    url: str
    env: dict[str, str]
    data: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp_path: Path, model_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(tmp_path / "data"), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                "TIPLINE_GDELT_URL": "", "TIPLINE_MAX_LINKS": "0", "TIPLINE_API_TOKEN": TOKEN,
                "TIPLINE_HTTP_PORT": str(port), "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)),
                "PYTHONPATH": str(ROOT), **extra})
    return env


@pytest.fixture
async def bot(tmp_path: Path, model_dir: Path, seeded: SeededDataDir) -> AsyncIterator[Bot]:
    seeded.copy_to(tmp_path / "data")  # the bot starts on a seeded data dir, as after its first start
    port = _free_port()
    env = _env(tmp_path, model_dir, port)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", "run", env=env, cwd=tmp_path,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = []
    while not any(line.startswith("vectors:") for line in seen):
        line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
        assert line, "tipline run ended: " + "".join(seen)
        seen.append(line)
    drain = asyncio.create_task(proc.stderr.read())  # keep its pipe from filling up
    try:
        yield Bot(f"http://127.0.0.1:{port}", env, tmp_path / "data")
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 60)
        await drain


async def _cli(bot: Bot, *argv: str, **env: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", *argv, env={**bot.env, **env},
                                                cwd=bot.data.parent, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_rest_endpoint_ingests_and_the_running_bot_matches_at_once(bot: Bot) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{bot.url}/v1/factchecks", params={"name": "checks.csv"}, data=CSV.encode()) as resp:
            assert resp.status == 401
        async with http.post(f"{bot.url}/v1/factchecks", params={"name": "broken.json"}, headers=auth,
                             data=b'{"@type": "ClaimReview", "claimReviewed": "x"') as resp:
            body = await resp.json()
            assert resp.status == 400 and body["error"].startswith("nothing ingested from broken.json: ")
        async with http.post(f"{bot.url}/v1/factchecks", params={"name": "x.csv", "map": "claim"}, headers=auth,
                             data=CSV.encode()) as resp:
            assert resp.status == 400 and "FIELD=COLUMN" in (await resp.json())["error"]
        async with http.post(f"{bot.url}/v1/factchecks", params={"name": "checks.csv"}, headers=auth,
                             data=CSV.encode()) as resp:
            body = await resp.json()
        assert resp.status == 201, body
        assert (body["added"], body["updated"], body["skipped"]) == (2, 0, 1)
        assert body["summary"].startswith("2 new, 0 updated, 1 skipped")
        assert body["errors"][0].startswith("api:checks.csv:3: ") and body["factchecks"] > 2
        async with http.post(f"{bot.url}/v1/checks", headers=auth,
                             json={"text": "You can see in total darkness if you eat carrots"}) as resp:
            result = await resp.json()
        assert resp.status == 201 and result["matches"][0]["url"] == "https://fc.example/carrots"


async def test_ingest_hands_off_to_the_running_bot_or_says_what_to_do(bot: Bot, tmp_path: Path) -> None:
    good = tmp_path / "checks.csv"
    good.write_text(CSV)
    # the same data dir, no --server: handed to the bot, reported the same way as a local ingest
    code, out, err = await _cli(bot, "ingest", str(good))
    assert code == 0, err
    assert f"sending the files to it at {bot.url}" in err
    assert f"{good}: 2 new, 0 updated, 1 skipped" in out and f"Knowledge base at {bot.url}: " in out
    assert "api:checks.csv:3:" in err  # the bad row, as the server reported it
    # --server explicitly, again: now the rows are updates
    code, out, _ = await _cli(bot, "ingest", "--server", bot.url, str(good))
    assert code == 0 and f"{good}: 0 new, 2 updated, 1 skipped" in out
    # a wrong token, and no token at all: one sentence each
    code, _, err = await _cli(bot, "ingest", "--server", bot.url, "--token", "wrong", str(good))
    assert code == 1 and err.strip() == (f"tipline: the server at {bot.url} refused the token: use the running "
                                         "bot's TIPLINE_API_TOKEN")
    code, _, err = await _cli(bot, "ingest", str(good), TIPLINE_API_TOKEN="")
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"tipline: the data dir {bot.data} is in use by another tipline process (a running `tipline run`?): send "
        "the files to it with `tipline ingest --server URL` (the bot needs TIPLINE_API_TOKEN), or stop it first, "
        "or use a Qdrant server (TIPLINE_QDRANT_URL)")
    # a file the bot cannot read
    code, _, err = await _cli(bot, "ingest", "--server", bot.url, str(tmp_path / "nope.csv"))
    assert code == 1 and "no such file" in err


async def test_ingest_server_that_is_not_there(tmp_path: Path, model_dir: Path) -> None:
    port = _free_port()
    bot = Bot(f"http://127.0.0.1:{port}", _env(tmp_path, model_dir, port), tmp_path / "data")
    (tmp_path / "c.csv").write_text(CSV)
    code, _, err = await _cli(bot, "ingest", "--server", bot.url, str(tmp_path / "c.csv"))
    assert code == 1 and err.startswith(f"tipline: cannot reach tipline at {bot.url} (")
