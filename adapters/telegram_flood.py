"""Telegram flood control: every Bot API request of `tipline run` (replies, digests, alerts, review notices,
"typing…") passes through here, python-telegram-bot's own hook for it (`ApplicationBuilder.rate_limiter`,
a `telegram.ext.BaseRateLimiter`).

Telegram allows a bot about 30 messages a second overall and about 20 a minute in one group, and answers
past that with 429 "Too Many Requests: retry after N" (`telegram.error.RetryAfter`). Before, nothing
handled it: a digest or alert fanned out to 50 chats lost the posts Telegram refused, and a review notice
or a verdict card was simply not sent. Now:

- a request Telegram refuses with RetryAfter is sent again after the `retry_after` it names (plus 0.1 s),
  at most `max_retries` times; meanwhile other requests to that chat wait too, the other chats go on;
  a wait longer than `max_wait_s` (a bot flagged for flooding gets hours) is not waited out: the error
  goes to the caller, as before;
- requests to chats are paced to `per_second` (30) overall with a burst of as many, so a fan-out does not
  provoke the 429s in the first place. The per-group limit is not paced: replies in a busy group would wait
  on "typing…" and edits; a group that floods gets its RetryAfter and waits.

PTB ships `AIORateLimiter` for this, but it needs the `rate-limiter` extra (aiolimiter), and a new dependency
means a new pin in requirements.lock; this is the same idea in ~60 lines of asyncio, with the RetryAfter
wait held per chat where AIORateLimiter halts every request of the bot.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any

from telegram.error import RetryAfter
from telegram.ext import BaseRateLimiter
from telegram.warnings import PTBDeprecationWarning

log = logging.getLogger(__name__)

MAX_RETRIES = 3
MAX_WAIT_S = 300.0
PER_SECOND = 30.0  # telegram.constants.FloodLimit.MESSAGES_PER_SECOND
MARGIN_S = 0.1


def retry_after_s(exc: RetryAfter) -> float:
    """The seconds Telegram asked to wait (PTB 22 warns on reading it as an int; either form is read)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class FloodControl(BaseRateLimiter[int]):
    """`rate_limit_args`, when a caller passes one, is that request's number of retries."""

    def __init__(self, *, max_retries: int = MAX_RETRIES, max_wait_s: float = MAX_WAIT_S,
                 per_second: float = PER_SECOND, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self.per_second = per_second
        self.clock = clock
        self.sleep = sleep
        self.paused_until: dict[str | None, float] = {}  # chat id (None: requests without one) -> clock time
        self.retried = 0  # requests sent again after a RetryAfter, for tests and logs
        self._tokens = per_second
        self._refilled = clock()
        self._pace_lock = asyncio.Lock()

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        chat = data.get("chat_id")
        key = None if chat is None else str(chat)
        retries = self.max_retries if rate_limit_args is None else rate_limit_args
        for attempt in range(retries + 1):
            await self._paused(key)
            if key is not None:
                await self._pace()
            try:
                return await callback(*args, **kwargs)
            except RetryAfter as exc:
                wait = retry_after_s(exc)
                if attempt >= retries or wait > self.max_wait_s:
                    why = (f"given up after {attempt} retries" if attempt >= retries
                           else f"longer than the {self.max_wait_s:.0f} s waited out")
                    log.warning("telegram: flood control: %s to chat %s refused (retry after %.0f s); %s", endpoint,
                                key, wait, why)
                    raise
                log.info("telegram: flood control: %s to chat %s, retry %d of %d in %.1f s", endpoint, key,
                         attempt + 1, retries, wait)
                self._pause(key, wait + MARGIN_S)
                self.retried += 1
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _pause(self, key: str | None, seconds: float) -> None:
        now = self.clock()
        if len(self.paused_until) > 1000:  # long-gone pauses of many chats
            self.paused_until = {k: t for k, t in self.paused_until.items() if t > now}
        self.paused_until[key] = max(self.paused_until.get(key, 0.0), now + seconds)

    async def _paused(self, key: str | None) -> None:
        """Return once Telegram's last "retry after" for this chat has passed."""
        while (delay := self.paused_until.get(key, 0.0) - self.clock()) > 0:
            await self.sleep(delay)

    async def _pace(self) -> None:
        """A token bucket: `per_second` requests a second overall, bursts of as many."""
        if self.per_second <= 0:
            return
        async with self._pace_lock:
            now = self.clock()
            self._tokens = min(self.per_second, self._tokens + (now - self._refilled) * self.per_second)
            self._refilled = now
            if self._tokens < 1.0:
                await self.sleep((1.0 - self._tokens) / self.per_second)
                self._tokens, self._refilled = 1.0, self.clock()
            self._tokens -= 1.0
