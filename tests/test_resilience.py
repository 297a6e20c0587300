"""Token bucket, retry policy, Retry-After parsing and the circuit breaker, driven by a FakeClock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import aiohttp
import pytest

from core.evidence.resilience import (
    CircuitBreaker, FakeClock, ProviderHTTPError, ProviderUnavailable, RetryPolicy, TokenBucket, call_with_retries,
    describe, is_retryable, parse_retry_after,
)

# --- Retry-After ----------------------------------------------------------------------------------


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 11, 22, 3, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0
    for junk in (None, "", "soon", "nan", "inf", "Mon, 99 Foo 2026"):
        assert parse_retry_after(junk, now=now) is None


def test_what_is_retried():
    assert is_retryable(ProviderHTTPError(429)) and is_retryable(ProviderHTTPError(503))
    assert is_retryable(ProviderHTTPError(408))
    assert not is_retryable(ProviderHTTPError(400)) and not is_retryable(ProviderHTTPError(404))
    assert is_retryable(TimeoutError()) and is_retryable(aiohttp.ServerDisconnectedError())
    assert not is_retryable(ValueError("malformed JSON"))

    class SourceError(Exception):  # a source's own typed error, recognised by its `status` attribute
        def __init__(self, status: int | None):
            self.status = status

    assert is_retryable(SourceError(502)) and not is_retryable(SourceError(401))
    # A source that translates a timeout with `raise ... from` is still retried.
    try:
        try:
            raise TimeoutError
        except TimeoutError as e:
            raise SourceError(None) from e
    except SourceError as wrapped:
        assert is_retryable(wrapped)
        assert describe(wrapped) == "timed out"


# --- back-off -------------------------------------------------------------------------------------


def test_full_jitter_backoff_bounds():
    policy = RetryPolicy(retries=5, base_s=0.5, max_backoff_s=3.0, rng=lambda: 1.0)
    assert [policy.backoff(a) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert RetryPolicy(base_s=0.5, rng=lambda: 0.0).backoff(3) == 0.0
    # Retry-After is a floor; jitter may only add to it; too long means "give up on this call".
    policy = RetryPolicy(retries=3, base_s=0.5, max_retry_after_s=10, rng=lambda: 0.5)
    assert policy.delay(0, ProviderHTTPError(429, retry_after=4.0)) == 4.0
    assert policy.delay(0, ProviderHTTPError(429, retry_after=60.0)) is None
    assert policy.delay(3, ProviderHTTPError(503)) is None  # out of retries
    assert policy.delay(0, ProviderHTTPError(404)) is None


class Flaky:
    """Fails with the given errors in order, then answers."""

    def __init__(self, *errors: BaseException, value: str = "ok"):
        self.errors = list(errors)
        self.value = value
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


async def test_retries_then_succeeds_honouring_retry_after():
    clock = FakeClock()
    fn = Flaky(ProviderHTTPError(503), ProviderHTTPError(429, retry_after=2.0))
    out = await call_with_retries(fn, provider="news", policy=RetryPolicy(retries=2, base_s=0.5, rng=lambda: 1.0),
                                  clock=clock, sleep=clock.sleep)
    assert out == "ok" and fn.calls == 3
    assert clock.sleeps == [0.5, 2.0]


async def test_gives_up_when_the_wait_would_pass_the_deadline():
    clock = FakeClock()
    fn = Flaky(ProviderHTTPError(429, retry_after=5.0))
    with pytest.raises(ProviderUnavailable) as info:
        await call_with_retries(fn, provider="news", policy=RetryPolicy(retries=3), clock=clock, sleep=clock.sleep,
                                deadline=clock() + 3.0, label="news search")
    assert fn.calls == 1 and clock.sleeps == []  # did not sleep into a deadline it could not meet
    assert info.value.user_message == "news search is temporarily unavailable"
    assert "no time left" in info.value.reason
    assert isinstance(info.value.__cause__, ProviderHTTPError)


async def test_non_retryable_errors_fail_at_once_typed():
    clock = FakeClock()
    fn = Flaky(ValueError("not JSON"))
    with pytest.raises(ProviderUnavailable) as info:
        await call_with_retries(fn, provider="web", policy=RetryPolicy(retries=3), clock=clock, sleep=clock.sleep)
    assert fn.calls == 1 and info.value.reason == "ValueError"
    assert info.value.sentence == "Web is temporarily unavailable."


async def test_retries_exhausted():
    clock = FakeClock()
    fn = Flaky(*[ProviderHTTPError(500)] * 5)
    with pytest.raises(ProviderUnavailable, match="HTTP 500 after 3 attempts"):
        await call_with_retries(fn, provider="web", policy=RetryPolicy(retries=2, rng=lambda: 0.1),
                                clock=clock, sleep=clock.sleep)
    assert fn.calls == 3


# --- token bucket ---------------------------------------------------------------------------------


async def test_token_bucket_paces_requests():
    clock = FakeClock()
    bucket = TokenBucket(60, burst=2, clock=clock, sleep=clock.sleep)  # one a second, two at once
    assert await bucket.acquire() and await bucket.acquire()
    assert clock.sleeps == []
    assert await bucket.acquire()
    assert clock.sleeps == [pytest.approx(1.0)]
    clock.advance(10)  # idle time refills only up to the burst
    for _ in range(3):
        assert await bucket.acquire()
    assert clock.sleeps[1:] == [pytest.approx(1.0)]


async def test_token_bucket_refuses_a_wait_past_the_deadline():
    clock = FakeClock()
    bucket = TokenBucket(6, clock=clock, sleep=clock.sleep)  # one every 10 s
    assert await bucket.acquire()
    assert not await bucket.acquire(deadline=clock() + 5)
    assert clock.sleeps == []
    assert await bucket.acquire(deadline=clock() + 15)
    assert clock.sleeps == [pytest.approx(10.0)]


async def test_rate_limited_call_is_typed():
    clock = FakeClock()
    bucket = TokenBucket(1, clock=clock, sleep=clock.sleep)
    fn = Flaky()
    assert await call_with_retries(fn, provider="gdelt", policy=RetryPolicy(), bucket=bucket, clock=clock,
                                   sleep=clock.sleep) == "ok"
    with pytest.raises(ProviderUnavailable, match="rate limit"):
        await call_with_retries(fn, provider="gdelt", policy=RetryPolicy(), bucket=bucket, clock=clock,
                                sleep=clock.sleep, deadline=clock() + 1)
    assert fn.calls == 1


# --- circuit breaker -------------------------------------------------------------------------------


def test_breaker_opens_half_opens_and_closes():
    clock = FakeClock()
    seen: list[str] = []
    breaker = CircuitBreaker(3, cooldown_s=30, clock=clock, on_change=seen.append)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state == "closed"
    breaker.record_success()  # a success resets the run of failures
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.retry_in() == 30
    clock.advance(30)
    assert breaker.state == "half_open"
    assert breaker.allow()          # one probe...
    assert not breaker.allow()      # ...at a time
    breaker.record_failure()        # a failed probe re-opens for a full cooldown
    assert breaker.state == "open" and breaker.opens == 2
    clock.advance(29.9)
    assert not breaker.allow()
    clock.advance(0.1)
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow()
    assert seen == ["open", "half_open", "open", "half_open", "closed"]


async def test_open_breaker_fails_fast_without_calling():
    clock = FakeClock()
    breaker = CircuitBreaker(2, cooldown_s=60, clock=clock)
    fn = Flaky(*[ProviderHTTPError(503)] * 10)
    with pytest.raises(ProviderUnavailable):
        await call_with_retries(fn, provider="brave", policy=RetryPolicy(retries=5, rng=lambda: 0.0),
                                breaker=breaker, clock=clock, sleep=clock.sleep)
    assert fn.calls == 2 and breaker.state == "open"  # the breaker cut the retries short
    with pytest.raises(ProviderUnavailable, match="circuit open"):
        await call_with_retries(fn, provider="brave", policy=RetryPolicy(), breaker=breaker, clock=clock,
                                sleep=clock.sleep)
    assert fn.calls == 2
    clock.advance(60)
    fn.errors.clear()
    assert await call_with_retries(fn, provider="brave", policy=RetryPolicy(), breaker=breaker, clock=clock,
                                   sleep=clock.sleep) == "ok"
    assert breaker.state == "closed"



async def test_a_name_that_does_not_resolve_is_not_retried():
    # Offline, the default news provider fails DNS: one attempt, no wait for the rate limiter.
    import socket

    import aiohttp
    from aiohttp.abc import AbstractResolver

    from core.evidence.resilience import is_retryable

    class NoDNS(AbstractResolver):  # what an offline machine's resolver answers, without asking one
        async def resolve(self, host, port=0, family=socket.AF_INET):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

        async def close(self):
            return None

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=NoDNS())) as session:
        try:
            await session.get("http://news.example/")
        except aiohttp.ClientError as exc:
            dns_error = exc
    assert isinstance(dns_error, aiohttp.ClientConnectorDNSError)
    assert not is_retryable(dns_error)
    assert is_retryable(aiohttp.ServerDisconnectedError())
