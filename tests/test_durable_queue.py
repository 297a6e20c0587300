"""Nothing lost, nothing doubled: the durable job queue, end to end.

Real SQLite, the real engine, real `tipline run` processes, fake platform servers on loopback that
speak the real wire format. The centrepiece kills `tipline run` with SIGKILL in the middle of 1,000
queued checks, restarts it, and counts replies: every message gets exactly one.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
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

from adapters.http_api import HttpApi
from bot.chat_app import ChatApp
from adapters.slack import SlackBot, SlackConfig
from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.limits import RateLimiter, TokenBuckets
from bot.queue import BUSY_TEXT, FULL_TEXT, JobQueue, request_from_payload, request_to_payload
from bot.check_service import CHECKING, CheckService
from bot.requests import CheckRequest
from storage.jobs import JobStore
from storage.sqlite import Database
from tests.fakes.loopback import serve_on_loopback
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.conftest import SeededDataDir, isolated_settings, model_cache

pytestmark = pytest.mark.asyncio(loop_scope="module")

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


@pytest_asyncio.fixture(loop_scope="module")
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


async def test_prune_forgets_only_old_finished_jobs(store: JobStore):
    for key, status in (("d", "done"), ("r", "refused"), ("p", "pending")):
        await store.enqueue(key, "slack", "C1", None, {"request": {}, "where": {}}, status=status)  # type: ignore[arg-type]
    assert await store.prune(3600) == 0  # all younger than an hour
    assert await store.prune(-1) == 2  # "older than the future": every finished one
    assert await store.counts() == {"pending": 1}


async def test_claim_only_takes_platforms_this_process_serves(store: JobStore):
    await store.enqueue("s", "slack", "C1", None, {"request": {}, "where": {}})
    assert await store.claim(platforms=("telegram",)) is None
    assert (await store.claim(platforms=("telegram", "slack"))).idem_key == "s"  # type: ignore[union-attr]


async def test_json_log_lines_carry_job_and_check_ids():
    import io
    import logging

    from bot.logs import ContextFilter, JsonFormatter, job_context, set_check_id

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("tipline.test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("outside")
        with job_context(42):
            logger.warning("checking %s", "x\ny \"quoted\"")
            set_check_id("abc123")
            try:
                raise ValueError("boom")
            except ValueError:
                logger.exception("failed")
        logger.info("after")
    finally:
        logger.removeHandler(handler)
    out = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["msg"], x.get("job_id"), x.get("check_id")) for x in out] == [
        ("outside", None, None), ('checking x\ny "quoted"', 42, None), ("failed", 42, "abc123"), ("after", None, None)]
    assert out[2]["level"] == "error" and "ValueError: boom" in out[2]["exc"]


async def test_token_buckets_refill_with_time():
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
    unlimited = RateLimiter(user_per_minute=0, chat_per_minute=0, clock=lambda: now[0])
    assert all(unlimited.check("u1", "c") is None for _ in range(1000))  # 0 turns a limit off
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
                "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)), "TIPLINE_TELEGRAM_TOKEN": fake.token, "TIPLINE_TELEGRAM_API_URL": fake.base_url,
                "TIPLINE_GDELT_URL": "", "TIPLINE_WORKERS": "4", "TIPLINE_QUEUE_MAX": "5000",
                "TIPLINE_USER_RATE_PER_MINUTE": "100000", "TIPLINE_CHAT_RATE_PER_MINUTE": "100000"})
    env.update(extra)
    return env


def start_tipline(env: dict[str, str], log: Path, *options: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "adapters.main", *options, "run"], env=env, cwd=ROOT,
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


async def test_kill_9_mid_way_then_restart_answers_every_check_exactly_once(tmp_path: Path, model_dir: Path,
                                                                              seeded: SeededDataDir):
    fake = await GatedTelegram().start()
    log = tmp_path / "tipline.log"
    data_dir = seeded.copy_to(tmp_path / "data")  # the seed is loaded already: the kill is what is tested
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
        json_log = tmp_path / "second.jsonl"
        second = start_tipline(env, json_log, "--log-json")
        try:
            await wait_until(lambda: answered(fake) >= 1000, 900, second, json_log)
            t2 = time.monotonic()
            await asyncio.sleep(2.0)  # anything doubled would show up now
        finally:
            second.send_signal(signal.SIGTERM)  # graceful: exits cleanly
            assert second.wait(60) == 0, json_log.read_text()[-3000:]

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
        # --log-json: one JSON object per line; each finished job's line names its job and check.
        lines = [json.loads(line) for line in json_log.read_text().splitlines() if line.strip()]
        done = [x for x in lines if x["msg"].startswith("job ") and " done (check " in x["msg"]]
        assert 1000 - before <= len(done) < 1000  # run 2 finished what run 1 had not
        assert all(x["msg"] == f"job {x['job_id']} done (check {x['check_id']})" for x in done)
        assert any(x["msg"] == f"resuming {resumed} checks left unfinished by the last run" for x in lines)
        print(f"\nkill -9 figures: {before} answered before the kill after {t1 - t0:.1f} s (incl. start-up); "
              f"{resumed} jobs resumed; the remaining {1000 - before} answered {t2 - t1:.1f} s after the restart "
              f"(incl. start-up)")
    finally:
        await fake.stop()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def test_burst_of_2000_every_user_is_answered_or_told(tmp_path: Path, model_dir: Path, seeded: SeededDataDir):
    """2,000 messages at once against default rate limits and a small queue: the first 20 are checked,
    the next 80 are told their place in line (and checked later), a flooding user is told to slow
    down, everyone past the hard cap (queue_max + 100) is told to come back: one reply each. (One worker
    and a small queue so that it fills however fast checks drain: with 4 workers, 60 and a cap of 300 it
    stopped filling once checks got faster, and with a cap of 120 it filled in some runs only.)"""
    fake = await FakeTelegram().start()
    log = tmp_path / "tipline.log"
    try:
        sent = []
        for n in range(2000):
            user = 20_000 + n if n % 100 else 29_999  # every 100th message comes from one flooding user
            msg = user_message(fake, f"{CLAIMS[n % len(CLAIMS)]} [{n}]", user)
            await fake.queue_message(msg)
            sent.append((user, msg["message_id"]))
        # One worker and a small queue, so that the backlog passes the cap however fast a check is.
        env = tipline_env(fake, seeded.copy_to(tmp_path / "data"), model_dir, TIPLINE_QUEUE_MAX="20",
                          TIPLINE_WORKERS="1")
        del env["TIPLINE_USER_RATE_PER_MINUTE"], env["TIPLINE_CHAT_RATE_PER_MINUTE"]  # the defaults
        t0 = time.monotonic()
        proc = start_tipline(env, log)
        try:
            await wait_until(lambda: len(replies(fake)) >= 2000 and answered(fake) >= 100
                             and not any(m["text"].startswith(("⏳ I'm busy", CHECKING))
                                         for ms in replies(fake).values() for m in ms), 900, proc, log)
            elapsed = time.monotonic() - t0
            await asyncio.sleep(2.0)
            peak = peak_rss_mb(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0, log.read_text()[-3000:]
        got = replies(fake)
        first_texts = {c.result["message_id"]: c.params["text"] for c in fake.called("sendMessage")}
        kinds: dict[str, int] = {}
        places = []
        for user, message_id in sent:
            msgs = got.get((user, message_id), [])
            assert len(msgs) == 1, (message_id, msgs)
            text, first = msgs[0]["text"], first_texts[msgs[0]["message_id"]]
            if "Check id:" in text:
                kind = "waited, then checked" if first.startswith("⏳ I'm busy") else "checked"
                if kind == "waited, then checked":
                    places.append(int(first.split("#")[1].split()[0]))
            elif text == FULL_TEXT:
                kind = "refused: full"
            elif text.startswith("⏳ You're sending checks faster"):
                kind = "refused: rate limit"
            else:
                raise AssertionError(f"unexpected reply {text!r}")
            kinds[kind] = kinds.get(kind, 0) + 1
        # Workers drain while the burst is taken in, so how many get in depends on speed; what does
        # not: every kind of answer happened, places are within the hard cap, nobody was left out.
        # At least the queue and its waiting room (20 + 100) minus the flooder's refusals are checked,
        # however slow a check is (with the multilingual model a check costs more and ~140 get in).
        assert kinds["checked"] + kinds["waited, then checked"] >= 100
        assert kinds["waited, then checked"] >= 1 and all(1 <= p <= 120 for p in places)  # workers drain meanwhile
        assert kinds["refused: rate limit"] >= 1 and kinds["refused: full"] >= 1
        assert peak < 3000, peak  # MB: the backlog lives in SQLite, not in memory
        print(f"\nburst figures: {kinds}; all 2000 answered in {elapsed:.1f} s (incl. start-up); "
              f"peak RSS {peak:.0f} MB")
    finally:
        await fake.stop()


# --- in-process: replays, webhook, backpressure, shutdown, REST ----------------------------------------
# One real app (model, SQLite, embedded Qdrant, seed KB) for these tests; each test gets its own job
# database, so idempotency keys of one test's fake server can't meet another's.

@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def q_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("queue") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def jobs_db(tmp_path: Path):
    db = await Database.open(tmp_path / "jobs.sqlite3")
    yield db
    await db.close()


@pytest_asyncio.fixture(loop_scope="module")
async def tg():
    server = await FakeTelegram().start()
    yield server
    await server.stop()


def make_queue(app, db: Database, **kw: Any) -> JobQueue:
    return JobQueue(JobStore(db), CheckService(app.engine, progress_interval=0.0), **kw)


def tg_config(fake: FakeTelegram, **kw: Any) -> TelegramConfig:
    return TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                          poll_timeout=1.0, **kw)


def user_message(fake: FakeTelegram, text: str, user: int) -> dict[str, Any]:
    return fake.make_message(text, chat=FakeTelegram.private_chat(user),
                             sender={"id": user, "is_bot": False, "first_name": f"U{user}"})


async def settle(fake: FakeTelegram, n: int, timeout: float = 60) -> None:
    await fake.wait_for(lambda: answered(fake) >= n, timeout)
    await asyncio.sleep(0.5)  # a doubled reply would arrive now


async def test_telegram_updates_delivered_again_after_a_restart_get_one_reply(tg, q_app, jobs_db):
    queue = make_queue(q_app, jobs_db, workers=2)
    first = TelegramBot(tg_config(tg), ChatApp(queue))
    await first.start()
    await queue.start()
    msgs = [user_message(tg, CLAIMS[n], 7000 + n) for n in range(3)]
    updates = [{"update_id": await tg.queue_message(m), "message": m} for m in msgs]
    try:
        await settle(tg, 3)
        await first.stop_intake()
        # A crash between persisting and confirming: Telegram delivers the same updates again.
        async with tg._changed:
            tg.updates.extend(json.loads(json.dumps(updates)))
        second = TelegramBot(tg_config(tg), ChatApp(queue))
        await second.start()
        try:
            await wait_until(lambda: not tg.updates, 30)  # the fake drops them once they are confirmed
            await asyncio.sleep(1.0)
        finally:
            await second.stop()
    finally:
        await queue.stop()
        await first.stop()
    got = replies(tg)
    assert [len(got[(m["chat"]["id"], m["message_id"])]) for m in msgs] == [1, 1, 1]
    assert len(tg.called("sendMessage")) == 3
    assert await JobStore(jobs_db).counts() == {"done": 3}


async def test_telegram_webhook_checks_the_secret_and_dedupes(tg, q_app, jobs_db):
    queue = make_queue(q_app, jobs_db, workers=2)
    bot = TelegramBot(tg_config(tg, webhook_url="https://bot.example.org/tg/hook", webhook_secret="s3cr3t-_x"),
                      ChatApp(queue))
    web_app = web.Application()
    bot.add_webhook_route(web_app)
    await queue.start()
    runner, port = await serve_on_loopback(web_app)  # listening before setWebhook, as `tipline run` does
    url = f"http://127.0.0.1:{port}/tg/hook"
    msg = user_message(tg, "Vaccines cause autism in children", 7100)
    update = {"update_id": 555001, "message": msg}
    try:
        async with aiohttp.ClientSession() as s:  # a webhook left by an earlier run delivers before getMe
            async with s.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cr3t-_x"}) as r:
                assert r.status == 503  # Telegram retries it later
        assert await JobStore(jobs_db).counts() == {}
        await bot.start()
        assert tg.webhook == {"url": "https://bot.example.org/tg/hook", "secret_token": "s3cr3t-_x",
                              "allowed_updates": ["message", "channel_post", "callback_query"]}
        assert not tg.called("deleteWebhook")
        async with aiohttp.ClientSession() as s:
            for headers in ({}, {"X-Telegram-Bot-Api-Secret-Token": "wrong"}):
                async with s.post(url, json=update, headers=headers) as r:
                    assert r.status == 401
            assert await JobStore(jobs_db).counts() == {}  # nothing persisted for a forged delivery
            for _ in range(2):  # Telegram retries a delivery it thinks failed: one reply
                async with s.post(url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cr3t-_x"}) as r:
                    assert r.status == 200
        await settle(tg, 1)
    finally:
        await runner.cleanup()
        await queue.stop()
        await bot.stop()
    assert len(replies(tg)[(msg["chat"]["id"], msg["message_id"])]) == 1
    assert await JobStore(jobs_db).counts() == {"done": 1}


SLACK_SECRET = "slack-signing-secret"


def slack_headers(body: str, **extra: str) -> dict[str, str]:
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(SLACK_SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Signature": sig, "X-Slack-Request-Timestamp": ts, "Content-Type": "application/json", **extra}


async def test_slack_event_and_its_retries_get_one_reply(q_app, jobs_db):
    fake = await FakeSlack().start()
    queue = make_queue(q_app, jobs_db, workers=2)
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SLACK_SECRET, api_url=fake.base_url, port=0),
                   ChatApp(queue))
    await bot.start()
    await queue.start()
    ts = f"{int(time.time())}.000777"
    body = json.dumps({"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0TIPLINE", "type": "event_callback",
                       "event_id": "Ev0DURABLE1", "event_time": int(time.time()),
                       "event": {"type": "app_mention", "user": "U0ALICE", "ts": ts, "channel": "C0NEWS",
                                 "text": f"<@{BOT_USER_ID}> The Earth is flat and NASA hides it", "team": TEAM_ID},
                       "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}]})
    try:
        async with aiohttp.ClientSession() as s:
            for extra in ({}, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_error"},
                          {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"}):
                async with s.post(f"http://127.0.0.1:{bot.port}/slack/events", data=body.encode(),
                                  headers=slack_headers(body, **extra)) as r:
                    assert r.status == 200
        def card():
            return [c for c in fake.called("chat.update") if c.params.get("blocks")]
        await fake.wait_for(card, 60)
        await asyncio.sleep(1.0)
    finally:
        await queue.stop()
        await bot.stop()
        await fake.stop()
    assert len(fake.posts_in_thread("C0NEWS", ts)) == 1
    assert len([c for c in fake.called("chat.update") if c.params.get("blocks")]) == 1
    assert await JobStore(jobs_db).counts() == {"done": 1}


async def test_burst_past_queue_max_is_told_its_place_and_nothing_is_dropped(tg, q_app, jobs_db):
    queue = make_queue(q_app, jobs_db, workers=2, queue_max=3, hard_cap=6,
                       limiter=RateLimiter(user_per_minute=2, chat_per_minute=100))
    bot = TelegramBot(tg_config(tg), ChatApp(queue))
    await bot.start()
    msgs = [user_message(tg, f"{CLAIMS[n % len(CLAIMS)]} ({n})", 7200 + n) for n in range(9)]
    msgs += [user_message(tg, f"{CLAIMS[n]} (again {n})", 7299) for n in range(3)]  # one user, three times
    for m in msgs:
        await tg.queue_message(m)
    try:
        store = JobStore(jobs_db)
        # Workers are not started yet: the whole burst is persisted first, deterministically.
        await wait_until(lambda: len(replies(tg)) >= 9, 30)  # 3 notices + 6 refusals, sent at once
        counts = await store.counts()
        assert counts.get("refused") == 6 and counts.get("pending", 0) + counts.get("held", 0) == 6
        await queue.start()
        await settle(tg, 6)
    finally:
        await queue.stop()
        await bot.stop()
    got = replies(tg)
    first_texts = {c.result["message_id"]: c.params["text"] for c in tg.called("sendMessage")}
    for n, m in enumerate(msgs):
        reply = got[(m["chat"]["id"], m["message_id"])]
        assert len(reply) == 1, n  # exactly one reply each: none silent, none doubled
        text, first = reply[0]["text"], first_texts[reply[0]["message_id"]]
        if n < 3:
            assert "Check id:" in text and first.startswith(CHECKING)
        elif n < 6:  # told their place, then the notice became the verdict card
            assert "Check id:" in text and first == BUSY_TEXT.format(n=n + 1)
        elif n < 11:
            assert text == FULL_TEXT  # past the hard cap (the first two of the one user, too)
        else:
            assert text.startswith("⏳ You're sending checks faster than I can take them")
    assert await store.counts() == {"done": 6, "refused": 6}


class GateFactory:
    """A `ResponderFactory` for a test platform whose first progress message waits for `gate`."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        self.finals: list[str] = []

    def build(self, where, reply_ref):
        factory = self

        class R:
            async def progress(self, text: str) -> None:
                factory.entered.set()
                await factory.gate.wait()

            async def final(self, reply, request=None) -> None:
                factory.finals.append(reply.check_id)

            async def say(self, text: str) -> None:
                factory.finals.append(text)
        return R()

    def reply_ref(self, responder) -> str | None:
        return None


async def test_shutdown_puts_late_checks_back_then_the_next_run_finishes_them(q_app, jobs_db):
    store = JobStore(jobs_db)
    # Run 1: the check is still waiting on the platform when the shutdown timeout runs out.
    queue = make_queue(q_app, jobs_db, workers=1)
    factory = GateFactory()
    queue.register("test", factory)
    admission = await queue.submit("t-1", "test", req("c", "Drinking bleach cures COVID-19"), {})
    await queue.start()
    await asyncio.wait_for(factory.entered.wait(), 30)
    await queue.stop(timeout=0.2)
    job = await store.get_id(admission.job.id)
    assert job is not None and job.status == "pending" and job.attempts == 1 and not factory.finals
    assert await queue.submit("t-1", "test", req("c", "x"), {}) is not None  # a re-delivery: no new job
    assert await store.counts() == {"pending": 1}
    # Run 2 resumes it; a shutdown with time to spare lets it finish.
    queue = make_queue(q_app, jobs_db, workers=1)
    factory = GateFactory()
    queue.register("test", factory)
    await queue.start()
    await asyncio.wait_for(factory.entered.wait(), 30)
    asyncio.get_running_loop().call_later(0.3, factory.gate.set)
    await queue.stop(timeout=30)
    job = await store.get_id(admission.job.id)
    assert job is not None and job.status == "done" and job.attempts == 2
    assert factory.finals == [job.check_id]


async def test_rest_idempotency_key_maps_to_one_check(q_app, jobs_db):
    queue = make_queue(q_app, jobs_db, workers=1)
    web_app = web.Application()
    HttpApi(ChatApp(queue), "tok").add_routes(web_app)
    # A request the last process accepted but never finished (it was killed mid-check):
    store = JobStore(jobs_db)
    await store.enqueue("api:left-over", "api", "api", None,
                        request_to_payload(req("api", "The moon landing was staged in a studio", None), {}),
                        status="running")
    await queue.start()
    runner, port = await serve_on_loopback(web_app)
    url = f"http://127.0.0.1:{port}/v1/checks"
    auth = {"Authorization": "Bearer tok"}
    try:
        async with aiohttp.ClientSession() as s:
            async def post(text: str, key: str | None) -> tuple[int, dict[str, Any], Any]:
                headers = {**auth, **({"Idempotency-Key": key} if key else {})}
                async with s.post(url, json={"text": text}, headers=headers) as r:
                    return r.status, await r.json(), r.headers
            status1, body1, _ = await post("Garlic prevents infection with the new coronavirus", "k-1")
            status2, body2, headers2 = await post("Garlic prevents infection with the new coronavirus", "k-1")
            assert (status1, status2) == (201, 200) and body1["id"] == body2["id"]
            assert headers2["Idempotent-Replayed"] == "true"
            status3, body3, _ = await post("Something else entirely", "k-1")
            assert status3 == 422 and "different text" in body3["error"]
            status4, body4, _ = await post("Garlic prevents infection with the new coronavirus", None)
            assert status4 == 201 and body4["id"] != body1["id"]  # no key: a new check each time
            deadline = time.monotonic() + 30
            while (job := await store.get("api:left-over")).status != "done":  # type: ignore[union-attr]
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            status5, body5, _ = await post("The moon landing was staged in a studio", "left-over")
            assert status5 == 200 and body5["id"] == job.check_id
    finally:
        await runner.cleanup()
        await queue.stop()


async def test_tipline_run_in_webhook_mode(tg, settings):
    """`run()` with a webhook URL: setWebhook with the secret, the route on the shared HTTP server."""
    import socket

    from pydantic import SecretStr

    from bot.app import SetupError
    from adapters.run import run

    base = settings.model_copy(update={"telegram_token": SecretStr(tg.token), "telegram_api_url": tg.base_url,
                                       "telegram_webhook_url": "https://bot.example.org/tg/hook"})
    with pytest.raises(SetupError, match="TIPLINE_TELEGRAM_WEBHOOK_SECRET"):
        await run(base)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configured = base.model_copy(update={"telegram_webhook_secret": SecretStr("hook-secret"), "http_port": port})
    stop = asyncio.Event()
    task = asyncio.create_task(run(configured, stop))
    try:
        await wait_until(lambda: tg.webhook is not None or task.done(), 60)
        assert tg.webhook is not None and tg.webhook["secret_token"] == "hook-secret", task
        msg = user_message(tg, "Drinking bleach cures COVID-19", 7400)
        async with aiohttp.ClientSession() as s:
            async with s.post(f"http://127.0.0.1:{port}/tg/hook", json={"update_id": 1, "message": msg}) as r:
                assert r.status == 401
            async with s.post(f"http://127.0.0.1:{port}/tg/hook", json={"update_id": 1, "message": msg},
                              headers={"X-Telegram-Bot-Api-Secret-Token": "hook-secret"}) as r:
                assert r.status == 200
        await settle(tg, 1)
        assert not tg.called("deleteWebhook")  # webhook mode never long-polls
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
