"""News outlets' RSS/Atom feeds as watched sources, beside watched channels (bot/watch.py):
`/watch add https://outlet.example/rss.xml` (an address that is not a t.me link is a feed).

`FeedWatch`:
- `add(url)`: the feed is recorded and read at once; an address that is not found, refused (401/403),
  not a feed, or not a public address is refused with the reason.
- `poll(url)`: one conditional GET (core/watch/feed_reader.py) with the last answer's ETag and Last-Modified;
  a 304 stores nothing. Each item not read before (by guid/id, else link) becomes a tracked message of
  the chat ("feed", "<address without scheme>") with its article link, its time and its text (title and
  summary), named by the outlet (the feed's title, else its host), so "also reported by", digests,
  /trending and alerts count outlets as channels.
- `poll_due()`: every feed last read TIPLINE_WATCH_INTERVAL_S ago (or never), one request at a time. A
  429 (or a 503 with Retry-After) pauses that feed only: outlets are different sites.

Statuses: ok, not_found, forbidden, not_feed, slowed, layout (a feed whose items tipline cannot read),
unreachable, blocked (not a public address), error (a bug: logged with its traceback once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.render import ago
from core.watch.feed_reader import FeedItem, FeedOutcome, FeedReader, NotAFeed, feed_chat_id, feed_host, feed_url
from storage.messages import message_key as stored_key
from storage.watched_feeds import FeedItemRow, FeedStore, WatchedFeed

if TYPE_CHECKING:
    from core.corroboration.corroborator import Corroborator

log = logging.getLogger(__name__)

PLATFORM = "feed"  # a watched feed is the tracked chat ("feed", "<address without scheme>")
MAX_FEEDS = 1000
REFUSED_AT_ADD = frozenset({"not_found", "forbidden", "not_feed", "blocked"})

STATUS_TEXT = {
    "new": "not read yet",
    "ok": "ok",
    "not_found": "not found (the address answers 404: moved or removed?)",
    "forbidden": "refused (the site does not let tipline read it)",
    "not_feed": "not a feed (no RSS or Atom in what the address answers)",
    "slowed": "slowed down by the site",
    "layout": "feed not understood (its items have no title, text or link tipline can read)",
    "unreachable": "the site could not be reached",
    "blocked": "not a public address (only feeds on the public web are read)",
    "error": "reading it failed",
}


def chat_id_of(url: str) -> str:
    return feed_chat_id(url)


def item_key(url: str, message_id: str) -> str:
    return stored_key(PLATFORM, chat_id_of(url), message_id)


def outlet_name(feed: WatchedFeed | None, url: str, title: str = "") -> str:
    """How cards and digests name the outlet: the feed's title, else its host."""
    return (title or (feed.title if feed else "") or feed_host(url))[:100]


@dataclass(frozen=True)
class FeedPollReport:
    url: str
    status: str
    detail: str = ""
    read: int = 0  # items not read before
    stored: int = 0  # of them, stored as tracked messages
    retry_at: float | None = None


async def pause(seconds: float, stop: asyncio.Event | None = None) -> None:
    """The gap between two requests to one host, cut short when `stop` is set."""
    if seconds <= 0:
        return
    if stop is None:
        await asyncio.sleep(seconds)
        return
    with suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def every(seconds: float) -> str:
    """600 -> "10 min", 3600 -> "1 h", 30 -> "30 s"."""
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _dt(ts: float | None) -> datetime:
    return datetime.fromtimestamp(ts or 0.0, UTC)


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def describe_feed(feed: WatchedFeed, now: float) -> str:
    """One feed's line in /watch list and `tipline doctor`."""
    title = f" ({feed.title})" if feed.title else ""
    read = f"read {ago(_dt(feed.last_poll_at), _dt(now))}" if feed.last_poll_at else "not read yet"
    if feed.status == "ok":
        last = f"last item {ago(_dt(feed.last_item_at), _dt(now))}" if feed.last_item_at else "no items yet"
        text = f"ok: {last}, {read}; {feed.items} item{'s' if feed.items != 1 else ''} stored"
        if feed.unchanged:
            text += f", {feed.unchanged} read{'s' if feed.unchanged != 1 else ''} unchanged (304)"
        if feed.detail:
            text += f" ({feed.detail})"
    elif feed.status == "slowed" and feed.retry_at:
        text = f"{STATUS_TEXT['slowed']} until {_utc(feed.retry_at)}"
    else:
        text = STATUS_TEXT.get(feed.status, feed.status) + (f" [{feed.detail}]" if feed.detail else "")
        if feed.status != "new":
            text += f"; {read}"
            if feed.last_ok_at:
                text += f", last read fine {ago(_dt(feed.last_ok_at), _dt(now))}"
    return f"{feed.url}{title} — {text}"


class FeedWatch:
    def __init__(self, store: FeedStore, corroborator: Corroborator, reader: FeedReader, *,
                 interval_s: float = 600.0, retention_days: float = 30.0, enabled: bool = True,
                 clock: Callable[[], float] = time.time, request_gap_s: float = 1.0):
        self.store = store
        self.corroborator = corroborator
        self.messages = corroborator.store
        self.reader = reader
        self.interval_s = interval_s
        self.retention_s = retention_days * 86400.0
        self.enabled = enabled  # False with TIPLINE_OFFLINE: feeds are recorded, nothing is read
        self.clock = clock
        self.request_gap_s = request_gap_s
        self._locks: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        await self.reader.aclose()

    # --- commands ------------------------------------------------------------------------------

    async def add(self, ref: str, *, by: object = None) -> str:
        """Watch the feed at `ref` and read it once; one line saying how it went."""
        try:
            url = feed_url(ref)
        except NotAFeed as exc:
            return f"“{ref}” not added: {exc}."
        if len(await self.store.feeds()) >= MAX_FEEDS:
            return f"{url} not added: {MAX_FEEDS} feeds are watched already."
        if not await self.store.add(url, by=by, now=self.clock()):
            feed = await self.store.get(url)
            return f"{url} is already watched: {describe_feed(feed, self.clock()) if feed else 'ok'}."
        if not self.enabled:
            await self._track(url, "")
            return f"{url} is on the list, but TIPLINE_OFFLINE=true: nothing is read until it is off."
        report = await self.poll(url)
        if report.status in REFUSED_AT_ADD:
            await self.forget(url)
            return f"{url} not added: {STATUS_TEXT[report.status]}" + (f" [{report.detail}]" if report.detail else "") \
                + "."
        feed = await self.store.get(url)
        name, interval = outlet_name(feed, url), every(self.interval_s)
        if report.status == "ok":
            return (f"Watching {name} ({url}): {report.stored} item{'s' if report.stored != 1 else ''} stored from "
                    f"its feed; new items are read every {interval}.")
        if report.status == "slowed" and report.retry_at:
            return f"Watching {url}; the site asked to slow down, so it is first read at {_utc(report.retry_at)}."
        return (f"Watching {url}, but the first read failed: {STATUS_TEXT.get(report.status, report.status)}"
                + (f" [{report.detail}]" if report.detail else "") + f"; it is tried again every {interval}.")

    async def remove(self, ref: str) -> str:
        try:
            url = feed_url(ref)
        except NotAFeed as exc:
            return f"“{ref}” is not a feed: {exc}."
        feed = await self.store.get(url)
        if feed is None or feed.removed:
            return f"{url} is not watched."
        n = await self.forget(url)
        return f"Stopped watching {url}; its {n} stored item{'s' if n != 1 else ''} deleted."

    # --- polling -------------------------------------------------------------------------------

    async def poll_due(self, stop: asyncio.Event | None = None) -> int:
        """Read every feed that is due, oldest read first; returns how many were read."""
        for feed in await self.store.feeds(removed=True):  # `tipline watch remove` while this process ran
            await self.forget(feed.url)
        if not self.enabled:
            return 0
        done: set[str] = set()
        for _ in range(3):  # feeds that fell due while this cycle read others are read right after it
            now = self.clock()
            due = [f for f in await self.store.feeds()
                   if f.url not in done and (f.retry_at or 0.0) <= now
                   and (f.last_poll_at is None or now - f.last_poll_at >= self.interval_s or f.retry_at is not None)]
            if not due or (stop is not None and stop.is_set()):
                break
            due.sort(key=lambda f: f.last_poll_at or 0.0)
            for feed in due:
                if stop is not None and stop.is_set():
                    break
                if done:
                    await pause(self.request_gap_s, stop)
                done.add(feed.url)
                try:
                    await self.poll(feed.url)
                except Exception as exc:  # a bug, not the feed: its status says so, the log has it once
                    if feed.status != "error":
                        log.exception("watch: reading the feed %s failed", feed.url)
                    await self.store.record(feed.url, status="error", detail=type(exc).__name__, now=self.clock())
        return len(done)

    async def due_times(self) -> list[float]:
        """When each feed is next due (its Retry-After, else its last read plus the interval)."""
        return [f.retry_at if f.retry_at is not None else (f.last_poll_at or 0.0) + self.interval_s
                for f in await self.store.feeds()]

    async def poll(self, url: str) -> FeedPollReport:
        """Read the feed at `url` once (one read at a time per feed)."""
        async with self._locks.setdefault(url, asyncio.Lock()):
            return await self._poll(url)

    async def _poll(self, url: str) -> FeedPollReport:
        feed = await self.store.get(url)
        if feed is None or feed.removed:
            return FeedPollReport(url, "removed")
        now = self.clock()
        if (feed.retry_at or 0.0) > now:
            return FeedPollReport(url, "slowed", retry_at=feed.retry_at)
        # The validators are only worth sending when the items they vouch for were stored.
        fresh_start = feed.status == "new"
        outcome = await self.reader.read(url, etag="" if fresh_start else feed.etag,
                                         last_modified="" if fresh_start else feed.last_modified)
        if outcome.status == "not_modified":
            await self.store.record(url, status="ok", detail="", now=now, ok=True, unchanged=True)
            self._changed(feed, "ok")
            return FeedPollReport(url, "ok", "HTTP 304")
        if outcome.status != "ok" or outcome.page is None:
            return await self._refused(feed, outcome, now)
        page = outcome.page
        await self._track(url, outlet_name(feed, url, page.title))
        keys = {item_key(url, it.message_id): it for it in page.items}
        known = await self.store.known(keys)
        fresh = [(k, it) for k, it in keys.items() if k not in known]
        stored, failed = await self._store(url, outlet_name(feed, url, page.title), fresh)
        newest = max((it.at.timestamp() for it in page.items if it.at is not None), default=None)
        detail = outcome.detail
        # A read whose items could not all be stored keeps no validators: the next read asks for them again.
        await self.store.record(url, status="ok", detail=detail, now=now, ok=True, title=page.title or None,
                                etag="" if failed else outcome.etag, last_modified="" if failed else outcome.last_modified,
                                last_item_at=newest, stored=stored)
        self._changed(feed, "ok")
        return FeedPollReport(url, "ok", detail, read=len(fresh), stored=stored)

    def _changed(self, feed: WatchedFeed, status: str) -> None:
        if status == "ok" and feed.status not in ("ok", "new"):
            log.info("watch: the feed %s is read again (was: %s)", feed.url, feed.status)

    async def _store(self, url: str, outlet: str, fresh: list[tuple[str, FeedItem]]) -> tuple[int, int]:
        """Store the new items as tracked messages, oldest first; returns (stored, failed). A failed item is
        not recorded as read, so the next read stores it."""
        from core.corroboration.corroborator import TrackedMessage

        if not fresh:
            return 0, 0
        now = self.clock()
        cutoff = now - self.retention_s
        chat = chat_id_of(url)
        rows: dict[str, FeedItemRow] = {}
        messages: list[tuple[str, TrackedMessage]] = []
        for key, it in fresh:
            at = it.at if it.at is not None and it.at.timestamp() <= now + 3600 else datetime.fromtimestamp(now, UTC)
            keep = at.timestamp() >= cutoff
            rows[key] = FeedItemRow(key, url, at.timestamp(), keep)
            if keep:
                messages.append((key, TrackedMessage(PLATFORM, chat, it.message_id, it.text, at, author=outlet,
                                                     permalink=it.link, kind="channel")))
        messages.sort(key=lambda km: km[1].at)
        outcomes = await asyncio.gather(*(self.corroborator.ingest(m) for _, m in messages), return_exceptions=True)
        failed = {k for (k, _), r in zip(messages, outcomes) if isinstance(r, BaseException)}
        if failed:
            log.warning("watch: the feed %s: %d item(s) could not be stored; they are read again next time", url,
                        len(failed))
        await self.store.add_items([r for k, r in rows.items() if k not in failed])
        return sum(1 for r in outcomes if isinstance(r, str)), len(failed)

    async def _track(self, url: str, outlet: str) -> None:
        """The feed as a tracked chat (a channel: an outlet with an editor), named by the outlet."""
        chat = chat_id_of(url)
        known = await self.messages.chat(PLATFORM, chat)
        if known is None or not known.tracking or (outlet and known.title != outlet):
            await self.messages.set_flag(PLATFORM, chat, "tracking", True, by="watch", kind="channel",
                                         title=outlet, handle=outlet)

    async def _refused(self, feed: WatchedFeed, outcome: FeedOutcome, now: float) -> FeedPollReport:
        retry_at = now + (outcome.retry_after or 0.0) if outcome.status == "slowed" else None
        await self.store.record(feed.url, status=outcome.status, detail=outcome.detail, now=now, retry_at=retry_at)
        if outcome.status != feed.status:
            if outcome.status == "slowed":
                log.warning("watch: the feed %s asked to slow down: no request before %s", feed.url,
                            _utc(retry_at or now))
            else:
                log.warning("watch: the feed %s: %s [%s]", feed.url, STATUS_TEXT.get(outcome.status, outcome.status),
                            outcome.detail)
        return FeedPollReport(feed.url, outcome.status, outcome.detail, retry_at=retry_at)

    async def forget(self, url: str) -> int:
        """Stop watching `url` and delete what was stored of it; returns how many items."""
        chat = chat_id_of(url)
        if await self.messages.chat(PLATFORM, chat) is not None:
            await self.messages.set_flag(PLATFORM, chat, "tracking", False, by="watch", kind="channel")
        deleted = await self.corroborator.forget(PLATFORM, chat)
        await self.store.delete(url)
        return deleted

    async def delete_older(self, ts: float) -> None:
        await self.store.delete_older(ts)
