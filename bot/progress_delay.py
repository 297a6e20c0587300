"""The progress message, held back: a check that ends within `after` seconds sends only its answer.

Sending a message is not idempotent on Telegram or Slack, and a process killed after the platform applied a
"🔎 Checking…" but before its id was journaled (storage/reply_journal.py; ~2.2 ms mean on the shared 2-core
container) leaves that message behind: ~0.8 % of killed checks when every check sent one at once. An offline
check takes ~0.3 s, so with `TIPLINE_PROGRESS_AFTER_S` = 2 it never has a placeholder to orphan; a slow (LLM,
web) check sends it after the delay and edits it as before, with the same ~2 ms window over many seconds.

Until then the user sees a sign that is not a message, so a crash cannot leave it behind: `Presence` (Telegram
"typing…", repeated every 4 s because it lasts 5 s; on Slack an :eyes: reaction on the asker's message,
removed once the answer is posted). Both are idempotent: shown again after a restart, nothing doubles.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from bot.check_service import Responder

from bot.requests import CheckRequest
from bot.render import Reply

log = logging.getLogger(__name__)

STOP_WAIT_S = 2.0  # how long the answer waits for a presence call already in flight (a loopback call: ~5 ms)


class Presence(Protocol):
    """Per platform: an idempotent "working on it" sign for one request, chosen at the composition root."""

    refresh_s: float | None  # repeat `show` this often while the check runs (None: once)

    async def show(self, req: CheckRequest, where: Mapping[str, Any]) -> None:
        """Show (again) that the bot is working on `req`; calling it twice is harmless."""

    async def clear(self, req: CheckRequest, where: Mapping[str, Any]) -> None:
        """Take the sign away once the answer is out (a no-op where it expires by itself)."""


class DeferredResponder:
    """A `Responder` that sends the first progress message only if the check still runs `after` seconds
    after it was asked for; later progress edits it as before, and `final`/`say` send the answer as the
    only message when no progress message went out. `shown`: a message was already sent (a resumed job
    with its reply id, or `after` <= 0), so everything goes straight through."""

    def __init__(self, inner: Responder, *, after: float, shown: bool = False,
                 presence: Presence | None = None, req: CheckRequest | None = None,
                 where: Mapping[str, Any] | None = None):
        self.inner = inner
        self.after = after
        self.shown = shown or after <= 0
        self.presence = presence if req is not None else None
        self.req = req
        self.where: Mapping[str, Any] = where or {}
        self._latest: str | None = None
        self._timer: asyncio.Task[None] | None = None
        self._sending = False  # the timer is past its sleep: let it finish its send (cancelling could
        # cut it off after the platform applied it, before the id was journaled: the very orphan)
        self._answered = False
        self._lock = asyncio.Lock()  # one platform call at a time: the answer edits what the timer sent
        self._stop = asyncio.Event()
        self._presence_task: asyncio.Task[None] | None = None

    # --- lifecycle (bot/queue.py calls these around a check) -----------------------------------

    def open(self) -> None:
        # A message goes (or went) out at once: it is the sign; no "typing…"/:eyes: calls on top of it.
        if self.presence is not None and self._presence_task is None and not self.shown:
            self._presence_task = asyncio.create_task(self._keep_present(), name="tipline-presence")

    async def close(self) -> None:
        """After the check: no progress message any more, the presence sign taken away."""
        await self._settle()
        if self.presence is not None and self.req is not None and self._presence_task is not None:
            try:
                await self.presence.clear(self.req, self.where)
            except Exception:
                log.warning("could not clear the working sign", exc_info=True)

    # --- Responder -----------------------------------------------------------------------------

    async def progress(self, text: str) -> None:
        if self._answered:
            return
        if self.shown:
            async with self._lock:
                await self.inner.progress(text)
            return
        self._latest = text
        if self._timer is None:
            self._timer = asyncio.create_task(self._send_later(), name="tipline-progress-later")

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        await self._settle()
        async with self._lock:
            await self.inner.final(reply, request)

    async def say(self, text: str) -> None:
        await self._settle()
        async with self._lock:
            await self.inner.say(text)

    # --- inside --------------------------------------------------------------------------------

    async def _send_later(self) -> None:
        await asyncio.sleep(self.after)
        self._sending = True
        async with self._lock:
            if self._answered or self._latest is None:
                return
            try:
                await self.inner.progress(self._latest)
                self.shown = True
            except Exception:  # the answer will try its own send; a late placeholder must not fail the check
                log.warning("could not send the progress message", exc_info=True)

    async def _settle(self) -> None:
        """The answer is next: no placeholder after it, and no "typing…" call landing after it either
        (Telegram clears "typing…" when the bot's message arrives; one sent later would show for 5 s)."""
        self._answered = True
        timer, self._timer = self._timer, None
        if timer is not None:
            if not self._sending:
                timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)
        self._stop.set()
        task = self._presence_task
        if task is not None and not task.done():
            done, _ = await asyncio.wait({task}, timeout=STOP_WAIT_S)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _keep_present(self) -> None:
        assert self.presence is not None and self.req is not None
        while not self._stop.is_set():
            try:
                await self.presence.show(self.req, self.where)
            except Exception:  # a cosmetic sign: the check goes on without it
                log.warning("could not show the working sign", exc_info=True)
            if self.presence.refresh_s is None:
                return
            try:
                await asyncio.wait_for(self._stop.wait(), self.presence.refresh_s)
            except TimeoutError:
                pass
