"""`tipline bench burst`: N REST checks sent at once to a running `tipline run`, and /healthz meanwhile.

A real `tipline run` child process (fresh data dir, the seed knowledge base, offline engine, the REST API on
loopback, default workers and queue cap) gets `n` concurrent `POST /v1/checks`, each with its own text. The
per-chat rate limit is lifted for the run (the API is one "chat": at the default 30/min the burst would be
429s within milliseconds, which measures the limiter, not the queue). Figures:

* time to the first answer of each POST (201 with the Result, or 202 + Location when the check did not end
  within `TIPLINE_API_WAIT_S`), p50/p95/max, and how many got each status;
* time until each client holds its Result (following 202 -> GET /v1/jobs/{n} as a client does);
* `GET /healthz` latency, polled every 50 ms from the first POST to the last Result: p50/p95/max
  (issue 13: before the REST API went through the queue, /healthz stalled up to 5.8 s in such a burst).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from bot.settings import Settings
from evals.bench_processes import BenchProcessError, _Child, _wait_ready, child_env, free_port

TEXTS = [
    "The 5G rollout caused the coronavirus outbreak",
    "Vaccines cause autism in children",
    "Drinking bleach cures COVID-19",
    "The Earth is flat and NASA hides it",
    "The moon landing was staged in a studio",
    "Eating carrots lets you see in total darkness",
    "Garlic prevents infection with the new coronavirus",
    "Вышки 5G распространяют коронавирус",
]
HEALTHZ_EVERY_S = 0.05


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values), 3), "p95": round(_pct(values, 0.95), 3),
            "max": round(max(values), 3)}


async def bench_burst(settings: Settings, *, n: int = 300, timeout_s: float = 900) -> dict:
    token = "bench-burst-token"
    with tempfile.TemporaryDirectory(prefix="tipline-burst-") as tmp:
        scratch = Path(tmp)
        port = free_port()
        env = child_env(settings.model_copy(update={"data_dir": scratch / "data"}), api_token=token,
                        http_host="127.0.0.1", http_port=port, chat_rate_per_minute=1_000_000,
                        user_rate_per_minute=1_000_000)
        child = _Child(["run"], env, scratch)
        base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
        try:
            # limit=0: every POST on its own connection at once, as n separate clients would.
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                             timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
                await _wait_ready(session, f"{base}/healthz", child, timeout_s)
                figures = await _burst(session, base, auth, n)
        except BaseException:
            if child.running():
                child.proc.kill()
            with contextlib.suppress(BenchProcessError):
                await child.wait(60)
            raise
        child.proc.send_signal(signal.SIGTERM)
        _, rss = await child.wait(timeout_s)
    figures["peak_rss_mib"] = round(rss, 1)
    return figures


async def _burst(session: aiohttp.ClientSession, base: str, auth: dict[str, str], n: int) -> dict:
    first: dict[int, list[float]] = {}
    results: list[float] = []
    health: list[float] = []
    done = asyncio.Event()

    async def poll_health() -> None:
        while not done.is_set():
            t = time.perf_counter()
            async with session.get(f"{base}/healthz") as resp:
                await resp.read()
            health.append(time.perf_counter() - t)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), HEALTHZ_EVERY_S)

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        body = {"text": f"{TEXTS[i % len(TEXTS)]} (burst #{i})"}
        async with session.post(f"{base}/v1/checks", headers=auth, json=body) as resp:
            await resp.read()
            first.setdefault(resp.status, []).append(time.perf_counter() - t0)
            status, location = resp.status, resp.headers.get("Location", "")
        while status == 202:  # a client polls the job until its Result is there
            await asyncio.sleep(0.2)
            async with session.get(f"{base}{location}", headers=auth) as resp:
                await resp.read()
                status = resp.status
        if status in (200, 201):
            results.append(time.perf_counter() - t0)

    poller = asyncio.create_task(poll_health())
    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        done.set()
        await poller
    seconds = time.perf_counter() - t0
    every_first = [v for vs in first.values() for v in vs]
    return {"n": n, "seconds": round(seconds, 2), "statuses": {str(k): len(v) for k, v in sorted(first.items())},
            "first_answer_s": _summary(every_first),
            "first_answer_s_by_status": {str(k): _summary(v) for k, v in sorted(first.items())},
            "result_s": _summary(results), "healthz_s": _summary(health)}


def format_burst(r: dict) -> str:
    f, res, h = r["first_answer_s"], r["result_s"], r["healthz_s"]
    statuses = ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())
    return "\n".join([
        f"{r['n']} concurrent POST /v1/checks to tipline run, all Results in {r['seconds']} s "
        f"(peak RSS {r['peak_rss_mib']} MiB)",
        f"first answer ({statuses}): p50 {f['p50']:.3f} s, p95 {f['p95']:.3f} s, max {f['max']:.3f} s",
        f"Result in hand: p50 {res['p50']:.3f} s, p95 {res['p95']:.3f} s, max {res['max']:.3f} s ({res['n']} of {r['n']})",
        f"/healthz during the burst ({h['n']} polls): p50 {h['p50'] * 1000:.1f} ms, p95 {h['p95'] * 1000:.1f} ms, "
        f"max {h['max'] * 1000:.1f} ms",
    ])
