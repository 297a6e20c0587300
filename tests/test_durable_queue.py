"""Nothing lost, nothing doubled: the durable job queue, end to end.

Real SQLite, the real engine, real `tipline run` processes, fake platform servers on loopback that
speak the real wire format. The centrepiece kills `tipline run` with SIGKILL in the middle of 1,000
queued checks, restarts it, and counts replies: every message gets exactly one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from bot.limits import RateLimiter, TokenBuckets
from bot.queue import BUSY_TEXT, FULL_TEXT, JobQueue, request_from_payload, request_to_payload
from bot.telegram_bot import CHECKING, CheckRequest, CheckService
from storage.jobs import JobStore
from storage.sqlite import Database
from tests.fakes.telegram_api import FakeTelegram

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = [
    "The 5G rollout caused the coronavirus outbreak",
    "Vaccines cause autism in children",
    "Drinking bleach cures COVID-19",
    "The Earth is flat and NASA hides it",
    "The moon landing was staged in a studio",
    "Eating carrots lets you see in total darkness",
    "Our town's mayor opened a new bridge on Monday",
    "Garlic prevents infection with the new coronavirus",
]


# --- the store ---------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def store(tmp_path: Path):
    db = await Database.open(tmp_path / "jobs.sqlite3")
    yield JobStore(db)
    await db.close()


def req(chat: int | str, text: str = "claim", user: int | str | None = 1, target: int | str = 1) -> CheckRequest:
    return CheckRequest(text=text, chat_id=chat, target_id=target, requested_by=user)


async def test_enqueue_is_idempotent(store: JobStore):
    payload = request_to_payload(req(10), {"chat_id": 10})
    job, created = await store.enqueue("k1", "telegram", 10, 1, payload)
    again, created_again = await store.enqueue("k1", "telegram", 10, 1, payload)
    assert created and not created_again
    assert again.id == job.id and await store.pending_count() == 1
    assert request_from_payload(again.payload) == req(10)


async def test_claims_are_round_robin_across_chats_and_positions_follow(store: JobStore):
    for n, chat in enumerate(["A", "A", "A", "B", "C", "C"]):
        await store.enqueue(f"k{n}", "slack", chat, None, request_to_payload(req(chat), {}))
    jobs = {j.idem_key: j for j in [await store.get(f"k{n}") for n in range(6)]}
    # A's third job waits for A1, A2, B1, C1, C2 and itself; B's only job is 2nd... after A1.
    assert await store.position(jobs["k2"]) == 6
    assert await store.position(jobs["k3"]) == 3  # one each of A, B, C
    order = []
    while (job := await store.claim()) is not None:
        order.append(job.idem_key)
        await store.mark_done(job.id, None)
    assert order == ["k0", "k3", "k4", "k1", "k5", "k2"]  # A, B, C, A, C, A: a flood can't starve others


async def test_recover_puts_running_and_held_jobs_back(store: JobStore):
    await store.enqueue("r", "telegram", 1, 1, {"request": {}, "where": {}})
    await store.enqueue("h", "telegram", 2, 1, {"request": {}, "where": {}}, status="held")
    running = await store.claim()
    assert running is not None and running.idem_key == "r"
    assert await store.claim() is None  # held jobs are not claimable
    assert await store.recover() == 2
    assert {(await store.claim()).idem_key, (await store.claim()).idem_key} == {"r", "h"}  # type: ignore[union-attr]
    assert (await store.get("r")).attempts == 2  # type: ignore[union-attr]


async def test_claim_only_takes_platforms_this_process_serves(store: JobStore):
    await store.enqueue("s", "slack", "C1", None, {"request": {}, "where": {}})
    assert await store.claim(platforms=("telegram",)) is None
    assert (await store.claim(platforms=("telegram", "slack"))).idem_key == "s"  # type: ignore[union-attr]


def test_token_buckets_refill_with_time():
    now = [0.0]
    limiter = RateLimiter(user_per_minute=2, chat_per_minute=3, clock=lambda: now[0])
    assert limiter.check("u1", "c") is None and limiter.check("u1", "c") is None
    limited = limiter.check("u1", "c")
    assert limited is not None and limited.who == "user" and 29 < limited.retry_after <= 30
    assert "try again in 30 seconds" in limited.message()
    assert limiter.check("u2", "c") is None  # another user, same chat: chat bucket has one left
    assert limiter.check("u3", "c").who == "chat"  # type: ignore[union-attr]
    now[0] = 30.0
    assert limiter.check("u1", "c") is None  # half a minute later: one token back
    buckets = TokenBuckets(60, clock=lambda: now[0], max_keys=10)
    for n in range(50):
        buckets.take(f"k{n}")
        now[0] += 2.0  # old buckets are full again and get dropped
    assert len(buckets._buckets) <= 11


# --- kill -9 ---------------------------------------------------------------------------------------


class GatedTelegram(FakeTelegram):
    """The fake Bot API with a gate: while closed, requests hang and then fail without effect.

    Closing the gate before SIGKILL means no worker is between a request Telegram applied and the
    commit of its result: the deterministic version of "killed mid-check" (see docs/reliability.md
    for the one window the gate hides)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.open = asyncio.Event()
        self.open.set()

    async def _handle(self, request: web.Request) -> web.Response:
        if not self.open.is_set():
            await self.open.wait()
            return web.json_response({"ok": False, "error_code": 502, "description": "Bad Gateway"}, status=502)
        return await super()._handle(request)


def tipline_env(fake: FakeTelegram, data_dir: Path, model_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(data_dir), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                "TIPLINE_TELEGRAM_TOKEN": fake.token, "TIPLINE_TELEGRAM_API_URL": fake.base_url,
                "TIPLINE_GDELT_URL": "", "TIPLINE_WORKERS": "4", "TIPLINE_QUEUE_MAX": "5000",
                "TIPLINE_USER_RATE_PER_MINUTE": "100000", "TIPLINE_CHAT_RATE_PER_MINUTE": "100000"})
    env.update(extra)
    return env


def start_tipline(env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "run"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=log.open("ab"))


def replies(fake: FakeTelegram) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """(chat, user message id) -> the bot's reply messages, as the fake holds them now (after edits)."""
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for call in fake.called("sendMessage"):
        rp = call.params.get("reply_parameters") or {}
        if rp and isinstance(call.result, dict) and "message_id" in call.result:
            chat = call.result["chat"]["id"]
            out.setdefault((chat, rp["message_id"]), []).append(fake.messages[(chat, call.result["message_id"])])
    return out


def answered(fake: FakeTelegram) -> int:
    return sum(1 for msgs in replies(fake).values() if any("Check id:" in (m.get("text") or "") for m in msgs))


async def wait_until(predicate, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"tipline exited with {proc.returncode}: {log.read_text()[-3000:] if log else ''}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.2)


async def test_kill_9_mid_way_then_restart_answers_every_check_exactly_once(tmp_path: Path, model_dir: Path):
    fake = await GatedTelegram().start()
    log = tmp_path / "tipline.log"
    data_dir = tmp_path / "data"
    try:
        sent = []
        for n in range(1000):  # 50 private chats x 20 messages, all waiting before the bot starts
            user = 10_000 + n % 50
            chat = FakeTelegram.private_chat(user)
            sender = {"id": user, "is_bot": False, "first_name": f"U{user}"}
            msg = fake.make_message(f"{CLAIMS[n % len(CLAIMS)]} (#{n})", chat=chat, sender=sender)
            await fake.queue_message(msg)
            sent.append((user, msg["message_id"]))
        env = tipline_env(fake, data_dir, model_dir)

        t0 = time.monotonic()
        first = start_tipline(env, log)
        await wait_until(lambda: answered(fake) >= 300, 600, first, log)
        fake.open.clear()  # no request reaches "Telegram" any more ...
        await asyncio.sleep(1.0)  # ... every worker is now blocked on one, or inside the engine
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        before = answered(fake)
        assert before < 1000, "the bot finished before it could be killed: the test proves nothing"
        fake.open.set()

        t1 = time.monotonic()
        second = start_tipline(env, log)
        try:
            await wait_until(lambda: answered(fake) >= 1000, 900, second, log)
            t2 = time.monotonic()
            await asyncio.sleep(2.0)  # anything doubled would show up now
        finally:
            second.send_signal(signal.SIGTERM)  # graceful: exits cleanly
            assert second.wait(60) == 0, log.read_text()[-3000:]

        got = replies(fake)
        for user, message_id in sent:
            msgs = got.get((user, message_id), [])
            assert len(msgs) == 1, (message_id, [m.get("text", "")[:60] for m in msgs])
            assert "Check id:" in msgs[0]["text"] and not msgs[0]["text"].startswith(CHECKING)
        assert len(fake.called("sendMessage")) == 1000  # nothing else was sent to anyone

        db = await Database.open(data_dir / "tipline.sqlite3")
        try:
            store = JobStore(db)
            assert await store.counts() == {"done": 1000}
            cur = await db._conn.execute("SELECT COUNT(*) FROM jobs WHERE attempts > 1")
            resumed = (await cur.fetchone())[0]
        finally:
            await db.close()
        assert resumed >= 1  # jobs running at the kill ran again, editing their reply
        print(f"\nkill -9 figures: {before} answered before the kill after {t1 - t0:.1f} s (incl. start-up); "
              f"{resumed} jobs resumed; the remaining {1000 - before} answered {t2 - t1:.1f} s after the restart "
              f"(incl. start-up)")
    finally:
        await fake.stop()
