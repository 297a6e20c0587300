"""Watched public Telegram channels: posts read from the channel's public web preview
(`https://t.me/s/<name>`, core/watch/telegram_preview.py) join the tracked messages, so "also reported by",
digests, /trending and alerts count channels a newsroom reads but does not run. No admin rights in the
channel and no Telegram account are needed; only public pages are read (docs/watch.md).

`WatchService`:
- `add(refs)`: each channel is recorded and read at once (the preview's first page: its ~20 latest posts);
  a name that is not found, private, restricted or has no public preview is refused with the reason.
- `poll(name)`: one read. New posts are those above the last post id read; after downtime the reader pages
  back with `?before=<id>` up to TIPLINE_WATCH_BACKFILL_PAGES pages (older ones are skipped and the status
  says so). Each post is stored once (by id), as a tracked message of the chat ("telegram", "@<name>") with
  its link https://t.me/<name>/<id>, its time and text; its views and whether it is a forward (and of what)
  are kept beside it (storage/watched.py). A forward of a channel's post that a watched channel already
  carried (the original, or another forward of it) is not stored again: a forward chain counts once.
  A post's photo is downloaded from the page's photo URL (core/watch/preview_photos.py: the preview's host or
  Telegram's CDN only, bounded) and its perceptual hash stored with the tracked message, so the same
  picture in several channels links their posts into one story; a photo-only post is stored by its hash.
- `run(stop)`: the poller of `tipline run`: it reads the channels due (last read more than
  TIPLINE_WATCH_INTERVAL_S ago, or never: one added by `tipline watch add` while the bot runs), one
  request at a time, REQUEST_GAP_S apart, then those that fell due meanwhile, then sleeps until the next
  is due (at most TICK_S). A 429 pauses every read until its Retry-After has passed.
  Nothing a channel or the network does stops it: each outcome is the channel's status, logged once
  when it changes.

A channel without a public preview is read through the account reader (core/watch/account_reader.py) when an
operator logged an account in (`tipline watch login`): the preview is tried first, and a channel whose
preview shows nothing is then read through the account, and from then on only through it (`reader`
"account"). Its posts take the same path as preview posts. A FLOOD_WAIT pauses the account's reads only.

Statuses: ok, no_preview, not_found, private, restricted, slowed, layout (a 200 page with no post
tipline can read), unreachable, not_channel and logged_out (the account reader's), error (a bug: logged
with its traceback once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bot.render import ago
from bot.watch_feeds import every as _every, pause
from core.watch.feed_reader import is_feed_ref
from core.watch.preview_photos import PreviewPhotos
from core.watch.telegram_preview import NotAChannel, Outcome, PreviewPost, PreviewReader, channel_name, short_count
from schema.models import AlsoReported, ReportedBy
from storage.messages import message_key as stored_key
from storage.watched import WatchedChannel, WatchedPost, WatchStore

if TYPE_CHECKING:
    from bot.settings import Settings
    from core.watch.account_reader import AccountReader
    from bot.watch_feeds import FeedWatch
    from core.corroboration.corroborator import Corroborator

log = logging.getLogger(__name__)

PLATFORM = "telegram"  # a watched channel is the tracked chat ("telegram", "@<name>")
TICK_S = 30.0  # how often the poller looks for channels due (a channel added from the CLI waits at most this)
MIN_WAIT_S = 1.0  # the poller's shortest sleep between two cycles
PASSES = 3  # looks for channels due within one cycle
REQUEST_GAP_S = 1.0  # between two page requests to Telegram
MAX_AT_ONCE = 20  # channels one /watch add takes
MAX_CHANNELS = 1000
LIST_CHARS = 3500  # /watch list fits one chat message (Telegram: 4,096 characters)
REFUSED_AT_ADD = frozenset({"not_found", "private", "no_preview", "restricted", "not_channel"})
ACCOUNT = "account"  # a channel's reader when it is read through the account

STATUS_TEXT = {
    "new": "not read yet",
    "ok": "ok",
    "no_preview": "no public preview (its t.me/s/ page shows no posts: a group, a user, a bot, or a channel "
                  "with its preview off)",
    "not_found": "not found (no public channel by that name: renamed or deleted?)",
    "private": "private (only public channels can be read)",
    "restricted": "restricted by Telegram",
    "slowed": "slowed down by Telegram",
    "layout": "page not understood (t.me answered, but no post could be read from it: has the preview's "
              "layout changed?)",
    "unreachable": "t.me could not be reached",
    "error": "reading it failed",
    "not_channel": "not a channel (a user, a bot or a group: only channels are read)",
    "logged_out": "no public preview, and the account reader is logged out",
}


def chat_id_of(name: str) -> str:
    return "@" + name


def message_key(name: str, post_id: int) -> str:
    """The tracked message a post is stored as: "telegram:@<name>:<id>" (storage/messages.py message_key)."""
    return stored_key(PLATFORM, chat_id_of(name), post_id)


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M UTC" if abs(ts - time.time()) < 86400 else
                                                    "%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class PollReport:
    name: str
    status: str
    detail: str = ""
    read: int = 0  # new posts read
    stored: int = 0  # of them, stored as tracked messages
    pages: int = 0
    retry_at: float | None = None
    via: str = "preview"  # the reader that read it


class WatchService:
    def __init__(self, store: WatchStore, corroborator: Corroborator, reader: PreviewReader, *,
                 interval_s: float = 600.0, backfill_pages: int = 5, retention_days: float = 30.0,
                 enabled: bool = True, clock: Callable[[], float] = time.time, request_gap_s: float = REQUEST_GAP_S,
                 tick_s: float = TICK_S, photos: PreviewPhotos | None = None, account: AccountReader | None = None,
                 feeds: FeedWatch | None = None):
        self.store = store
        self.photos = photos  # None: posts' photos are not read (TIPLINE_WATCH_PHOTOS=false)
        self.corroborator = corroborator
        self.messages = corroborator.store
        self.reader = reader
        self.account = account  # None: no account configured; channels without a preview are not read
        self.interval_s = interval_s
        self.backfill_pages = backfill_pages
        self.retention_s = retention_days * 86400.0
        self.enabled = enabled  # False with TIPLINE_OFFLINE: channels are recorded, nothing is read
        self.clock = clock
        self.request_gap_s = request_gap_s
        self.tick_s = tick_s
        self.feeds = feeds  # news outlets' RSS/Atom feeds, watched beside the channels (bot/watch_feeds.py)
        self.paused_until = 0.0  # a 429's Retry-After: no request to Telegram before this
        self._locks: dict[str, asyncio.Lock] = {}
        self._cleaned = 0.0

    async def aclose(self) -> None:
        await self.reader.aclose()
        if self.account is not None:
            await self.account.aclose()
        if self.photos is not None:
            await self.photos.aclose()
        if self.feeds is not None:
            await self.feeds.aclose()

    # --- commands ------------------------------------------------------------------------------

    async def add(self, refs: Sequence[str], *, by: object = None) -> list[str]:
        """Watch each channel in `refs` and read it once; one line per channel saying how it went."""
        lines: list[str] = []
        names: list[str] = []
        feeds: list[str] = []
        for ref in refs:
            if self.feeds is not None and is_feed_ref(ref):
                feeds.append(ref)
                continue
            try:
                name = channel_name(ref)
            except NotAChannel as exc:
                lines.append(f"“{ref}” not added: {'private: ' if exc.private else ''}{exc}.")
                continue
            if name not in names:
                names.append(name)
        if len(names) + len(feeds) > MAX_AT_ONCE:
            left = [*("@" + n for n in names), *feeds][MAX_AT_ONCE:]
            lines.append(f"At most {MAX_AT_ONCE} channels and feeds at once: {', '.join(left)} not added.")
            names = names[:MAX_AT_ONCE]
            feeds = feeds[:MAX_AT_ONCE - len(names)]
        watched = len(await self.store.channels())
        for i, name in enumerate(names):
            if watched >= MAX_CHANNELS:
                lines.append(f"@{name} not added: {MAX_CHANNELS} channels are watched already.")
                continue
            if not await self.store.add(name, by=by, now=self.clock()):
                ch = await self.store.get(name)
                lines.append(f"@{name} is already watched: {self.describe(ch) if ch else 'ok'}.")
                continue
            watched += 1
            if not self.enabled:
                await self._track(name, "")
                lines.append(f"@{name} is on the list, but TIPLINE_OFFLINE=true: nothing is read until it is off.")
                continue
            if i:
                await self._pause()
            report = await self.poll(name)
            if report.status in REFUSED_AT_ADD:
                await self._forget(name)
                hint = (" An account reader could read it: docs/watch.md, `tipline watch login`."
                        if report.status == "no_preview" and self.account is None else "")
                lines.append(f"@{name} not added: {STATUS_TEXT[report.status]}"
                             + (f" [{report.detail}]" if report.detail else "") + "." + hint)
                continue
            lines.append(self._added(name, report))
        for ref in feeds:
            assert self.feeds is not None
            lines.append(await self.feeds.add(ref, by=by))
        return lines

    def _added(self, name: str, report: PollReport) -> str:
        every = _every(self.interval_s)
        if report.status == "ok":
            where = ("through the account (it has no public preview)" if report.via == ACCOUNT
                     else "from its public preview")
            return (f"Watching @{name}: {report.stored} post{'s' if report.stored != 1 else ''} stored {where}; "
                    f"new posts are read every {every}.")
        if report.status == "slowed" and report.retry_at:
            return f"Watching @{name}; Telegram asked to slow down, so it is first read at {_utc(report.retry_at)}."
        return (f"Watching @{name}, but the first read failed: {STATUS_TEXT.get(report.status, report.status)}"
                + (f" [{report.detail}]" if report.detail else "") + f"; it is tried again every {every}.")

    async def remove(self, refs: Sequence[str]) -> list[str]:
        lines: list[str] = []
        for ref in refs:
            if self.feeds is not None and is_feed_ref(ref):
                lines.append(await self.feeds.remove(ref))
                continue
            try:
                name = channel_name(ref)
            except NotAChannel as exc:
                lines.append(f"“{ref}” is not a channel: {exc}.")
                continue
            ch = await self.store.get(name)
            if ch is None or ch.removed:
                lines.append(f"@{name} is not watched.")
                continue
            n = await self._forget(name)
            lines.append(f"Stopped watching @{name}; its {n} stored post{'s' if n != 1 else ''} deleted.")
        return lines

    async def listing(self, limit: int = LIST_CHARS) -> str:
        """Every watched channel and feed with its status, those that cannot be read first; cut to `limit`
        characters (one chat message), the rest counted."""
        from bot.watch_feeds import describe_feed

        channels = await self.store.channels()
        feeds = await self.feeds.store.feeds() if self.feeds is not None else []
        if not channels and not feeds:
            return ("No channels are watched. /watch add @channel (or a t.me link; several at once) reads a public "
                    "channel's posts from its web preview, with no admin rights in it"
                    + ("; /watch add https://outlet.example/rss.xml reads a news outlet's RSS or Atom feed."
                       if self.feeds is not None else "."))
        off = "" if self.enabled else " (not read: TIPLINE_OFFLINE=true)"
        now = self.clock()
        blocks: list[tuple[str, list[str]]] = []
        if channels:
            ordered = sorted(channels, key=lambda c: (c.status in ("ok", "new"), c.name))
            blocks.append((f"Watched channels ({len(channels)}), read from their public web preview every "
                           f"{_every(self.interval_s)}{off}:", [f"• {self.describe(c, now)}" for c in ordered]))
        if feeds:
            by_status = sorted(feeds, key=lambda f: (f.status in ("ok", "new"), f.url))
            blocks.append((f"Watched feeds ({len(feeds)}), read every {_every(self.interval_s)}{off}:",
                           [f"• {describe_feed(f, now)}" for f in by_status]))
        lines: list[str] = []
        size = 0
        left = sum(len(rows) for _, rows in blocks)
        for head, rows in blocks:
            if lines and size + len(head) + 1 > limit - 80:
                break
            lines.append(head)
            size += len(head) + 1
            for line in rows:
                if size + len(line) + 1 > limit - 80:
                    break
                lines.append(line)
                size += len(line) + 1
                left -= 1
            else:
                continue
            break  # the message is full: what did not fit is counted
        if left:
            lines.append(f"(+{left} more: `tipline watch list` shows every channel and feed)")
        return "\n".join(lines)

    def describe(self, ch: WatchedChannel, now: float | None = None) -> str:
        """`@name (Title) — ok: last post 12 min ago, read 3 min ago; 20 posts stored`."""
        return describe(ch, now if now is not None else self.clock())

    # --- polling -------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """The poller of `tipline run`, until `stop` is set: it reads what is due, then sleeps until the next
        channel or feed is due (at most `tick_s`, which is how soon one added from the CLI is seen). Never
        raises: a failed cycle is logged."""
        while not stop.is_set():
            wait = self.tick_s
            try:
                await self.poll_due(stop)
                wait = await self.until_due()
            except Exception:
                log.exception("watch: a polling cycle failed; the next one tries again")
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)

    async def until_due(self) -> float:
        """Seconds until the next channel or feed is due, within [MIN_WAIT_S, tick_s]."""
        now = self.clock()
        times = [max(self.paused_until, c.retry_at if c.retry_at is not None else (c.last_poll_at or 0.0)
                     + self.interval_s) for c in await self.store.channels()]
        if self.feeds is not None:
            times += await self.feeds.due_times()
        return min(self.tick_s, max(MIN_WAIT_S, min(times, default=now + self.tick_s) - now))

    async def poll_due(self, stop: asyncio.Event | None = None) -> int:
        """Read every channel and feed that is due, oldest read first; returns how many were read. Channels
        and feeds are read side by side: a slow Telegram does not hold the outlets back, nor they it."""
        now = self.clock()
        if now - self._cleaned >= 3600:
            await self.store.delete_older(now - self.retention_s)
            if self.feeds is not None:
                await self.feeds.delete_older(now - self.retention_s)
            self._cleaned = now
        if self.feeds is None:
            return await self._poll_channels(stop)
        counts = await asyncio.gather(self._poll_channels(stop), self.feeds.poll_due(stop), return_exceptions=True)
        for failed in (c for c in counts if isinstance(c, BaseException)):
            log.error("watch: a polling cycle failed; the next one tries again", exc_info=failed)
        return sum(c for c in counts if isinstance(c, int))

    async def _poll_channels(self, stop: asyncio.Event | None) -> int:
        for ch in await self.store.channels(removed=True):  # `tipline watch remove` while this process ran
            await self._forget(ch.name)
        done: set[str] = set()
        # Channels that fell due while this cycle read others are read right after it, not a tick later.
        for _ in range(PASSES):
            now = self.clock()
            if not self.enabled or (stop is not None and stop.is_set()):
                break
            # Due: never read, read an interval ago, or slowed down and its Retry-After has passed.
            due = [c for c in await self.store.channels()
                   if c.name not in done and (c.retry_at or 0.0) <= now and self._paused_for(c) <= now
                   and (c.last_poll_at is None or now - c.last_poll_at >= self.interval_s or c.retry_at is not None)]
            if not due:
                break
            due.sort(key=lambda c: c.last_poll_at or 0.0)
            # Two queues side by side: the account's pacing (seconds per request) must not hold up the previews.
            through_account = [c for c in due if self._via_account(c)]
            previews = [c for c in due if not self._via_account(c)]
            await asyncio.gather(self._read_each(previews, stop, done, gap=True),
                                 self._read_each(through_account, stop, done, gap=False))
        return len(done)

    async def _read_each(self, channels: Sequence[WatchedChannel], stop: asyncio.Event | None, done: set[str], *,
                         gap: bool) -> None:
        for ch in channels:
            if stop is not None and stop.is_set():
                break
            if self._paused_for(ch) > self.clock():
                continue  # its reader was told to slow down; the other reader's channels go on
            if done and gap:
                await self._pause(stop)  # the account reader paces its own requests
            done.add(ch.name)
            try:
                await self.poll(ch.name)
            except Exception as exc:  # a bug, not the channel: its status says so, the log has it once
                if ch.status != "error":
                    log.exception("watch: reading @%s failed", ch.name)
                await self.store.record(ch.name, status="error", detail=type(exc).__name__, now=self.clock())

    async def _pause(self, stop: asyncio.Event | None = None) -> None:
        await pause(self.request_gap_s, stop)

    async def poll(self, name: str) -> PollReport:
        """Read channel `name` once (one read at a time per channel)."""
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            return await self._poll(name)

    def _via_account(self, ch: WatchedChannel) -> bool:
        return ch.reader == ACCOUNT and self.account is not None and self.account.state in ("ready", "not started")

    def _paused_for(self, ch: WatchedChannel) -> float:
        """Until when the channel's reader must not be asked (a 429 from t.me, a FLOOD_WAIT for the account)."""
        reader_pause = self.account.paused_until if ch.reader == ACCOUNT and self.account is not None \
            else self.paused_until
        return max(reader_pause, ch.retry_at or 0.0)

    async def _first(self, ch: WatchedChannel) -> tuple[Outcome, str]:
        """The channel's first page and the reader that gave it: the preview, or the account for a channel
        without a preview when an account is logged in (then kept as the channel's reader)."""
        if ch.reader == ACCOUNT and self.account is not None and await self.account.start():
            return await self.account.read(ch.name, after=ch.last_post_id), ACCOUNT
        outcome = await self.reader.read(ch.name)
        if outcome.status != "no_preview" or self.account is None:
            return outcome, "preview"
        if not await self.account.start():
            why = "the account is logged out" if self.account.state == "logged out" else "no account is logged in"
            if ch.reader == ACCOUNT:
                return Outcome("logged_out", detail=f"{why}: tipline watch login"), ACCOUNT
            return Outcome("no_preview", detail=f"{outcome.detail}; the account reader: {why} (tipline watch "
                                                "login)"), "preview"
        through = await self.account.read(ch.name, after=ch.last_post_id)
        if through.status in ("unreachable", "logged_out"):
            return Outcome("no_preview", detail=f"{outcome.detail}; the account reader: {through.detail}"), "preview"
        if through.status == "ok":
            await self.store.set_reader(ch.name, ACCOUNT)
            log.info("watch: @%s has no public preview; it is read through the account", ch.name)
        return through, ACCOUNT

    async def _poll(self, name: str) -> PollReport:
        ch = await self.store.get(name)
        if ch is None or ch.removed:
            return PollReport(name, "removed")
        now = self.clock()
        wait = self._paused_for(ch)
        if wait > now:
            return PollReport(name, "slowed", retry_at=wait)
        first, via = await self._first(ch)
        if first.status != "ok" or first.page is None:
            return await self._refused(ch, first, now, via)
        page = first.page
        seen = {p.post_id: p for p in page.posts if p.channel == name}
        if not seen and page.via == ACCOUNT:  # the account answers only posts above the last one read
            await self._track(name, page.title)
            await self.store.record(name, status="ok", detail="", now=now, ok=True, title=page.title or None)
            return PollReport(name, "ok", via=via)
        if not seen:  # posts, but not this name's: a page tipline does not understand
            return await self._refused(ch, Outcome("layout", detail=f"the page's posts are not @{name}'s"), now, via)
        await self._track(name, page.title)
        pages, missed = 1, False
        whole = via == ACCOUNT and self.account is not None and len(page.posts) < self.account.page_size
        if ch.last_post_id and min(seen) > ch.last_post_id + 1 and not whole:  # the account said all it has
            pages, missed = await self._back(ch, seen, via)
        fresh = sorted((p for p in seen.values() if p.post_id > ch.last_post_id), key=lambda p: p.post_id)
        if max(seen) < ch.last_post_id:
            # Every post is older than the last one read: its latest posts were deleted, or the name now
            # belongs to a new channel whose ids start again. Posts never read before are new all the same.
            known = await self.store.posts(message_key(name, i) for i in seen)
            fresh = sorted((p for p in seen.values() if message_key(name, p.post_id) not in known),
                           key=lambda p: p.post_id)
        stored, upto = await self._store(name, fresh)
        await self.store.update_views((message_key(name, p.post_id), p.views) for p in seen.values()
                                      if p.post_id <= ch.last_post_id and p.views is not None)
        newest = max(seen.values(), key=lambda p: p.post_id)
        detail = f"older posts than the last {pages} page(s) were skipped" if missed else ""
        await self.store.record(name, status="ok", detail=detail, now=now, ok=True, title=page.title or None,
                                last_post_id=upto, last_post_at=newest.at.timestamp() if newest.at else None,
                                stored=stored)
        if ch.status not in ("ok", "new"):
            log.info("watch: @%s is read again (was: %s)", name, ch.status)
        if missed:
            log.info("watch: @%s: read %d pages back after downtime; older posts were skipped", name, pages)
        return PollReport(name, "ok", detail, read=len(fresh), stored=stored, pages=pages, via=via)

    async def _back(self, ch: WatchedChannel, seen: dict[int, PreviewPost], via: str = "preview") -> tuple[int, bool]:
        """Page back with ?before= until the last post read is reached (or the backfill limit); adds to
        `seen`. Returns (pages read in all, whether posts may have been missed)."""
        pages = 1
        before = min(seen)
        for _ in range(self.backfill_pages):
            if via == ACCOUNT and self.account is not None:
                older = await self.account.read(ch.name, before, after=ch.last_post_id)  # paced by the account
            else:
                await self._pause()
                older = await self.reader.read(ch.name, before)
            pages += 1
            if older.status == "slowed":
                if via != ACCOUNT:  # the account reader holds its own pause
                    self.paused_until = max(self.paused_until, self.clock() + (older.retry_after or 0.0))
                return pages, True
            if older.status != "ok" or older.page is None:
                return pages, True
            more = [p for p in older.page.posts if p.channel == ch.name and p.post_id < before]
            if not more:
                return pages, False
            seen.update((p.post_id, p) for p in more)
            before = min(p.post_id for p in more)
            if before <= ch.last_post_id + 1:
                return pages, False
        return pages, True

    async def _store(self, name: str, fresh: Sequence[PreviewPost]) -> tuple[int, int]:
        """Store the new posts (oldest first) as tracked messages; returns (how many were stored, the
        highest post id done). A post whose storing failed is not done: it is read again next time."""
        from core.corroboration.corroborator import TrackedMessage

        if not fresh:
            return 0, 0
        cutoff = self.clock() - self.retention_s
        handle = chat_id_of(name)
        through_bot = await self.store.tracked_elsewhere(handle)  # posts arrive through /track already
        taken = await self.store.stored_origins(p.origin for p in fresh)
        now = datetime.fromtimestamp(self.clock(), UTC)

        def wanted(p: PreviewPost) -> bool:
            return (not p.service and (p.at or now).timestamp() >= cutoff and not through_bot
                    and not (p.origin and p.origin in taken))
        hashes = await self._photo_hashes(name, [p for p in fresh if p.photo_url and wanted(p)])
        rows: list[WatchedPost] = []
        messages: list[TrackedMessage] = []
        for p in fresh:
            at = p.at or now
            photo = hashes.get(p.post_id)
            keep = (bool(p.text.strip()) or photo is not None) and wanted(p)
            if keep and p.origin:
                taken.add(p.origin)
            rows.append(WatchedPost(message_key(name, p.post_id), name, p.post_id, at.timestamp(), p.views,
                                    p.forwarded_from, p.forwarded_link, p.origin, keep))
            if keep:
                messages.append(TrackedMessage(PLATFORM, handle, str(p.post_id), p.text, at, author=handle,
                                               permalink=p.link, kind="channel", photo_hash=photo))
        upto = fresh[-1].post_id
        stored = 0
        if messages:
            outcomes = await asyncio.gather(*(self.corroborator.ingest(m) for m in messages), return_exceptions=True)
            failed = [int(m.message_id) for m, r in zip(messages, outcomes) if isinstance(r, BaseException)]
            stored = sum(1 for r in outcomes if isinstance(r, str))
            if failed:
                log.warning("watch: @%s: %d post(s) could not be stored; they are read again next time", name,
                            len(failed))
                upto = min(failed) - 1
                rows = [r for r in rows if r.post_id <= upto]
        await self.store.add_posts(rows)
        return stored, upto

    async def _photo_hashes(self, name: str, posts: Sequence[PreviewPost]) -> dict[int, int]:
        """The perceptual hash of each post's photo, by post id; a photo that cannot be read has none (one
        log line per poll says how many and why the first failed)."""
        if self.photos is None or not posts:
            return {}
        results = await asyncio.gather(*(self.photos.hash(p.photo_url) for p in posts))
        failed = [r for r in results if r.hash is None]
        if failed:
            log.info("watch: @%s: %d of %d photo(s) not read (%s: %s)", name, len(failed), len(results),
                     failed[0].url[:120], failed[0].reason)
        return {p.post_id: r.hash for p, r in zip(posts, results) if r.hash is not None}

    async def _track(self, name: str, title: str) -> None:
        """The channel as a tracked chat: its posts are stored, and digests count it."""
        known = await self.messages.chat(PLATFORM, chat_id_of(name))
        if known is None or not known.tracking or (title and known.title != title):
            await self.messages.set_flag(PLATFORM, chat_id_of(name), "tracking", True, by="watch", kind="channel",
                                         title=title, handle=chat_id_of(name))

    async def _refused(self, ch: WatchedChannel, outcome: Outcome, now: float, via: str = "preview") -> PollReport:
        retry_at = None
        if outcome.status == "slowed":
            retry_at = now + (outcome.retry_after or 0.0)
            if via != ACCOUNT:  # a FLOOD_WAIT pauses the account's reads, which the account reader holds
                self.paused_until = max(self.paused_until, retry_at)
        await self.store.record(ch.name, status=outcome.status, detail=outcome.detail, now=now, retry_at=retry_at)
        if outcome.status != ch.status:
            if outcome.status == "layout":
                log.warning("watch: @%s: t.me answered 200 but tipline could read no post from the page (%s); has "
                            "the preview's layout changed? Tried again every %s", ch.name, outcome.detail,
                            _every(self.interval_s))
            elif outcome.status == "slowed" and via == ACCOUNT:
                log.warning("watch: @%s: Telegram asked the account to wait: no account request before %s", ch.name,
                            _utc(retry_at or now))
            elif outcome.status == "slowed":
                log.warning("watch: Telegram asked to slow down (reading @%s): no request before %s", ch.name,
                            _utc(retry_at or now))
            else:
                log.warning("watch: @%s: %s [%s]", ch.name, STATUS_TEXT.get(outcome.status, outcome.status),
                            outcome.detail)
        return PollReport(ch.name, outcome.status, outcome.detail, retry_at=retry_at, via=via)

    async def _forget(self, name: str) -> int:
        """Stop watching `name` and delete what was stored of it; returns how many posts."""
        handle = chat_id_of(name)
        if await self.messages.chat(PLATFORM, handle) is not None:
            await self.messages.set_flag(PLATFORM, handle, "tracking", False, by="watch", kind="channel")
        deleted = await self.corroborator.forget(PLATFORM, handle)
        await self.store.delete(name)
        return deleted


def describe(ch: WatchedChannel, now: float) -> str:
    """One channel's line in /watch list and `tipline doctor`."""
    title = f" ({ch.title})" if ch.title and ch.title.lower() != ch.name else ""
    title += " [through the account]" if ch.reader == ACCOUNT else ""
    read = f"read {ago(_dt(ch.last_poll_at), _dt(now))}" if ch.last_poll_at else "not read yet"
    if ch.status == "ok":
        last = f"last post {ago(_dt(ch.last_post_at), _dt(now))}" if ch.last_post_at else "no posts yet"
        text = f"ok: {last}, {read}; {ch.posts} post{'s' if ch.posts != 1 else ''} stored"
        if ch.detail:
            text += f" ({ch.detail})"
    elif ch.status == "slowed" and ch.retry_at:
        text = f"{STATUS_TEXT['slowed']} until {_utc(ch.retry_at)}"
    else:
        text = STATUS_TEXT.get(ch.status, ch.status) + (f" [{ch.detail}]" if ch.detail else "")
        if ch.status != "new":
            text += f"; {read}"
            if ch.last_ok_at:
                text += f", last read fine {ago(_dt(ch.last_ok_at), _dt(now))}"
    return f"@{ch.name}{title} — {text}"


def _dt(ts: float | None) -> datetime:
    return datetime.fromtimestamp(ts or 0.0, UTC)


async def with_views(also: AlsoReported, store: WatchStore) -> AlsoReported:
    """"Also reported by" with each watched channel's views and where a forward came from:
    `@chan1 (12.4k views)`, `@chan2 (forwarded from Канал Б, 3.1k views)`."""
    entries = [r for r in [*also.items, also.first_seen_in] if r is not None and r.platform == PLATFORM
               and r.chat_id.startswith("@")]
    if not entries:
        return also
    keys = {id(r): message_key(r.chat_id[1:], int(tail)) for r in entries
            if (tail := r.link.rstrip("/").rsplit("/", 1)[-1]).isdigit()}
    posts = await store.posts(keys.values())

    def named(r: ReportedBy) -> ReportedBy:
        if id(r) not in keys or (post := posts.get(keys[id(r)])) is None:
            return r
        notes = ([f"forwarded from {post.forwarded_from}"] if post.forwarded_from else []) + \
            ([f"{short_count(post.views)} views"] if post.views is not None else [])
        return r.model_copy(update={"name": f"{r.name} ({', '.join(notes)})"}) if notes else r
    first = also.first_seen_in
    return also.model_copy(update={"items": [named(r) for r in also.items],
                                   "first_seen_in": named(first) if first is not None else None})


def build_watch(settings: Settings, corroborator: Corroborator | None) -> WatchService | None:
    """The watch service of `tipline run` (None without tracking: the posts would have nowhere to go)."""
    if corroborator is None:
        return None
    from core.intake.image_limits import ImageLimits

    reader = PreviewReader(settings.telegram_preview_url, timeout_s=max(5.0, settings.fetch_timeout_s * 2),
                           max_bytes=settings.fetch_max_bytes)
    photos = PreviewPhotos(settings.telegram_preview_url, timeout_s=max(5.0, settings.fetch_timeout_s * 2),
                           limits=ImageLimits(max_bytes=settings.watch_photo_max_bytes,
                                              max_pixels=settings.ocr_max_pixels)) if settings.watch_photos else None
    from bot.watch_feeds import FeedWatch
    from core.evidence.ssrf import SSRFGuard
    from core.watch.feed_reader import FeedReader
    from storage.watched_feeds import FeedStore

    store = WatchStore(corroborator.store.db)
    feeds = FeedWatch(FeedStore(corroborator.store.db), corroborator,
                      FeedReader(SSRFGuard(settings.fetch_allow_hosts), timeout_s=max(5.0, settings.fetch_timeout_s * 2),
                                 max_bytes=settings.fetch_max_bytes),
                      interval_s=settings.watch_interval_s, retention_days=settings.retention_days,
                      enabled=not settings.offline)
    return WatchService(store, corroborator, reader, interval_s=settings.watch_interval_s,
                        backfill_pages=settings.watch_backfill_pages, retention_days=settings.retention_days,
                        enabled=not settings.offline, photos=photos, account=build_account(settings, store),
                        feeds=feeds)


def session_path(settings: Settings) -> Path:
    """The account reader's session file (Telethon's SQLite file: the account's key, mode 0600)."""
    return settings.data_dir / "telegram-account.session"


def account_configured(settings: Settings) -> bool:
    return bool(settings.telegram_api_id and settings.telegram_api_hash and not settings.offline)


def build_account(settings: Settings, store: WatchStore, factory: object = None) -> AccountReader | None:
    """The account reader when TIPLINE_TELEGRAM_API_ID and _HASH are set (None otherwise, or without the
    `account` extra: one warning). It connects only when a session was logged in (`tipline watch login`)."""
    if not account_configured(settings) or settings.telegram_api_hash is None or settings.telegram_api_id is None:
        return None
    try:
        from core.watch.mtproto import TelethonChannels
    except ImportError:
        log.warning("watch: TIPLINE_TELEGRAM_API_ID is set but Telethon is not installed (pip install "
                    "'tipline[account]'): channels without a public preview are not read")
        return None
    from core.watch.account_reader import AccountReader

    kw = {"factory": factory} if factory is not None else {}
    source = TelethonChannels(session_path(settings), settings.telegram_api_id,
                              settings.telegram_api_hash.get_secret_value(), **kw)  # type: ignore[arg-type]
    return AccountReader(source, store, gap_s=settings.telegram_account_gap_s)
