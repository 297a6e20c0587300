"""Protection for calls to outside providers: a token bucket, retries with back-off, a circuit breaker.

The parts are independent and small so `core.evidence.resilient.ResilientSource` (or anything else that
calls a provider) can combine them:

- `TokenBucket`: at most N requests a minute per provider, with a small burst. Waiting for a token never
  runs past the caller's deadline: if the next token comes too late the call fails fast instead.
- `RetryPolicy` / `call_with_retries`: retries on 429, 5xx, 408, timeouts and connection errors, with
  exponential back-off and *full jitter* (a random wait in [0, base*2^attempt]) so many workers hitting one
  provider don't retry in lock-step. A `Retry-After` header (seconds or an HTTP date) is honoured as a
  minimum wait; a wait that would blow the deadline is not taken, the call gives up at once.
- `CircuitBreaker`: closed -> open after N consecutive failed attempts -> half-open once the cooldown has
  passed (one probe at a time) -> closed on the probe's success, open again on its failure.

Sources tell the retry logic what went wrong by raising `ProviderHTTPError(status, retry_after)` for a
non-2xx answer (`ProviderHTTPError.from_response(resp)` builds one from an aiohttp response). Timeouts
(`TimeoutError`, which includes `asyncio.TimeoutError`) and `aiohttp.ClientConnectionError` are
recognised as they are. Anything else (a malformed body, a bug) is not retried.

Time is injected: every class takes `clock` (monotonic seconds) and `sleep`, so unit tests drive a
`FakeClock` instead of sleeping. The deadline is a point on that clock.

Whatever goes wrong, callers get one typed error, `ProviderUnavailable`, whose `user_message` is a
sentence fit for a chat ("news search is temporarily unavailable"); the detail is in `reason`.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

if TYPE_CHECKING:  # types only: the two functions reading aiohttp's errors import it (see is_retryable)
    import aiohttp

T = TypeVar("T")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
BreakerState = Literal["closed", "open", "half_open"]


# --- errors ----------------------------------------------------------------------------------


class ProviderHTTPError(Exception):
    """A provider answered with a non-2xx status. Sources raise this so retries can be decided by status."""

    def __init__(self, status: int, retry_after: float | None = None, message: str = ""):
        self.status = status
        self.retry_after = retry_after
        super().__init__(message or f"HTTP {status}")

    @property
    def retryable(self) -> bool:
        return is_retryable(self)

    @classmethod
    def from_response(cls, resp: aiohttp.ClientResponse, message: str = "") -> ProviderHTTPError:
        """Build the error from an aiohttp response, reading its `Retry-After` header."""
        return cls(resp.status, parse_retry_after(resp.headers.get("Retry-After")), message)


class ProviderUnavailable(Exception):
    """The provider could not be used for this call. `user_message` is safe to show; `reason` is for logs."""

    def __init__(self, provider: str, reason: str, *, label: str | None = None):
        self.provider = provider
        self.reason = reason
        self.label = label or provider
        super().__init__(f"{self.provider}: {reason}")

    @property
    def user_message(self) -> str:
        return f"{self.label} is temporarily unavailable"

    @property
    def sentence(self) -> str:
        """The same, as a sentence (the attribute core.evidence.errors' typed errors use for the trace)."""
        return self.user_message[:1].upper() + self.user_message[1:] + "."


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds from now: either delta-seconds or an HTTP date (RFC 9110 10.2.3).

    Unparseable values give None (ignored) rather than an error: a broken header must not break a check.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _status(exc: BaseException) -> int | None:
    """The HTTP status an error carries: `ProviderHTTPError`, or any source error with an int `status`
    attribute (the sources' own typed errors, e.g. core.evidence.errors.ProviderError, duck-typed)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _chain(exc: BaseException) -> list[BaseException]:
    """The error and what caused it, so a source that translates a timeout with `raise X from e` still
    gets retried."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 8:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def is_retryable(exc: BaseException) -> bool:
    """Transient failures worth another attempt: 429/5xx/408, timeouts, dropped connections."""
    status = _status(exc)
    if status is not None:
        return status in (408, 425, 429) or status >= 500
    # Imported here: an offline `tipline check` never makes a request, and aiohttp costs ~0.22 s of CPU to
    # import; once a source has made one it is a dict lookup.
    import aiohttp

    chain = list(_chain(exc))
    # A name that does not resolve (no network, a typo in the URL) will not resolve a second later; a
    # retry would only wait for the rate limiter (GDELT: 5 s) and hold the check.
    if any(isinstance(e, aiohttp.ClientConnectorDNSError) for e in chain):
        return False
    return any(isinstance(e, (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError))
               for e in chain)


def describe(exc: BaseException) -> str:
    """A short reason for logs and the trace; never the raw exception text of an HTTP library (it may
    contain URLs with keys in them)."""
    status = _status(exc)
    if status is not None:
        return f"HTTP {status}"
    import aiohttp  # see is_retryable

    for e in _chain(exc):
        if isinstance(e, TimeoutError):
            return "timed out"
        if isinstance(e, aiohttp.ClientConnectionError):
            return "connection failed"
        if isinstance(e, aiohttp.ClientPayloadError):
            return "response cut off"
    return type(exc).__name__


# --- time --------------------------------------------------------------------------------------


class FakeClock:
    """A clock for tests: `sleep` advances time at once instead of waiting. Records every sleep."""

    def __init__(self, start: float = 1000.0):
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)  # still yield, so other tasks interleave as they would for real


def remaining(deadline: float | None, clock: Clock) -> float:
    return math.inf if deadline is None else deadline - clock()


# --- token bucket --------------------------------------------------------------------------------


class TokenBucket:
    """`rate_per_minute` tokens a minute, holding at most `burst` (default: one second's worth, at least 1).

    Waiters take tokens in arrival order (a lock serialises them) so one provider's callers are fair.
    """

    def __init__(self, rate_per_minute: float, *, burst: float | None = None, clock: Clock = time.monotonic,
                 sleep: Sleep = asyncio.sleep):
        if rate_per_minute <= 0:
            raise ValueError("rate_per_minute must be positive")
        self.rate = rate_per_minute / 60.0  # tokens per second
        self.capacity = burst if burst is not None else max(1.0, self.rate)
        self.tokens = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._updated) * self.rate)
        self._updated = now

    def wait_time(self) -> float:
        """Seconds until a token is free (0 if one is free now)."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    async def acquire(self, deadline: float | None = None) -> bool:
        """Take a token, waiting for one if need be. Returns False, taking nothing, if the wait would run
        past `deadline` (so the caller fails fast instead of being cancelled mid-wait)."""
        async with self._lock:
            wait = self.wait_time()
            if wait > 0:
                if wait > remaining(deadline, self._clock):
                    return False
                await self._sleep(wait)
                self._refill()
            self.tokens -= 1
            return True


# --- circuit breaker ------------------------------------------------------------------------------


class CircuitBreaker:
    """Stops calling a provider that keeps failing, and tries it again after `cooldown_s`.

    `failures` consecutive failed attempts open the circuit; while open, `allow()` is False. After the
    cooldown it is half-open: one caller at a time gets through as a probe; success closes the circuit,
    failure re-opens it for another cooldown.
    """

    def __init__(self, failures: int, cooldown_s: float, *, clock: Clock = time.monotonic,
                 on_change: Callable[[BreakerState], None] | None = None):
        self.threshold = max(1, failures)
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._on_change = on_change
        self.consecutive_failures = 0
        self.opened_at: float | None = None
        self.opens = 0  # how many times it has opened, for metrics and tests
        self._probing = False
        self._last_state: BreakerState = "closed"

    @property
    def state(self) -> BreakerState:
        if self.opened_at is None:
            return "closed"
        if self._clock() - self.opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    def retry_in(self) -> float:
        """Seconds until an open circuit turns half-open (0 when not open)."""
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.opened_at + self.cooldown_s - self._clock())

    def allow(self) -> bool:
        state = self.state
        self._notify(state)
        if state == "closed":
            return True
        if state == "half_open" and not self._probing:
            self._probing = True
            return True
        return False

    def record_success(self) -> None:
        self.consecutive_failures = 0
        self.opened_at = None
        self._probing = False
        self._notify("closed")

    def record_failure(self) -> None:
        self.consecutive_failures += 1
        was_probe = self._probing
        self._probing = False
        if was_probe or (self.opened_at is None and self.consecutive_failures >= self.threshold):
            self.opened_at = self._clock()
            self.opens += 1
        self._notify(self.state)

    def release(self) -> None:
        """A probe ended without a verdict on the provider (e.g. cancelled): let the next caller probe."""
        self._probing = False

    def _notify(self, state: BreakerState) -> None:
        if state != self._last_state:
            self._last_state = state
            if self._on_change:
                self._on_change(state)


# --- retries ----------------------------------------------------------------------------------------


@dataclass
class RetryPolicy:
    """`retries` extra attempts after the first. Back-off: full jitter over base_s * 2^attempt, capped."""

    retries: int = 2
    base_s: float = 0.25
    max_backoff_s: float = 4.0
    max_retry_after_s: float = 30.0  # a provider asking for longer is treated as down for this call
    rng: Callable[[], float] = field(default=random.random)

    def backoff(self, attempt: int) -> float:
        """The wait before retry number `attempt` (0-based): uniform in [0, min(cap, base * 2^attempt)]."""
        return self.rng() * min(self.max_backoff_s, self.base_s * (2 ** attempt))

    def delay(self, attempt: int, exc: BaseException) -> float | None:
        """How long to wait before the next attempt, or None if it should not be retried at all."""
        if attempt >= self.retries or not is_retryable(exc):
            return None
        wait = self.backoff(attempt)
        retry_after = _retry_after(exc)
        if retry_after is not None:
            if retry_after > self.max_retry_after_s:
                return None
            wait = max(wait, retry_after)  # the provider's own word is a floor, jitter only adds to it
        return wait


class CallObserver(Protocol):
    """Told about each attempt; `bot.metrics.Metrics` implements it."""

    def attempt(self, provider: str, seconds: float, error: str | None) -> None: ...


async def call_with_retries(fn: Callable[[], Awaitable[T]], *, provider: str, policy: RetryPolicy,
                            breaker: CircuitBreaker | None = None, bucket: TokenBucket | None = None,
                            deadline: float | None = None, attempt_timeout_s: float | None = None,
                            label: str | None = None, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep,
                            observer: CallObserver | None = None, slot_wait_s: float | None = None,
                            on_retry: Callable[[int, BaseException, float], None] | None = None) -> T:
    """Call `fn` under the bucket, breaker and retry policy; return its value or raise ProviderUnavailable.

    Each attempt counts towards the breaker. `attempt_timeout_s` bounds one attempt in real time (a slow
    drip must not hold the check); it is further cut to what is left before `deadline`. `slot_wait_s` caps
    the wait for a rate-limit slot (0: a rate-limited provider is skipped at once, never waited on).
    """
    attempt = 0
    while True:
        if breaker is not None and not breaker.allow():
            raise ProviderUnavailable(provider, f"circuit open (retry in {breaker.retry_in():.0f}s)", label=label)
        # A retry has waited its back-off already; only the first attempt is skipped for want of a slot.
        slot_by = deadline if slot_wait_s is None or attempt else min(clock() + slot_wait_s, deadline or math.inf)
        if bucket is not None and not await bucket.acquire(slot_by):
            if breaker is not None:
                breaker.release()
            raise ProviderUnavailable(provider, "rate limit: skipped, no request slot free", label=label)
        left = remaining(deadline, clock)
        if left <= 0:
            if breaker is not None:
                breaker.release()
            raise ProviderUnavailable(provider, "deadline passed", label=label)
        limits = [x for x in (attempt_timeout_s, left) if x is not None and math.isfinite(x)]
        timeout = min(limits) if limits else None
        started = time.monotonic()  # real time for latency metrics, whatever clock drives the logic
        try:
            async with asyncio.timeout(timeout):
                value = await fn()
        except asyncio.CancelledError:
            if breaker is not None:
                breaker.release()
            raise
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none escapes untyped
            if observer is not None:
                observer.attempt(provider, time.monotonic() - started, describe(exc))
            if breaker is not None:
                breaker.record_failure()
            if breaker is not None and breaker.state == "open":
                # This failure opened (or re-opened) the circuit: no point waiting to be refused.
                raise ProviderUnavailable(provider, f"{describe(exc)}; circuit opened", label=label) from exc
            wait = policy.delay(attempt, exc)
            if wait is None:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise ProviderUnavailable(provider, describe(exc) + tries, label=label) from exc
            if wait >= remaining(deadline, clock):
                raise ProviderUnavailable(provider, f"{describe(exc)}; no time left to retry", label=label) from exc
            if on_retry is not None:
                on_retry(attempt, exc, wait)
            await sleep(wait)
            attempt += 1
            continue
        if observer is not None:
            observer.attempt(provider, time.monotonic() - started, None)
        if breaker is not None:
            breaker.record_success()
        return value
