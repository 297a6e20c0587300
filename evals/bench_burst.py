"""`tipline bench burst`: N REST checks sent at once to a running `tipline run`, and /healthz meanwhile.

A real `tipline run` child process (fresh data dir, the seed knowledge base, offline engine, the REST API on
loopback, default workers and queue cap) gets `n` concurrent `POST /v1/checks`, each with its own text. The
per-chat rate limit is lifted for the run (the API is one "chat": at the default 30/min the burst would be
429s within milliseconds, which measures the limiter, not the queue). Figures:

* time to the first answer of each POST (201 with the Result, or 202 + Location when the check did not end
  within `TIPLINE_API_WAIT_S`), p50/p95/max, and how many got each status;
* time until each client holds its Result (following 202 -> GET /v1/jobs/{n} as a client does);
* `GET /healthz` latency, polled every 50 ms from the first POST to the last Result: p50/p95/max and how many
  polls took over 100 ms (the goal) and over 500 ms (the bar). Issue 13: before the REST API went through the
  queue, /healthz stalled up to 5.8 s in such a burst; later the first request's language check loaded its
  classifier on the event loop (0.9 s), now loaded at start (core/intake/language.py `preload`);
* the server's own view: how many times its event loop was blocked for over 100 ms / 500 ms during the burst
  and the longest block, from `tipline_event_loop_lag_seconds` on /metrics (bot/metrics.py), read before and
  after. A poll every 50 ms can miss a short stall; the server's 50 ms timer does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
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
GOAL_S, BAR_S = 0.1, 0.5  # /healthz under a burst: the goal and the acceptance bar
_BUCKET = re.compile(r'^tipline_event_loop_lag_seconds_bucket\{le="([^"]+)"\} ([0-9.e+]+)$', re.MULTILINE)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values), 3), "p95": round(_pct(values, 0.95), 3),
            "max": round(max(values), 3)}


async def _loop_lag(session: aiohttp.ClientSession, base: str) -> dict[float, float]:
    """The server's event-loop lag histogram: cumulative count per upper bound (inf included); {} without it."""
    try:
        async with session.get(f"{base}/metrics") as resp:
            text = await resp.text() if resp.status == 200 else ""
    except aiohttp.ClientError:
        return {}
    return {float(le): float(n) for le, n in _BUCKET.findall(text)}


def loop_stalls(before: dict[float, float], after: dict[float, float]) -> dict:
    """Stalls between the two reads of the histogram: over the goal, over the bar, and the bound of the
    longest ("longest_le": it lasted at most that long, and longer than the bound below it)."""
    if not after:
        return {}
    diff = {le: after[le] - before.get(le, 0.0) for le in sorted(after)}
    total = diff.get(float("inf"), 0.0)
    longest = next((le for le in diff if diff[le] >= total), float("inf")) if total else 0.0
    return {"samples": int(total), "over_goal": int(total - diff.get(GOAL_S, 0.0)),
            "over_bar": int(total - diff.get(BAR_S, 0.0)),
            "longest_le": None if longest == float("inf") else longest}  # None: past the last bucket (5 s)


async def bench_burst(settings: Settings, *, n: int = 300, timeout_s: float = 900, sequential: bool = False) -> dict:
    """`n` REST checks against a `tipline run` on the given settings: all at once, or (`sequential`) one
    after another, each sent when the previous Result is in hand."""
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
                figures = await _burst(session, base, auth, n, sequential=sequential)
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


async def _burst(session: aiohttp.ClientSession, base: str, auth: dict[str, str], n: int, *,
                 sequential: bool = False) -> dict:
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

    lag_before = await _loop_lag(session, base)
    poller = asyncio.create_task(poll_health())
    t0 = time.perf_counter()
    try:
        if sequential:
            for i in range(n):
                await one(i)
        else:
            await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        done.set()
        await poller
    seconds = time.perf_counter() - t0
    every_first = [v for vs in first.values() for v in vs]
    healthz = _summary(health)
    if health:
        healthz |= {"over_goal": sum(h > GOAL_S for h in health), "over_bar": sum(h > BAR_S for h in health)}
    return {"n": n, "sequential": sequential, "seconds": round(seconds, 2), "statuses": {str(k): len(v) for k, v in sorted(first.items())},
            "first_answer_s": _summary(every_first),
            "first_answer_s_by_status": {str(k): _summary(v) for k, v in sorted(first.items())},
            "result_s": _summary(results), "healthz_s": healthz,
            "loop_stalls": loop_stalls(lag_before, await _loop_lag(session, base))}


def format_stalls(stalls: dict) -> str:
    """The server's event-loop stalls during the burst, in one line ("" when /metrics had none)."""
    if not stalls:
        return ""
    le = stalls["longest_le"]
    longest = "over 5 s" if le is None else "none" if not le else f"at most {le * 1000:.0f} ms"
    return (f"event loop, server side ({stalls['samples']} ticks of 50 ms): {stalls['over_goal']} blocked over "
            f"{GOAL_S * 1000:.0f} ms, {stalls['over_bar']} over {BAR_S * 1000:.0f} ms; longest {longest}")


def format_burst(r: dict) -> str:
    f, res, h = r["first_answer_s"], r["result_s"], r["healthz_s"]
    statuses = ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())
    lines = [
        f"{r['n']} {'sequential' if r.get('sequential') else 'concurrent'} POST /v1/checks to tipline run, all Results "
        f"in {r['seconds']} s "
        f"(peak RSS {r['peak_rss_mib']} MiB)",
        f"first answer ({statuses}): p50 {f['p50']:.3f} s, p95 {f['p95']:.3f} s, max {f['max']:.3f} s",
        f"Result in hand: p50 {res['p50']:.3f} s, p95 {res['p95']:.3f} s, max {res['max']:.3f} s ({res['n']} of {r['n']})",
        f"/healthz during the burst ({h['n']} polls): p50 {h['p50'] * 1000:.1f} ms, p95 {h['p95'] * 1000:.1f} ms, "
        f"max {h['max'] * 1000:.1f} ms; {h.get('over_goal', '?')} polls over {GOAL_S * 1000:.0f} ms (goal: none), "
        f"{h.get('over_bar', '?')} over {BAR_S * 1000:.0f} ms",
    ]
    if stalls := format_stalls(r.get("loop_stalls") or {}):
        lines.append(stalls)
    return "\n".join(lines)
