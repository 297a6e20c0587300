"""Prometheus metrics: what the observers record, and GET /metrics over real HTTP on 127.0.0.1."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics import Metrics
from bot.metrics_http import add_metrics_routes
from schema.models import Match, Result, Step, Verdict
from tests.fakes.loopback import serve_on_loopback


def sample(metrics: Metrics, metric: str, /, **labels: str) -> float | None:
    """One sample's value from the exposition text, parsed as Prometheus would."""
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == metric and s.labels == labels:
                return s.value
    return None


def result(verdict: Verdict, *, matched: bool, mode: str = "offline") -> Result:
    matches = [Match(factcheck_id="f1", claim="c", verdict=verdict, similarity=0.9,
                     tier="auto" if matched else "suggest")]
    return Result(id="abc", text="t", verdict=verdict, label=verdict.label, confidence=0.8, reasoning="r",
                  matches=matches, mode=mode, steps=[Step(name="intake", ms=2.0), Step(name="match", ms=300.0)])


def test_results_feed_stage_latency_verdicts_and_match_rate():
    m = Metrics()
    m.observe_result(result(Verdict.REFUTED, matched=True))
    m.observe_result(result(Verdict.NOT_ENOUGH_EVIDENCE, matched=False))
    m.observe_result(result(Verdict.REFUTED, matched=True, mode="llm"), seconds=1.5)
    m.observe_result(result(Verdict.MIXED, matched=False))
    assert sample(m, "tipline_stage_seconds_count", stage="match") == 4
    assert sample(m, "tipline_stage_seconds_bucket", stage="match", le="0.25") == 0
    assert sample(m, "tipline_stage_seconds_bucket", stage="match", le="0.5") == 4
    assert sample(m, "tipline_stage_seconds_sum", stage="intake") == pytest.approx(0.008)
    assert sample(m, "tipline_checks_total", verdict="REFUTED", mode="offline") == 1
    assert sample(m, "tipline_checks_total", verdict="REFUTED", mode="llm") == 1
    assert sample(m, "tipline_checks_matched_total") == 2
    assert sample(m, "tipline_match_rate") == 0.5
    assert sample(m, "tipline_check_seconds_sum") == pytest.approx(0.302 * 3 + 1.5)


def test_provider_cache_circuit_queue_and_cost():
    m = Metrics()
    m.attempt("gdelt", 0.2, None)
    m.attempt("gdelt", 1.5, "HTTP 503")
    m.attempt("gdelt", 0.3, "timed out")
    m.unavailable("gdelt")
    for hit in (True, False, False, True):
        m.cache("gdelt", hit)
    m.cache("brave", False)
    m.breaker("gdelt", "open")
    m.breaker("brave", "half_open")
    m.set_queue_depth(17)
    m.llm_cost("stance", 1000, 200, 0.00027)
    assert sample(m, "tipline_provider_seconds_count", provider="gdelt") == 3
    assert sample(m, "tipline_provider_errors_total", provider="gdelt", reason="HTTP 503") == 1
    assert sample(m, "tipline_provider_errors_total", provider="gdelt", reason="timed out") == 1
    assert sample(m, "tipline_provider_unavailable_total", provider="gdelt") == 1
    assert sample(m, "tipline_cache_requests_total", provider="gdelt", result="hit") == 2
    assert sample(m, "tipline_cache_hit_rate", provider="gdelt") == 0.5
    assert sample(m, "tipline_cache_hit_rate", provider="brave") == 0.0
    assert sample(m, "tipline_circuit_state", provider="gdelt") == 2
    assert sample(m, "tipline_circuit_state", provider="brave") == 1
    assert sample(m, "tipline_queue_depth") == 17
    assert sample(m, "tipline_llm_tokens_total", kind="completion") == 200
    assert sample(m, "tipline_llm_calls_total", name="stance") == 1
    assert sample(m, "tipline_llm_cost_usd_total") == 0.00027
    depth = [3]
    m.track_queue_depth(lambda: depth[0])  # read at scrape time
    depth[0] = 9
    assert sample(m, "tipline_queue_depth") == 9


def test_each_metrics_object_has_its_own_registry():
    a, b = Metrics(), Metrics()
    a.set_queue_depth(5)
    assert sample(b, "tipline_queue_depth") == 0


async def test_metrics_route_over_http():
    app = web.Application()
    metrics = add_metrics_routes(app)
    metrics.breaker("gdelt", "open")
    metrics.attempt("gdelt", 0.1, "HTTP 500")
    runner, port = await serve_on_loopback(app)
    try:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=")
            body = await resp.text()
    finally:
        await runner.cleanup()
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert {"tipline_stage_seconds", "tipline_provider_seconds", "tipline_provider_errors", "tipline_circuit_state",
            "tipline_cache_hit_rate", "tipline_queue_depth", "tipline_match_rate", "tipline_llm_cost_usd"} <= set(families)
    assert 'tipline_circuit_state{provider="gdelt"} 2.0' in body
