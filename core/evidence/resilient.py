"""`ResilientSource`: any EvidenceSource behind a cache, a token bucket, retries and a circuit breaker.

    bucket = TokenBucket(settings.provider_rate_per_minute)
    breaker = CircuitBreaker(settings.breaker_failures, settings.breaker_cooldown_s)
    source = ResilientSource(GdeltSource(...), bucket=bucket, breaker=breaker,
                             retries=RetryPolicy(settings.provider_retries), cache=TTLCache(db),
                             ttl=settings.cache_ttl_s, deadline_s=settings.source_timeout_s * 0.9,
                             label="news search")

It has the wrapped source's `name`, so traces and metrics read the same. What one `gather` does:

1. cache hit (same normalised queries, language, urls, domains and limit) -> the stored Evidence, no call;
2. breaker open -> `ProviderUnavailable` at once;
3. otherwise call the source under the bucket and the retry policy, within `deadline_s` (a little under
   the engine's per-source timeout, so we end with our own typed error rather than being cancelled);
4. on success the Evidence list is cached as JSON for `ttl` seconds (empty results too: "nothing found" is
   an answer, and re-asking a provider that just said so wastes the rate budget).

Every failure leaves as `ProviderUnavailable` (`user_message`: "news search is temporarily unavailable").
A broken cache (a database error, a row that no longer parses) is logged and skipped, never fatal.

`FallbackSource` tries sources in order (e.g. SearxNG, then Brave) and answers with the first that works.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from dataclasses import asdict, dataclass
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import ValidationError

from core.evidence.base import ClaimQuery, Evidence, EvidenceSource
from core.evidence.resilience import (
    BreakerState, CallObserver, CircuitBreaker, Clock, ProviderUnavailable, RetryPolicy, Sleep, TokenBucket,
    call_with_retries, describe,
)
from storage.cache import TTLCache, cache_key

log = logging.getLogger(__name__)


class SourceObserver(CallObserver, Protocol):
    """What `ResilientSource` reports for metrics; `bot.metrics.Metrics` implements it."""

    def cache(self, provider: str, hit: bool) -> None: ...

    def breaker(self, provider: str, state: BreakerState) -> None: ...

    def unavailable(self, provider: str) -> None: ...


@dataclass
class SourceStats:
    calls: int = 0           # gather() calls
    cache_hits: int = 0
    attempts: int = 0        # requests actually sent to the provider (incl. retries)
    retries: int = 0
    failures: int = 0        # gather() calls that ended in ProviderUnavailable
    short_circuits: int = 0  # of those, refused at once by an open breaker

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_hits / self.calls if self.calls else 0.0


class ResilientSource:
    def __init__(self, source: EvidenceSource, *, bucket: TokenBucket | None, breaker: CircuitBreaker | None,
                 retries: RetryPolicy, cache: TTLCache | None, ttl: float, deadline_s: float | None = None,
                 attempt_timeout_s: float | None = None, label: str | None = None,
                 observer: SourceObserver | None = None, clock: Clock = time.monotonic,
                 sleep: Sleep = asyncio.sleep, slot_wait_s: float | None = None):
        self.source = source
        self.name = source.name
        self.label = label or source.label
        self.searches_web = source.searches_web
        self.bucket = bucket
        self.breaker = breaker
        self.retries = retries
        self.cache = cache
        self.ttl = ttl
        self.deadline_s = deadline_s
        self.attempt_timeout_s = attempt_timeout_s
        self.slot_wait_s = slot_wait_s
        self.observer = observer
        self.stats = SourceStats()
        self._clock = clock
        self._sleep = sleep
        if observer is not None and breaker is not None:
            observer.breaker(self.name, breaker.state)

    @property
    def breaker_state(self) -> BreakerState:
        return self.breaker.state if self.breaker is not None else "closed"

    def snapshot(self) -> dict[str, object]:
        """Stats and circuit state as plain data, e.g. for /healthz."""
        return {"name": self.name, "breaker": self.breaker_state, **asdict(self.stats),
                "cache_hit_rate": round(self.stats.cache_hit_rate, 4)}

    def cache_key(self, query: ClaimQuery, limit: int) -> str:
        return cache_key(self.name, query.search_queries, claim=" ".join(query.claim.split()).casefold(),
                         language=query.language, urls=sorted(query.urls),
                         domains=sorted(d.lower() for d in query.allow_domains), limit=limit)

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        self.stats.calls += 1
        key = self.cache_key(query, limit)
        cached = await self._cached(key)
        if self.observer is not None:
            self.observer.cache(self.name, cached is not None)
        if cached is not None:
            self.stats.cache_hits += 1
            return cached

        deadline = self._clock() + self.deadline_s if self.deadline_s is not None else None
        short_circuit = self.breaker is not None and self.breaker.state == "open"

        async def attempt() -> list[Evidence]:
            self.stats.attempts += 1
            return await self.source.gather(query, limit=limit)

        def on_retry(attempt_no: int, exc: BaseException, wait: float) -> None:
            self.stats.retries += 1
            log.info("%s: attempt %d failed (%s), retrying in %.2fs", self.name, attempt_no + 1,
                     type(exc).__name__, wait)

        try:
            found = await call_with_retries(
                attempt, provider=self.name, policy=self.retries, breaker=self.breaker, bucket=self.bucket,
                deadline=deadline, attempt_timeout_s=self.attempt_timeout_s, label=self.label,
                clock=self._clock, sleep=self._sleep, observer=self.observer, on_retry=on_retry,
                slot_wait_s=self.slot_wait_s)
        except ProviderUnavailable as exc:
            self.stats.failures += 1
            self.stats.short_circuits += short_circuit
            if self.observer is not None:
                self.observer.unavailable(self.name)
                if self.breaker is not None:
                    self.observer.breaker(self.name, self.breaker.state)
            log.warning("%s unavailable: %s", self.name, exc.reason)
            raise
        if self.observer is not None and self.breaker is not None:
            self.observer.breaker(self.name, self.breaker.state)
        found = list(found)[:limit]
        await self._store(key, found)
        return found

    async def _cached(self, key: str) -> list[Evidence] | None:
        if self.cache is None:
            return None
        try:
            raw = await self.cache.get(key)
            if raw is None:
                return None
            return [Evidence.model_validate(item) for item in json.loads(raw)]
        except (sqlite3.Error, ValueError, ValidationError, TypeError) as exc:
            # A stale row from an older Evidence shape, or a database hiccup: ask the provider instead.
            log.warning("%s: cache read failed (%s); calling the provider", self.name, type(exc).__name__)
            return None

    async def _store(self, key: str, found: list[Evidence]) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.set(key, json.dumps([e.model_dump(mode="json") for e in found]), self.ttl)
        except sqlite3.Error as exc:
            log.warning("%s: cache write failed (%s)", self.name, type(exc).__name__)


class FallbackSource:
    """Providers of one kind in order of preference: the first that answers wins (an empty list is an
    answer). When none can be used, raises `ProviderUnavailable` listing each one's reason."""

    def __init__(self, name: str, sources: list[EvidenceSource], *, label: str | None = None):
        if not sources:
            raise ValueError("FallbackSource needs at least one source")
        self.name = name
        self.label = label or f"{name} search"
        self.searches_web = any(src.searches_web for src in sources)
        self.sources = sources
        self.used: str | None = None  # which source answered the last call

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        reasons: list[str] = []
        for source in self.sources:
            try:
                found = await source.gather(query, limit=limit)
            except ProviderUnavailable as exc:
                reasons.append(f"{exc.provider}: {exc.reason}")
                continue
            except Exception as exc:  # noqa: BLE001 - an unwrapped source failing is still a reason to fall back
                reasons.append(f"{source.name}: {describe(exc)}")
                continue
            self.used = source.name
            return found
        self.used = None
        raise ProviderUnavailable(self.name, "; ".join(reasons), label=self.label)


# Providers worth protecting, and how to name them to a user. The knowledge base is local, and link
# expansion fetches arbitrary sites: one breaker for all of them would let a single dead site block every
# link, so both are left unwrapped.
SLOT_WAIT_S = 1.0


class ProtectionSettings(Protocol):
    """The fields of bot.settings.Settings `protect_sources` reads (core/ does not import bot/)."""

    provider_rate_per_minute: float
    provider_retries: int
    breaker_failures: int
    breaker_cooldown_s: float
    cache_ttl_s: float
    source_timeout_s: float


def protect_sources(sources: Sequence[EvidenceSource], settings: ProtectionSettings, *, cache: TTLCache | None,
                    observer: SourceObserver | None = None,
                    rates: Mapping[str, float] | None = None) -> list[EvidenceSource]:
    """Wrap each source that searches the web (`searches_web`) in its own ResilientSource (own bucket and
    breaker); pass the local ones (knowledge base, evidence index, linked pages: one breaker for every
    site would let one dead site block all links) through unchanged, keeping the order.

    `rates` overrides `provider_rate_per_minute` per provider name (a token is taken per gather attempt).
    The deadline is 90% of `source_timeout_s`, so a failure ends in our typed error before the caller's
    timeout cancels the gather. A provider whose next rate slot is more than `SLOT_WAIT_S` away is skipped
    (GDELT allows one request per 5 s: a check does not wait that long for it).
    """
    out: list[EvidenceSource] = []
    for source in sources:
        if not source.searches_web:
            out.append(source)
            continue
        rate = (rates or {}).get(source.name, settings.provider_rate_per_minute)
        out.append(ResilientSource(
            source, bucket=TokenBucket(rate), breaker=CircuitBreaker(settings.breaker_failures,
                                                                     settings.breaker_cooldown_s),
            retries=RetryPolicy(retries=settings.provider_retries), cache=cache, ttl=settings.cache_ttl_s,
            deadline_s=settings.source_timeout_s * 0.9, observer=observer, slot_wait_s=SLOT_WAIT_S))
    return out
