"""Scheduled refresh of fact-check and news feeds: `tipline run` keeps the knowledge base fresh.

Two lists are read. `TIPLINE_FEEDS` (ClaimReview JSON/HTML, Fact Check Tools answers, CSV/JSONL, RSS/Atom:
whatever `tipline ingest` reads) is downloaded and parsed whole every `TIPLINE_FEED_REFRESH_MINUTES`. The
fact-checkers' feeds an operator added (`tipline feeds add`, storage/factcheck_feeds.py; docs/feeds.md) are
read by conditional GET on the same schedule, each new item once, from its article's ClaimReview or the
verdict words of its title (core/watch/factcheck_feed.py); a feed added while `tipline run` holds the data dir is
read within `TICK_S`.

The new items go into a freshly built collection (old points copied, new ones embedded) that is swapped in
behind the collection's alias (`KnowledgeBase.rebuild_with`), so checks running meanwhile search either
the old index or the new one, never a half-built one. A feed that fails is reported and skipped; the others
still land. Feed URLs are set by the operator, so they are trusted; the article pages their items link are
read through the SSRF guard.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bot.ingest_files import read_source
from core.watch.factcheck_feed import FactCheckFeedReader, FeedRead
from core.ingest import IngestFormatError, parse_bytes
from core.matching.knowledge_base import KnowledgeBase
from core.watch.recommended_feeds import find_recommended
from schema.models import FactCheck
from storage.factcheck_feeds import FactCheckFeedStore, ItemRecord, StoredFeed

log = logging.getLogger(__name__)

TICK_S = 30.0  # how often `tipline run` looks for stored feeds due (one added from the CLI is read this soon)
FAILED = ("not found", "refused", "slowed down", "unreachable", "too large", "not a feed", "reading failed")


@dataclass
class RefreshReport:
    fetched: int = 0
    added: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    bad_rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # why items were refused: "no rating" -> 3
    unrated: int = 0  # items stored unrated: a rating that could not be read ("unknown rating 'Banana'")
    swapped: bool = False
    unchanged: int = 0  # stored feeds answered 304 Not Modified
    pending: int = 0  # stored feeds' items to read again next time
    pages: int = 0  # article pages read
    reads: dict[str, FeedRead] = field(default_factory=dict)  # each stored feed's read, by address


class FeedRefresher:
    def __init__(self, kb: KnowledgeBase, feeds: list[str], *, interval_minutes: float = 60.0,
                 store: FactCheckFeedStore | None = None, reader: FactCheckFeedReader | None = None,
                 clock: Callable[[], float] = time.time):
        self.kb = kb
        self.feeds = list(feeds)
        self.interval_s = max(1.0, interval_minutes * 60)
        self.store = store
        self.reader = reader
        self.clock = clock
        self.last: RefreshReport | None = None

    async def refresh_once(self, *, only: Collection[str] | None = None) -> RefreshReport:
        """Read every `TIPLINE_FEEDS` URL and every stored feed not waiting out a Retry-After (`only`: just
        these stored feeds, and no TIPLINE_FEEDS), then land what they brought."""
        stored = await self._stored()
        now = self.clock()
        if only is not None:
            stored = [f for f in stored if f.url in only]
        stored = [f for f in stored if f.retry_at is None or f.retry_at <= now]
        return await self._refresh(self.feeds if only is None else [], stored)

    async def _stored(self) -> list[StoredFeed]:
        return [] if self.store is None or self.reader is None else await self.store.feeds()

    async def _refresh(self, urls: list[str], stored: list[StoredFeed]) -> RefreshReport:
        report = RefreshReport()
        items: list[FactCheck] = []
        for url in urls:
            items += await self._read_file_feed(url, report)
        for feed in stored:
            items += await self._read_stored(feed, report)
        report.fetched = len(items)
        if items:
            names = urls + [f.label for f in stored]
            run_id = await self.kb.db.start_ingest_run("feeds: " + ", ".join(names)[:500])
            report.added = await self.kb.rebuild_with(items, run_id=run_id)
            report.swapped = True
            await self.kb.db.finish_ingest_run(run_id, status="done", added=report.added, skipped=report.bad_rows,
                                               errors=[f"{u}: {e}" for u, e in report.failed.items()])
        if urls or stored:
            log.info("feeds refreshed: %d items, %d new, %d feed(s) failed, %d item(s) skipped%s%s%s", report.fetched,
                     report.added, len(report.failed), report.bad_rows + sum(report.skipped.values()),
                     "".join(f"; {n} {why}" for why, n in report.skipped.most_common()),
                     f"; {report.unrated} stored unrated (rating not understood)" if report.unrated else "",
                     f"; {report.unchanged} unchanged (304)" if report.unchanged else "")
        self.last = report
        return report

    async def _read_file_feed(self, url: str, report: RefreshReport) -> list[FactCheck]:
        try:
            name, data = await read_source(url)
            rows = await asyncio.to_thread(parse_bytes, name, data)  # CPU work: off the bot's event loop
        except IngestFormatError as exc:
            report.failed[url] = str(exc)
            log.warning("feed %s skipped: %s", url, exc)
            return []
        report.bad_rows += sum(1 for r in rows if r.error)
        report.skipped.update(r.reason for r in rows if r.reason)
        unrated = [r.warning for r in rows if r.warning and r.factcheck is not None]
        if unrated:  # one line per feed and refresh, not one per item every hour
            report.unrated += len(unrated)
            log.warning("feed %s: %d item(s) stored unrated, e.g. %s", url, len(unrated), unrated[0])
        return [r.factcheck for r in rows if r.factcheck is not None]

    async def _read_stored(self, feed: StoredFeed, report: RefreshReport) -> list[FactCheck]:
        assert self.store is not None and self.reader is not None
        publisher = find_recommended(feed.name) if feed.name else None
        done, attempts = await self.store.items(feed.url)
        try:
            read = await self.reader.read(feed.url, publisher=publisher, etag=feed.etag,
                                          last_modified=feed.last_modified, done=done, attempts=attempts)
        except Exception as exc:  # a bug in tipline: this feed waits, the others are read
            log.exception("reading the feed %s failed", feed.url)
            read = FeedRead("reading failed", f"{exc.__class__.__name__} (a bug; see the log)")
        now = self.clock()
        report.reads[feed.url] = read
        report.pages += read.pages
        report.unrated += read.unrated
        report.pending += read.pending
        report.skipped.update(read.skipped)
        ok = read.status in ("ok", "unchanged")
        if read.status == "unchanged":
            report.unchanged += 1
        if not ok:
            report.failed[feed.url] = read.detail
        status, detail = _status(read)
        if status != feed.status:  # one line per change of status, not one per read
            (log.info if ok else log.warning)("fact-check feed %s: %s (%s)", feed.label, status, detail)
        # New validators only once every new item is decided: a 304 must not hide the ones still pending.
        validators = (read.etag, read.last_modified) if ok and read.pending == 0 else None
        await self.store.remember(feed.url, [ItemRecord(d.key, d.outcome) for d in read.decisions], now=now)
        await self.store.record(feed.url, status=status, detail=detail, now=now, ok=ok, title=read.title,
                                validators=validators,
                                retry_at=None if read.retry_after_s is None else now + read.retry_after_s,
                                added=len(read.factchecks), skipped=sum(read.skipped.values()))
        return read.factchecks

    async def due(self, now: float) -> list[StoredFeed]:
        """Stored feeds to read now: never read, or read an interval ago, and not waiting out a Retry-After."""
        return [f for f in await self._stored()
                if (f.retry_at is None or f.retry_at <= now)
                and (f.last_read_at is None or now - f.last_read_at >= self.interval_s or f.retry_at is not None)]

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Refresh now, then whatever falls due, until `stop` is set. Never raises: a bad cycle is logged."""
        last_files: float | None = None
        while not stop.is_set():
            try:
                now = self.clock()
                files_due = last_files is None or now - last_files >= self.interval_s
                stored = await self.due(now)
                if files_due or stored:
                    await self._refresh(self.feeds if files_due else [], stored)
                    if self.store is not None:
                        await self.store.prune(now=now)
                if files_due:
                    last_files = now
            except Exception:
                log.exception("feed refresh failed; the next cycle will try again")
            try:
                await asyncio.wait_for(stop.wait(), min(self.interval_s, TICK_S))
            except TimeoutError:
                pass


def _status(read: FeedRead) -> tuple[str, str]:
    """(status, detail) as `tipline feeds list` shows them."""
    if read.status == "unchanged":
        return "ok", "unchanged since the last read (HTTP 304)"
    if read.status != "ok":
        return read.status, read.detail
    if not read.decisions and not read.factchecks and not read.pending:
        return "ok", "no new items"
    parts = [f"{len(read.factchecks)} fact-check(s) read"]
    if read.skipped:
        parts.append(f"{sum(read.skipped.values())} item(s) skipped ("
                     + ", ".join(f"{n} {why}" for why, n in read.skipped.most_common()) + ")")
    if read.unrated:
        parts.append(f"{read.unrated} stored unrated (rating not understood)")
    if read.pending:
        parts.append(f"{read.pending} item(s) to read next time")
    return "ok", "; ".join(parts)


@asynccontextmanager
async def open_refresher(kb: KnowledgeBase, *, feeds: list[str], interval_minutes: float, fetch_allow_hosts: list[str],
                         fetch_max_bytes: int, fetch_timeout_s: float) -> AsyncIterator[FeedRefresher]:
    """A refresher of both lists, with its two sessions (the feeds', the guarded one for article pages)."""
    from core.evidence.fetch import PageFetcher, guarded_session
    from core.evidence.ssrf import SSRFGuard
    from core.watch.feed_fetch import feed_session

    guard = SSRFGuard(fetch_allow_hosts)
    async with feed_session() as http, guarded_session(guard) as page_session:
        pages = PageFetcher(page_session, guard, max_bytes=fetch_max_bytes, timeout_s=fetch_timeout_s)
        yield FeedRefresher(kb, feeds, interval_minutes=interval_minutes, store=FactCheckFeedStore(kb.db),
                            reader=FactCheckFeedReader(http, pages))


def describe_feed(feed: StoredFeed, now: float) -> str:
    """One feed's line in `tipline feeds list` and `tipline doctor`: `stopfake-ru — ok: read 5 min ago; …`."""
    from datetime import UTC, datetime

    from bot.render import ago

    def when(ts: float) -> str:
        return ago(datetime.fromtimestamp(ts, UTC), datetime.fromtimestamp(now, UTC))

    read = f"read {when(feed.last_read_at)}" if feed.last_read_at else "not read yet"
    head = f"{feed.label}" + (f" ({feed.url})" if feed.name else "")
    text = f"{head} — {feed.status if feed.status != 'new' else 'not read yet'}"
    if feed.status != "new":
        text += f": {read}"
        if feed.status != "ok" and feed.last_ok_at:
            text += f", last read fine {when(feed.last_ok_at)}"
        if feed.retry_at and feed.retry_at > now:
            text += f"; next read not before {datetime.fromtimestamp(feed.retry_at, UTC):%Y-%m-%d %H:%M} UTC"
        text += f"; {feed.added} fact-check(s) from it so far"
        if feed.detail:
            text += f" [{feed.detail}]"
    return text
