"""Fault injection: ResilientSource over a real HTTP source talking to a misbehaving provider on 127.0.0.1.

Timeouts, 429 storms with Retry-After, 500s, malformed JSON and a slow drip. Whatever the provider does,
every gather ends with a list of valid Evidence or a `ProviderUnavailable`; the circuit opens on a run of
failures, fails fast without sending anything, and recovers once the provider does.

Back-off waits and the breaker's cooldown run on a FakeClock (no real sleeping); only the per-attempt
timeout is real time, because it bounds real network reads.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import aiohttp
import pytest

from bot.metrics import Metrics
from bot.settings import Settings
from core.evidence.base import ClaimQuery, Evidence
from core.evidence.resilient import FallbackSource, ResilientSource, protect_sources
from core.evidence.resilience import CircuitBreaker, FakeClock, ProviderHTTPError, ProviderUnavailable, RetryPolicy, TokenBucket
from storage.cache import TTLCache
from storage.sqlite import Database
from tests.fakes.flaky_api import FlakyAPI, Reply

ATTEMPT_TIMEOUT_S = 0.3


class HTTPSearchSource:
    """A minimal EvidenceSource over the fake provider, written the way real sources are: non-2xx becomes
    ProviderHTTPError (with Retry-After), the body must parse, and it knows nothing about retries."""

    def __init__(self, session: aiohttp.ClientSession, url: str, name: str = "flaky", *,
                 label: str = "flaky search", searches_web: bool = True):
        self.session = session
        self.url = url
        self.name = name
        self.label = label
        self.searches_web = searches_web

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        async with self.session.get(self.url, params={"q": query.search_queries[0]}) as resp:
            if resp.status != 200:
                raise ProviderHTTPError.from_response(resp)
            data = await resp.json()
        return [Evidence(url=r["url"], title=r["title"], snippet=r["snippet"], source=self.name, source_type="news")
                for r in data["results"][:limit]]


@pytest.fixture
async def api():
    a = await FlakyAPI().start()
    yield a
    await a.stop()


@pytest.fixture
async def session():
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def db(tmp_path: Path):
    d = await Database.open(tmp_path / "faults.sqlite3")
    yield d
    await d.close()


def wrap(source, clock: FakeClock, *, cache: TTLCache | None = None, failures: int = 3, retries: int = 2,
         deadline_s: float | None = 30.0, metrics: Metrics | None = None) -> ResilientSource:
    return ResilientSource(
        source, bucket=TokenBucket(6000, burst=100, clock=clock, sleep=clock.sleep),
        breaker=CircuitBreaker(failures, cooldown_s=60, clock=clock),
        retries=RetryPolicy(retries=retries, base_s=0.5, rng=random.Random(7).random), cache=cache, ttl=3600,
        deadline_s=deadline_s, attempt_timeout_s=ATTEMPT_TIMEOUT_S, label="news search", observer=metrics,
        clock=clock, sleep=clock.sleep)


def q(text: str) -> ClaimQuery:
    return ClaimQuery(claim=text)


async def outcome(source: ResilientSource, text: str) -> list[Evidence] | ProviderUnavailable:
    """The only two ways a gather may end; anything else escapes and fails the test."""
    try:
        found = await source.gather(q(text), limit=5)
    except ProviderUnavailable as exc:
        assert exc.user_message == "news search is temporarily unavailable"
        return exc
    assert all(isinstance(e, Evidence) and e.url.startswith("https://") for e in found)
    return found


@pytest.mark.parametrize("fault", [Reply.error(500), Reply.error(503), Reply.hang(), Reply.drip(0.2),
                                   *Reply.storm(1, retry_after="1")])
async def test_one_transient_fault_is_retried_away(api, session, fault):
    clock = FakeClock()
    api.push(fault)
    source = wrap(HTTPSearchSource(session, api.url), clock)
    found = await outcome(source, "vaccines")
    assert isinstance(found, list) and len(found) == 3
    assert api.hits == 2 and source.stats.retries == 1
    assert source.breaker_state == "closed"


async def test_429_storm_honours_retry_after_then_gives_up_typed(api, session):
    clock = FakeClock()
    api.push(*Reply.storm(10, retry_after="2"))
    source = wrap(HTTPSearchSource(session, api.url), clock, failures=10, retries=3)
    result = await outcome(source, "storm")
    assert isinstance(result, ProviderUnavailable) and "HTTP 429" in result.reason
    assert api.hits == 4
    assert len(clock.sleeps) == 3 and all(s >= 2.0 for s in clock.sleeps)  # never sooner than asked


async def test_retry_after_as_http_date(api, session):
    clock = FakeClock()
    api.push(Reply.error(429, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"))  # in the past: retry at once
    source = wrap(HTTPSearchSource(session, api.url), clock)
    assert isinstance(await outcome(source, "date"), list)
    assert api.hits == 2


async def test_retry_after_past_the_deadline_fails_fast(api, session):
    clock = FakeClock()
    api.push(*Reply.storm(1, retry_after="20"))
    source = wrap(HTTPSearchSource(session, api.url), clock, deadline_s=8.0)
    result = await outcome(source, "late")
    assert isinstance(result, ProviderUnavailable) and "no time left" in result.reason
    assert api.hits == 1 and clock.sleeps == []


async def test_malformed_json_is_not_retried(api, session):
    clock = FakeClock()
    api.push(Reply.malformed())
    source = wrap(HTTPSearchSource(session, api.url), clock)
    result = await outcome(source, "garbage")
    assert isinstance(result, ProviderUnavailable)
    assert api.hits == 1


async def test_slow_drip_cannot_hold_a_check_past_its_deadline(api, session):
    # Real time here: the drip would take ~40 s per attempt; the wrapper must give up within its deadline.
    api.default = Reply.drip(0.2)
    source = ResilientSource(HTTPSearchSource(session, api.url), bucket=None, breaker=None,
                             retries=RetryPolicy(retries=5, base_s=0.01), cache=None, ttl=0, deadline_s=1.0,
                             label="news search")
    t0 = time.monotonic()
    result = await outcome(source, "drip")
    assert isinstance(result, ProviderUnavailable)
    assert time.monotonic() - t0 < 5.0


async def test_circuit_opens_fails_fast_and_recovers(api, session):
    clock = FakeClock()
    metrics = Metrics()
    api.default = Reply.error(500)
    source = wrap(HTTPSearchSource(session, api.url), clock, failures=3, retries=1, metrics=metrics)

    assert isinstance(await outcome(source, "a"), ProviderUnavailable)  # 2 attempts
    assert source.breaker_state == "closed"
    assert isinstance(await outcome(source, "b"), ProviderUnavailable)  # 3rd failure opens it
    assert source.breaker_state == "open" and api.hits == 3

    for text in ("c", "d", "e"):  # open: refused without a request
        result = await outcome(source, text)
        assert isinstance(result, ProviderUnavailable) and "circuit open" in result.reason
    assert api.hits == 3 and source.stats.short_circuits == 3

    clock.advance(60)
    assert source.breaker_state == "half_open"
    assert isinstance(await outcome(source, "f"), ProviderUnavailable)  # the probe fails: open again
    assert source.breaker_state == "open" and api.hits == 4

    api.default = Reply.ok()  # the provider comes back
    clock.advance(60)
    found = await outcome(source, "g")
    assert isinstance(found, list) and found
    assert source.breaker_state == "closed" and source.breaker.opens == 2
    assert isinstance(await outcome(source, "h"), list)

    text = metrics.render().decode()
    assert 'tipline_circuit_state{provider="flaky"} 0.0' in text
    assert 'tipline_provider_errors_total{provider="flaky",reason="HTTP 500"} 4.0' in text
    assert 'tipline_provider_unavailable_total{provider="flaky"} 6.0' in text


async def test_mixed_faults_every_gather_ends_valid_or_typed(api, session, db):
    """A long run of random faults: no gather escapes with anything but Evidence or ProviderUnavailable,
    and once the provider is healthy again (after the cooldown) answers come back."""
    clock = FakeClock()
    rng = random.Random(2026)
    faults = [Reply.ok(), Reply.error(500), Reply.error(502), Reply.hang(), Reply.malformed(), Reply.drip(0.2),
              *Reply.storm(1, retry_after="1"), Reply.error(429, retry_after="Thu, 01 Jan 2099 00:00:00 GMT")]
    api.push(*(rng.choice(faults) for _ in range(40)))
    api.default = Reply.error(503)
    source = wrap(HTTPSearchSource(session, api.url), clock, cache=TTLCache(db, clock=clock), failures=4)
    outcomes = []
    for i in range(25):
        outcomes.append(await outcome(source, f"claim {i}"))
        clock.advance(rng.choice([0, 5, 30]))
    assert any(isinstance(o, list) for o in outcomes)
    assert any(isinstance(o, ProviderUnavailable) for o in outcomes)
    assert source.breaker.opens >= 1

    api.script.clear()
    api.default = Reply.ok()
    clock.advance(60)
    assert isinstance(await outcome(source, "after the storm"), list)
    assert source.breaker_state == "closed"


async def test_cache_hit_sends_nothing_and_survives_an_outage(api, session, db):
    clock = FakeClock()
    cache = TTLCache(db, clock=clock)
    source = wrap(HTTPSearchSource(session, api.url), clock, cache=cache)
    first = await outcome(source, "Moon landing  FAKED")
    assert isinstance(first, list) and api.hits == 1
    api.default = Reply.error(500)
    again = await outcome(source, "moon landing faked")  # same normalised query: served from the cache
    assert again == first and api.hits == 1
    assert source.stats.cache_hits == 1 and source.stats.cache_hit_rate == 0.5
    clock.advance(3601)  # expired: asks the (now failing) provider and says so, typed
    assert isinstance(await outcome(source, "moon landing faked"), ProviderUnavailable)
    assert api.hits > 1


async def test_fallback_to_the_next_provider(api, session):
    clock = FakeClock()
    backup = await FlakyAPI().start()
    try:
        api.default = Reply.error(500)
        primary = wrap(HTTPSearchSource(session, api.url, name="primary"), clock, failures=1, retries=0)
        secondary = wrap(HTTPSearchSource(session, backup.url, name="secondary"), clock)
        news = FallbackSource("news", [primary, secondary], label="news search")
        found = await news.gather(q("x"), limit=2)
        assert len(found) == 2 and news.used == "secondary"
        assert primary.breaker_state == "open"
        found = await news.gather(q("y"), limit=2)  # primary now short-circuits without a request
        assert news.used == "secondary" and api.hits == 1
        backup.default = Reply.error(503)
        with pytest.raises(ProviderUnavailable) as info:
            await news.gather(q("z"), limit=2)
        assert info.value.user_message == "news search is temporarily unavailable"
        assert "primary" in info.value.reason and "secondary" in info.value.reason
    finally:
        await backup.stop()


async def test_protect_sources_wraps_only_the_providers(api, session, db):
    settings = Settings(_env_file=None, provider_retries=1, breaker_failures=2, breaker_cooldown_s=60,
                        cache_ttl_s=600, source_timeout_s=10)
    gdelt = HTTPSearchSource(session, api.url, name="gdelt", label="news search")
    links = HTTPSearchSource(session, api.url, name="links", label="the linked pages", searches_web=False)
    wrapped = protect_sources([gdelt, links], settings, cache=TTLCache(db))
    assert wrapped[1] is links
    news = wrapped[0]
    assert isinstance(news, ResilientSource) and news.name == "gdelt" and news.source is gdelt
    assert news.deadline_s == pytest.approx(9.0) and news.retries.retries == 1 and news.ttl == 600
    api.default = Reply.error(500)
    with pytest.raises(ProviderUnavailable) as info:
        await news.gather(q("x"), limit=3)
    assert info.value.user_message == "news search is temporarily unavailable"
    assert info.value.sentence == "News search is temporarily unavailable."
    assert news.snapshot() == {"name": "gdelt", "breaker": "open", "calls": 1, "cache_hits": 0, "attempts": 2,
                               "retries": 1, "failures": 1, "short_circuits": 0, "cache_hit_rate": 0.0}


async def test_a_rate_limited_provider_is_skipped_at_once_never_waited_on(api, session, db):
    """GDELT allows one request per 5 s: the second check within that time skips it instead of waiting."""
    settings = Settings(_env_file=None, provider_retries=1, source_timeout_s=10)
    news = protect_sources([HTTPSearchSource(session, api.url, name="gdelt", label="news search")], settings,
                           cache=None, rates={"gdelt": 12})[0]
    await news.gather(q("first"), limit=3)
    with pytest.raises(ProviderUnavailable) as info:  # waiting 5 s for a slot would have answered instead
        await news.gather(q("second"), limit=3)
    assert "rate limit" in info.value.reason
    assert api.hits == 1
