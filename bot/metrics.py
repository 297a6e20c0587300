"""Prometheus metrics (prometheus_client, text exposition format); the `/metrics` route is bot/metrics_http.py.

One `Metrics` object per process, each with its own registry (so tests and two apps in one process
don't collide on the global one). Wiring, in the composition root (adapters/run.py):

    metrics = Metrics()
    add_metrics_routes(web_app, metrics)                  # bot/metrics_http.py: GET /metrics on the aiohttp server
    ResilientSource(src, ..., observer=metrics)           # provider latency, errors, cache, circuit state
    BudgetedLLM(llm, db, settings, observer=metrics)      # LLM tokens and cost
    metrics.track_queue_depth(lambda: queue.depth)        # or metrics.set_queue_depth(n) from the queue
    metrics.observe_result(result)                        # after each check: stage latencies, verdict, match

What is exported (all names prefixed `tipline_`):
- `stage_seconds{stage}` histogram, from each `Result.steps` entry (or `stage_timer(name)`);
- `check_seconds` histogram and `checks_total{verdict,mode}`, `checks_matched_total`, `match_rate`
  (share of checks answered from an auto-tier fact-check match, since start);
- `provider_seconds{provider}` histogram per request, `provider_errors_total{provider,reason}` per failed
  request, `provider_unavailable_total{provider}` per gather that gave up;
- `cache_requests_total{provider,result="hit"|"miss"}` and `cache_hit_rate{provider}`;
- `circuit_state{provider}`: 0 closed, 1 half-open, 2 open;
- `queue_depth`;
- `event_loop_lag_seconds` histogram and `event_loop_lag_max_seconds`: how late the event loop woke a 50 ms
  timer, i.e. how long something blocked it (`watch_event_loop`, a task of `tipline run`): /healthz, every
  webhook and every reply wait that long;
- `llm_tokens_total{kind="prompt"|"completion"}`, `llm_calls_total{name}`, `llm_cost_usd_total`.
"""

from __future__ import annotations

import time
from collections import defaultdict
import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from schema.models import Result
from core.evidence.resilience import BreakerState

CIRCUIT_VALUES: dict[BreakerState, int] = {"closed": 0, "half_open": 1, "open": 2}

# Stages run from milliseconds (intake) to the per-source timeout (gather, LLM), hence the wide spread.
_STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40)
_PROVIDER_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30)
# An event-loop stall: 100 ms is the goal for /healthz under a burst, 500 ms the bar (docs/reliability.md).
LOOP_LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
LOOP_TICK_S = 0.05


class Metrics:
    """Implements the observers of core.evidence.resilient (`SourceObserver`) and core.llm.budget
    (`CostObserver`), so both report here without core importing bot."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.stage_seconds = Histogram("tipline_stage_seconds", "Time spent in each check stage.", ["stage"],
                                       buckets=_STAGE_BUCKETS, registry=r)
        self.check_seconds = Histogram("tipline_check_seconds", "Time for a whole check.",
                                       buckets=_STAGE_BUCKETS, registry=r)
        self.checks = Counter("tipline_checks", "Checks finished.", ["verdict", "mode"], registry=r)
        self.checks_matched = Counter("tipline_checks_matched", "Checks answered from a fact-check match.",
                                      registry=r)
        self.match_rate = Gauge("tipline_match_rate", "Share of checks answered from a fact-check match.",
                                registry=r)
        self.provider_seconds = Histogram("tipline_provider_seconds", "Latency of one provider request.",
                                          ["provider"], buckets=_PROVIDER_BUCKETS, registry=r)
        self.provider_errors = Counter("tipline_provider_errors", "Failed provider requests.",
                                       ["provider", "reason"], registry=r)
        self.provider_unavailable = Counter("tipline_provider_unavailable",
                                            "Evidence gathers that gave up on a provider.", ["provider"], registry=r)
        self.cache_requests = Counter("tipline_cache_requests", "Provider cache look-ups.", ["provider", "result"],
                                      registry=r)
        self.cache_hit_rate = Gauge("tipline_cache_hit_rate", "Share of provider look-ups served from cache.",
                                    ["provider"], registry=r)
        self.circuit_state = Gauge("tipline_circuit_state", "Circuit breaker: 0 closed, 1 half-open, 2 open.",
                                   ["provider"], registry=r)
        self.queue_depth = Gauge("tipline_queue_depth", "Checks waiting in the job queue.", registry=r)
        self.llm_tokens = Counter("tipline_llm_tokens", "LLM tokens used.", ["kind"], registry=r)
        self.llm_calls = Counter("tipline_llm_calls", "LLM calls, by structured-output name.", ["name"], registry=r)
        self.llm_cost_usd = Counter("tipline_llm_cost_usd", "Estimated LLM cost in US dollars.", registry=r)
        self.loop_lag = Histogram("tipline_event_loop_lag_seconds", "How long the event loop was blocked: how "
                                  "late it woke a timer (sampled every 50 ms).", buckets=LOOP_LAG_BUCKETS, registry=r)
        self.loop_lag_max = Gauge("tipline_event_loop_lag_max_seconds", "The longest event-loop stall since start.",
                                  registry=r)
        # Plain counts behind the ratio gauges (prometheus_client counters are not meant to be read back).
        self._cache_counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # provider -> [hits, total]
        self._checks_total = 0
        self._checks_matched = 0

    # --- core observers ----------------------------------------------------------------------------

    def attempt(self, provider: str, seconds: float, error: str | None) -> None:
        self.provider_seconds.labels(provider).observe(seconds)
        if error is not None:
            self.provider_errors.labels(provider, error).inc()

    def cache(self, provider: str, hit: bool) -> None:
        self.cache_requests.labels(provider, "hit" if hit else "miss").inc()
        counts = self._cache_counts[provider]
        counts[0] += hit
        counts[1] += 1
        self.cache_hit_rate.labels(provider).set(counts[0] / counts[1])

    def breaker(self, provider: str, state: BreakerState) -> None:
        self.circuit_state.labels(provider).set(CIRCUIT_VALUES[state])

    def unavailable(self, provider: str) -> None:
        self.provider_unavailable.labels(provider).inc()

    def llm_cost(self, name: str, prompt_tokens: int, completion_tokens: int, usd: float) -> None:
        self.llm_calls.labels(name).inc()
        self.llm_tokens.labels("prompt").inc(max(0, prompt_tokens))
        self.llm_tokens.labels("completion").inc(max(0, completion_tokens))
        self.llm_cost_usd.inc(max(0.0, usd))

    # --- the bot's own --------------------------------------------------------------------------

    def observe_result(self, result: Result, seconds: float | None = None) -> None:
        """After a check: each stage's time from `result.steps`, the verdict, whether a match answered it."""
        for step in result.steps:
            self.stage_seconds.labels(step.name).observe(step.ms / 1000)
        self.check_seconds.observe(seconds if seconds is not None else sum(s.ms for s in result.steps) / 1000)
        self.checks.labels(result.verdict.value, result.mode).inc()
        matched = any(m.tier == "auto" for m in result.matches)
        self._checks_total += 1
        if matched:
            self._checks_matched += 1
            self.checks_matched.inc()
        self.match_rate.set(self._checks_matched / self._checks_total)

    @contextmanager
    def stage_timer(self, stage: str) -> Iterator[None]:
        """Time a stage that is not in `Result.steps` (e.g. the queue wait or sending the reply)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stage_seconds.labels(stage).observe(time.perf_counter() - t0)

    def set_queue_depth(self, depth: int) -> None:
        self.queue_depth.set(depth)

    def track_queue_depth(self, depth: Callable[[], float]) -> None:
        """Read the depth at scrape time instead (the callable must be cheap and non-blocking)."""
        self.queue_depth.set_function(depth)

    async def watch_event_loop(self, stop: asyncio.Event, tick_s: float = LOOP_TICK_S) -> None:
        """Until `stop`: sleep `tick_s` and record how much later than asked the loop woke up (a task of
        `tipline run`; 20 wake-ups a second, microseconds each)."""
        worst = 0.0
        while not stop.is_set():
            t0 = time.perf_counter()
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), tick_s)
            lag = max(0.0, time.perf_counter() - t0 - tick_s)
            self.loop_lag.observe(lag)
            if lag > worst:
                worst = lag
                self.loop_lag_max.set(lag)

    def render(self) -> bytes:
        return generate_latest(self.registry)

