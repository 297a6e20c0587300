"""`tipline bench watch`: watched public channels at scale, against a local t.me
(evals/preview_server.py) serving `channels` channels of `posts` posts each, in a throwaway data dir with the
seed knowledge base and the real corroborator.

1. **First read**: every channel read once (its preview's first page, as `/watch add` does), one after
   another with no pause between requests: posts stored per second, wall and CPU.
2. **Checks alone**: `checks` checks one after another through `CheckService.check` (the engine, "also
   reported by", the stored Result), each a claim of the knowledge base with a note and a number of its own
   (so its embedding is not cached): their median and p95 latency with nothing else running.
3. **Steady state**: `cycles` times, every channel gains `new` posts and is read once (no pause): wall, CPU
   and requests per cycle, posts stored.
4. **Live**: the poller of `tipline run` (`WatchService.run`) with the bench's interval, pause and tick, for
   three intervals, while posts appear at random channels at the rate `channels` channels adding `new` posts
   per 10 minutes make (1 post/s for 200 and 3), and a check starts every `check_every_s` beside it. The
   defaults scale `tipline run`'s schedule down by five, keeping its proportions: 200 channels 0.2 s apart
   in a 120 s interval take a third of it, as 200 channels 1 s apart do of 600 s. Each post's lag
   is the time from its appearing on the page to the "also reported by" lookup of its text naming its
   channel; the goal is one interval + 30 s, so lag minus the interval is reported, for the posts of the
   last two intervals. Those of the first are reported apart: the steady cycles read every channel at
   once, so all fall due together then, as after a restart, and the last of them waits for the others. Requests per minute
   are counted at the local t.me (which shares the bench's event loop, so the gaps it sees between two
   requests carry that loop's delays).

Post texts of parts 1 and 3 are the knowledge base's claims and titles, each with a channel's own note, so
stories spread over many channels as they do; the live posts are made-up names and words (one story each),
so the lookup can tell them apart.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import build_app
from bot.check_service import CheckService
from bot.requests import CheckRequest
from bot.settings import Settings
from bot.watch import WatchService, message_key
from evals.evaluation import EvalDataError
from core.watch.telegram_preview import PreviewReader
from evals.bench import temp_settings
from evals.bench_machine import load_average
from evals.preview_server import BenchChannel, BenchPost, BenchPreviewServer
from storage.watched import WatchStore

GOAL_EXTRA_S = 30.0  # lag goal: one poll interval plus this
_NOTES = ["Подробности позже.", "Следим за ситуацией.", "Деталі згодом.", "More soon.", "Источник: местные СМИ.",
          "Джерело: місцева влада.", "Developing.", "Фото в комментариях."]
_SYL = ["ко", "ра", "ми", "ло", "ве", "на", "ти", "су", "да", "ре", "зо", "пы", "ха", "ле", "мо", "ст", "ни", "бо"]


def _name(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYL) for _ in range(parts)).capitalize()


def live_text(rng: random.Random) -> str:
    """A made-up news line of made-up names and words, so two of them are seldom one story, nor one of them
    a story of the knowledge base's claims, and the lookup of one names its own channel."""
    words = " ".join(_name(rng, rng.randint(2, 4)).lower() for _ in range(8))
    return f"{_name(rng)} {_name(rng, 4)}: {words}, {_name(rng)}."


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _latency(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(_pct(values, 0.95) * 1000, 1), "max_ms": round(max(values) * 1000, 1)}


async def bench_watch(settings: Settings, *, channels: int = 200, posts: int = 20, new: int = 3, cycles: int = 2,
                      interval_s: float = 120.0, gap_s: float = 0.2, tick_s: float = 30.0, checks: int = 20,
                      live_rate: float | None = None, check_every_s: float = 1.0, seed: int = 7,
                      progress=None) -> dict:
    sizes = {"--channels": channels, "--posts": posts, "--new": new, "--cycles": cycles, "--checks": checks}
    bad = [flag for flag, value in sizes.items() if value < 1]
    if bad:
        raise EvalDataError(f"bench watch needs {bad[0]} of at least 1")
    if channels * gap_s >= interval_s:
        raise EvalDataError(f"{channels} channels {gap_s:g} s apart take longer than the --interval of "
                            f"{interval_s:g} s: raise --interval or lower --gap")
    say = progress or (lambda _m: None)
    rng = random.Random(seed)
    server = await BenchPreviewServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
            async with build_app(temp_settings(settings, Path(tmp)), seed=True) as app:
                assert app.corroborator is not None
                return await _run(app, server, rng, say, channels=channels, posts=posts, new=new, cycles=cycles,
                                  interval_s=interval_s, gap_s=gap_s, tick_s=tick_s, checks=checks,
                                  rate=live_rate if live_rate is not None else channels * new / 600.0,
                                  check_every_s=check_every_s)
    finally:
        await server.stop()


async def _run(app, server: BenchPreviewServer, rng: random.Random, say, *, channels: int, posts: int, new: int,
               cycles: int, interval_s: float, gap_s: float, tick_s: float, checks: int, rate: float,
               check_every_s: float) -> dict:
    load_at_start = load_average()
    fcs = await app.db.all_factchecks()
    pool = [t for fc in fcs for t in (fc.claim, fc.title) if t and len(t) > 20]
    names = [f"bench_ch{k:04d}" for k in range(channels)]
    now = datetime.now(UTC)

    def add_post(ch: BenchChannel, text: str, at: datetime) -> BenchPost:
        p = BenchPost((ch.posts[-1].id if ch.posts else 0) + 1, text, at, views=f"{rng.randint(1, 99)}.{rng.randint(0, 9)}K",
                      shown_at=time.time())
        ch.posts.append(p)
        return p

    for k, name in enumerate(names):
        ch = server.channels.setdefault(name, BenchChannel(name, f"Bench {k}"))
        for j in range(posts):
            add_post(ch, f"{rng.choice(pool)} {rng.choice(_NOTES)}", now - timedelta(minutes=5 * (posts - j)))
    store = WatchStore(app.db)
    watch = WatchService(store, app.corroborator, PreviewReader(server.base_url, max_bytes=app.settings.fetch_max_bytes),
                         interval_s=interval_s, request_gap_s=0.0, tick_s=tick_s)
    for name in names:
        await store.add(name, by="bench", now=time.time())
    checker = CheckService(app.engine)
    check_texts = [fc.claim for fc in fcs]

    async def one_check(i: int) -> float:
        # Each text is new (a note and a number of its own), so every check embeds it as a user's message is.
        text = f"{check_texts[i % len(check_texts)]} {rng.choice(_NOTES)} ({i})"
        t0 = time.perf_counter()
        await checker.check(text, request=CheckRequest(text, chat_id="bench", target_id=i, platform="bench"))
        return time.perf_counter() - t0

    # 1. First read: every channel's first page.
    say(f"first read of {channels} channels")
    reqs, cpu, t0 = len(server.requests), time.process_time(), time.perf_counter()
    reports = [await watch.poll(name) for name in names]
    first_wall, first_cpu = time.perf_counter() - t0, time.process_time() - cpu
    first_stored = sum(r.stored for r in reports)
    first = {"channels": channels, "posts_stored": first_stored, "requests": len(server.requests) - reqs,
             "wall_s": round(first_wall, 1), "cpu_s": round(first_cpu, 1),
             "posts_per_s": round(first_stored / first_wall, 1) if first_wall else 0.0,
             "statuses": sorted({r.status for r in reports})}

    # 2. Checks with nothing else running (two untimed first: the models' first calls).
    say(f"{checks} checks alone")
    for i in range(2):
        await one_check(10_000 + i)
    alone = [await one_check(i) for i in range(checks)]

    # 3. Steady state: every channel gains `new` posts, then one read of each.
    say(f"{cycles} steady cycles")
    steady = []
    for _ in range(cycles):
        for name in names:
            for _ in range(new):
                add_post(server.channels[name], f"{rng.choice(pool)} {rng.choice(_NOTES)}", datetime.now(UTC))
        reqs, cpu, t0 = len(server.requests), time.process_time(), time.perf_counter()
        reports = [await watch.poll(name) for name in names]
        steady.append({"wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - cpu, 1),
                       "requests": len(server.requests) - reqs, "posts_stored": sum(r.stored for r in reports)})

    # 4. Live: the poller as `tipline run` runs it, posts appearing, checks beside it.
    phase_s = 3 * interval_s
    say(f"live for {phase_s:g} s: posts at {rate:.2f}/s, interval {interval_s:g} s, pause {gap_s:g} s, tick {tick_s:g} s")
    watch.request_gap_s = gap_s
    stop, producing = asyncio.Event(), asyncio.Event()
    shown: dict[str, tuple[str, str, float]] = {}  # key -> (channel, text, shown at)
    steady_from = 0.0  # posts shown after the first interval: the poller's schedule has settled
    lags: dict[str, float] = {}  # until the lookup names the post's channel
    stored_lags: dict[str, float] = {}  # until the post is a stored tracked message
    beside: list[float] = []
    live_rng = random.Random(rng.random())

    async def produce() -> None:
        end = time.time() + phase_s
        while rate > 0 and time.time() < end:
            await asyncio.sleep(live_rng.expovariate(rate))
            name = live_rng.choice(names)
            p = add_post(server.channels[name], live_text(live_rng), datetime.now(UTC))
            shown[message_key(name, p.id)] = (name, p.text, p.shown_at)
        await asyncio.sleep(max(0.0, end - time.time()))
        producing.set()

    async def find() -> None:
        while not stop.is_set():
            pending = [k for k in shown if k not in lags]
            if pending:
                rows = await app.corroborator.store.get(pending)
                for key in pending:
                    if key not in rows:
                        continue
                    name, text, at = shown[key]
                    stored_lags.setdefault(key, time.time() - at)
                    also = await app.corroborator.lookup(text)
                    named = [] if also is None else [r.chat_id for r in [*also.items, also.first_seen_in] if r]
                    if f"@{name}" in named:
                        lags[key] = time.time() - at
            await asyncio.sleep(0.5)

    async def check_beside() -> None:
        i = 0
        while not producing.is_set():
            t0 = time.perf_counter()
            beside.append(await one_check(20_000 + i))
            i += 1
            await asyncio.sleep(max(0.0, check_every_s - (time.perf_counter() - t0)))

    reqs_before = len(server.requests)
    started, mono = time.time(), time.monotonic()
    steady_from = started + interval_s
    poller = asyncio.create_task(watch.run(stop))
    finder = asyncio.create_task(find())
    await asyncio.gather(produce(), check_beside())
    deadline = time.time() + interval_s + tick_s + 60
    while time.time() < deadline and len(lags) < len(shown):
        await asyncio.sleep(1)
    stop.set()
    await asyncio.gather(poller, finder)
    missed = []  # posts stored but never named by the lookup: what it named instead
    for key in [k for k in shown if k not in lags][:3]:
        name, text, _at = shown[key]
        also = await app.corroborator.lookup(text)
        missed.append({"post": key, "stored": key in stored_lags, "text": text,
                       "named": [] if also is None else [r.chat_id for r in [*also.items, also.first_seen_in] if r],
                       "total": 0 if also is None else also.total})
    live_s = time.time() - started
    live_reqs = [t for t in server.requests[reqs_before:] if t >= mono]
    per_minute = [sum(1 for t in live_reqs if s <= t < s + 60) for s in (mono + 60 * i for i in range(int(live_s // 60)))]
    gaps = [b - a for a, b in zip(live_reqs, live_reqs[1:])]
    lag_values = [v for k, v in lags.items() if shown[k][2] >= steady_from]
    burst_values = [v for k, v in lags.items() if shown[k][2] < steady_from]
    stored_values = list(stored_lags.values())
    cycle_requests = statistics.median(s["requests"] for s in steady)
    await watch.aclose()
    return {
        "load_average": {"start": load_at_start, "end": load_average()}, "cpus": os.cpu_count(),
        "config": {"channels": channels, "posts": posts, "new_per_cycle": new, "cycles": cycles,
                   "interval_s": interval_s, "gap_s": gap_s, "tick_s": tick_s, "checks": checks,
                   "check_every_s": check_every_s},
        "first_read": first,
        "checks_alone": _latency(alone),
        "steady": steady,
        "live": {
            "seconds": round(live_s, 1), "posts_shown": len(shown), "stored": len(stored_lags),
            "steady_posts": len([k for k in shown if shown[k][2] >= steady_from]),
            "found_by_lookup": len(lags), "not_found_examples": missed,
            "stored_lag_s": {"p50": round(statistics.median(stored_values), 1) if stored_values else None,
                             "max": round(max(stored_values), 1) if stored_values else None},
            "post_rate_per_s": round(rate, 2),
            "lag_s": {"p50": round(statistics.median(lag_values), 1) if lag_values else None,
                      "p95": round(_pct(lag_values, 0.95), 1) if lag_values else None,
                      "max": round(max(lag_values), 1) if lag_values else None},
            "lag_minus_interval_s": {"p50": round(statistics.median(lag_values) - interval_s, 1) if lag_values else None,
                                     "max": round(max(lag_values) - interval_s, 1) if lag_values else None},
            "goal_s": interval_s + GOAL_EXTRA_S,
            # Posts of the first interval, when every channel fell due at once (as after a restart).
            "first_interval_lag_s": {"n": len(burst_values),
                                     "p50": round(statistics.median(burst_values), 1) if burst_values else None,
                                     "max": round(max(burst_values), 1) if burst_values else None},
            "requests": len(live_reqs), "requests_per_min": round(len(live_reqs) / (live_s / 60), 1),
            "max_requests_in_a_minute": max(per_minute, default=len(live_reqs)),
            "min_gap_between_requests_s": round(min(gaps), 2) if gaps else None,
            "checks_beside": _latency(beside), "check_every_s": check_every_s,
            # What `tipline run` sends with its own interval: the same requests per cycle, every 10 minutes.
            "requests_per_min_at_600s": round(cycle_requests / 10.0, 1),
        },
    }


def format_watch(r: dict) -> str:
    c, f, live = r["config"], r["first_read"], r["live"]
    lines = [f"tipline bench watch: {c['channels']} channels x {c['posts']} posts, +{c['new_per_cycle']} per cycle",
             f"first read: {f['posts_stored']} posts in {f['wall_s']} s wall ({f['posts_per_s']} posts/s), "
             f"{f['cpu_s']} s CPU, {f['requests']} requests",
             f"checks alone: p50 {r['checks_alone']['p50_ms']} ms, p95 {r['checks_alone']['p95_ms']} ms "
             f"(n={r['checks_alone']['n']})"]
    for i, s in enumerate(r["steady"], 1):
        lines.append(f"steady cycle {i}: {s['posts_stored']} posts, {s['requests']} requests, {s['wall_s']} s wall, "
                     f"{s['cpu_s']} s CPU (no pause between requests)")
    lag, extra, burst = live["lag_s"], live["lag_minus_interval_s"], live["first_interval_lag_s"]
    lines += [f"live {live['seconds']} s (interval {c['interval_s']:g} s, pause {c['gap_s']:g} s, tick {c['tick_s']:g} s):"
              f" {live['posts_shown']} posts at {live['post_rate_per_s']}/s, {live['found_by_lookup']} found by the lookup",
              f"  last two intervals ({live['steady_posts']} posts): lag p50 {lag['p50']} s, p95 {lag['p95']} s, "
              f"max {lag['max']} s; minus the interval: p50 {extra['p50']} s, max {extra['max']} s (goal: lag <= "
              f"{live['goal_s']:g} s)",
              f"  first interval, every channel due at once ({burst['n']} posts): lag p50 {burst['p50']} s, "
              f"max {burst['max']} s",
              f"  requests: {live['requests']} ({live['requests_per_min']}/min, at most "
              f"{live['max_requests_in_a_minute']} in a minute, >= {live['min_gap_between_requests_s']} s apart)",
              f"  checks beside the poller: p50 {live['checks_beside'].get('p50_ms')} ms, p95 "
              f"{live['checks_beside'].get('p95_ms')} ms (n={live['checks_beside']['n']})"]
    return "\n".join(lines)
