"""The account reader of watched channels: public channels without a web preview read through a
Telegram account the operator logged in once (`tipline watch login`), over MTProto.

This module holds the rules and none of the protocol: the requests go through a `ChannelSource`
(core/watch/mtproto.py, the only module that imports Telethon, an optional extra). Its answers are the preview
reader's `Outcome`s with the same `PreviewPost`s, so bot/watch.py stores them as it stores preview posts.

Pacing, because Telegram limits or bans accounts that look automated:
- each public name is resolved once (`contacts.resolveUsername`, the call Telegram floods soonest) and its
  id and access hash kept in SQLite (storage/watched.py `telegram_peers`); a name that named no channel is
  asked again at most once a day;
- no dialog list is ever read, no channel joined: one history request per read, for the posts above the
  last one read (`min_id`), ~20 at a time, paging back with `offset_id` as the preview pages with ?before=;
- at most one request per `gap_s` seconds (TIPLINE_TELEGRAM_ACCOUNT_GAP_S), whatever the channel;
- a FLOOD_WAIT pauses every account request until it has passed (status "slowed down until …").

Only a channel's public name (and post ids) goes out in these requests; nothing of users' messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.watch.telegram_preview import MAX_RETRY_S, Outcome, PreviewPage, PreviewPost, Status
from storage.watched import TelegramPeer, WatchStore

log = logging.getLogger(__name__)

PAGE_SIZE = 20  # posts per history request, as many as a preview page shows
RESOLVE_AGAIN_S = 86400.0  # a name that named no channel is resolved again after this


class AccountError(Exception):
    """What the account's request came back with, other than an answer."""


class AccountFlood(AccountError):
    """FLOOD_WAIT_<seconds>: no request through the account before they have passed."""

    def __init__(self, seconds: float):
        super().__init__(f"FLOOD_WAIT_{int(seconds)}")
        self.seconds = seconds


class AccountRefused(AccountError):
    """The channel cannot be read: `status` is a watch status (not_found, private, restricted, unreachable),
    or "stale" when a kept access hash no longer works (resolved again next time)."""

    def __init__(self, status: str, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class AccountLoggedOut(AccountError):
    """The session is no longer authorised (logged out elsewhere, revoked, the account banned)."""


@dataclass(frozen=True)
class Resolved:
    """A public name as Telegram resolved it."""

    kind: str  # "channel", "not_channel", "not_found"
    peer_id: int = 0
    access_hash: int = 0
    title: str = ""
    restricted: str = ""


class ChannelSource(Protocol):
    """The requests the account reader makes (core/watch/mtproto.py). Raises `AccountError`s for what Telegram
    answers; anything else is a bug or the network (read as unreachable)."""

    async def start(self) -> bool:
        """Connect; False when no account is logged in (no session, or it is no longer authorised)."""
        ...

    async def resolve(self, name: str) -> Resolved: ...

    async def history(self, name: str, peer_id: int, access_hash: int, *, min_id: int, offset_id: int,
                      limit: int) -> Sequence[PreviewPost]:
        """The channel's posts with min_id < id (< offset_id when not 0), the newest `limit` of them."""
        ...

    async def aclose(self) -> None: ...


class AccountReader:
    """Reads channels through the account, one request at a time, `gap_s` apart. `ready` is False until the
    source has started with a logged-in account, and again after Telegram says it is logged out."""

    def __init__(self, source: ChannelSource, store: WatchStore, *, gap_s: float = 5.0,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep, page_size: int = PAGE_SIZE):
        self.source = source
        self.store = store
        self.gap_s = gap_s
        self.clock = clock
        self.sleep = sleep
        self.page_size = page_size
        self.paused_until = 0.0  # a FLOOD_WAIT: no request through the account before this
        self.requests = 0  # requests sent through the account
        self.state = "not started"  # "ready", "not logged in", "logged out"
        self._turn = asyncio.Lock()
        self._last = float("-inf")

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    async def start(self) -> bool:
        """Connect once; True when an account is logged in. After a logout it is tried again on each call
        (no request: the session file says whether a new login happened)."""
        if self.state == "ready":
            return True
        try:
            ok = await self.source.start()
        except (AccountError, OSError, TimeoutError) as exc:
            log.warning("watch account: could not connect (%s); tried again at the next read", exc)
            return False
        before = self.state
        self.state = "ready" if ok else "logged out" if before == "logged out" else "not logged in"
        if self.state != before:
            log.info("watch account: %s", "logged in: channels without a public preview are read through it"
                     if ok else "no account is logged in (tipline watch login)")
        return ok

    async def aclose(self) -> None:
        await self.source.aclose()

    async def read(self, name: str, before: int | None = None, after: int = 0) -> Outcome:
        """Channel `name`'s posts above post `after` (before post `before`, when given), newest `page_size`;
        the same outcomes as the preview reader's. Never raises for what Telegram or the network does."""
        now = self.clock()
        if self.paused_until > now:
            return Outcome("slowed", retry_after=self.paused_until - now, detail="FLOOD_WAIT (account)")
        if not await self.start():
            return Outcome("logged_out", detail="no account is logged in: tipline watch login")
        try:
            return await self._read(name, before, after)
        except AccountFlood as exc:
            seconds = min(MAX_RETRY_S, max(1.0, float(exc.seconds)))
            self.paused_until = max(self.paused_until, self.clock() + seconds)
            log.warning("watch account: Telegram asked to wait %d s (reading @%s): no account request until then",
                        seconds, name)
            return Outcome("slowed", retry_after=seconds, detail=f"FLOOD_WAIT_{int(seconds)} (account)")
        except AccountLoggedOut as exc:
            self.state = "logged out"
            log.warning("watch account: Telegram says the account is logged out (%s); channels without a public "
                        "preview are not read until `tipline watch login`", exc)
            return Outcome("logged_out", detail=f"the account is logged out ({exc}): tipline watch login")
        except AccountRefused as exc:
            if exc.status == "stale":
                await self.store.forget_peer(name)
                return Outcome("unreachable", detail=f"{exc.detail}; the name is resolved again next time")
            status: Status = exc.status if exc.status in ("not_found", "private", "restricted") else "unreachable"  # type: ignore[assignment]
            return Outcome(status, detail=f"{exc.detail} (account)")
        except (OSError, TimeoutError, ConnectionError) as exc:
            return Outcome("unreachable", detail=f"Telegram's API: {type(exc).__name__}: {exc}"[:200])

    async def _read(self, name: str, before: int | None, after: int) -> Outcome:
        peer = await self._peer(name)
        if peer.kind == "not_found":
            return Outcome("not_found", detail=f"@{name} names nobody (account)")
        if peer.kind != "channel":
            return Outcome("not_channel", detail=f"@{name} is a user, a bot or a group (account)")
        if peer.restricted:
            return Outcome("restricted", detail=peer.restricted)
        await self._wait_turn()
        posts = await self.source.history(name, peer.peer_id, peer.access_hash, min_id=max(0, after),
                                          offset_id=before or 0, limit=self.page_size)
        mine = sorted((p for p in posts if p.channel == name and p.post_id > after
                       and (not before or p.post_id < before)), key=lambda p: p.post_id)
        page = PreviewPage(posts=mine, title=peer.title, username=f"@{name}", channel_header=True,
                           history=True, via="account")
        return Outcome("ok", page=page)

    async def _peer(self, name: str) -> TelegramPeer:
        """The kept resolution of `name`, or one resolveUsername request (kept whatever it said)."""
        kept = await self.store.peer(name)
        if kept is not None and (kept.kind == "channel" or self.clock() - kept.resolved_at < RESOLVE_AGAIN_S):
            return kept
        await self._wait_turn()
        try:
            r = await self.source.resolve(name)
        except AccountRefused as exc:
            if exc.status != "not_found":
                raise
            r = Resolved("not_found")
        peer = TelegramPeer(name, r.kind, r.peer_id, r.access_hash, r.title, r.restricted, self.clock())
        await self.store.keep_peer(peer)
        return peer

    async def _wait_turn(self) -> None:
        """At most one request per gap_s through the account, across every channel."""
        async with self._turn:
            wait = self._last + self.gap_s - self.clock()
            if wait > 0:
                await self.sleep(wait)
            self._last = self.clock()
            self.requests += 1
