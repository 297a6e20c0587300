"""Per-user and per-chat token buckets: a fair share of the engine for everyone.

In memory on purpose: a limit is about the last minute, and a restart forgetting it is harmless
(re-deliveries are deduplicated by the job store before they reach the limiter). Buckets that are
full again are dropped, so memory stays bounded by the number of recently active users and chats.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    """`rate_per_minute` requests per key, with bursts up to `burst` (default: one minute's worth)."""

    def __init__(self, rate_per_minute: float, *, burst: float | None = None,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000):
        self.rate = rate_per_minute / 60.0
        self.burst = max(1.0, burst if burst is not None else rate_per_minute)
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}

    def _refill(self, key: str, now: float) -> _Bucket:
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = _Bucket(self.burst, now)
        else:
            b.tokens = min(self.burst, b.tokens + (now - b.at) * self.rate)
            b.at = now
        return b

    def wait_time(self, key: str) -> float:
        """Seconds until `key` may spend a token (0 = now)."""
        b = self._refill(key, self.clock())
        return 0.0 if b.tokens >= 1 else (1 - b.tokens) / self.rate if self.rate > 0 else math.inf

    def take(self, key: str) -> bool:
        now = self.clock()
        b = self._refill(key, now)
        if b.tokens < 1:
            return False
        b.tokens -= 1
        if len(self._buckets) > self.max_keys:
            self._prune(now)
        return True

    def _prune(self, now: float) -> None:
        for k in [k for k, b in self._buckets.items()
                  if b.tokens + (now - b.at) * self.rate >= self.burst]:
            del self._buckets[k]


@dataclass(frozen=True)
class Limited:
    """Why a request was refused and when to try again."""

    who: str  # "user" | "chat"
    retry_after: float

    def message(self) -> str:
        secs = max(1, math.ceil(self.retry_after))
        wait = f"{secs} seconds" if secs < 120 else f"{math.ceil(secs / 60)} minutes"
        if self.who == "user":
            return f"⏳ You're sending checks faster than I can take them. Please try again in {wait}."
        return f"⏳ This chat is asking for many checks at once. Please try again in {wait}."


class RateLimiter:
    """Both limits together: a request spends a user token and a chat token, or neither.
    A rate of 0 (or less) turns that limit off."""

    def __init__(self, user_per_minute: float, chat_per_minute: float,
                 clock: Callable[[], float] = time.monotonic):
        self.users = TokenBuckets(user_per_minute, clock=clock) if user_per_minute > 0 else None
        self.chats = TokenBuckets(chat_per_minute, clock=clock) if chat_per_minute > 0 else None

    def check(self, user_key: str | None, chat_key: str) -> Limited | None:
        users = self.users if user_key is not None else None
        if users is not None and user_key is not None and (w := users.wait_time(user_key)) > 0:
            return Limited("user", w)
        if self.chats is not None and (w := self.chats.wait_time(chat_key)) > 0:
            return Limited("chat", w)
        if users is not None and user_key is not None:
            users.take(user_key)
        if self.chats is not None:
            self.chats.take(chat_key)
        return None
