"""Scheduled refresh of fact-check and news feeds (seed 001): `tipline run` keeps the knowledge base fresh.

Every `TIPLINE_FEED_REFRESH_MINUTES` each URL in `TIPLINE_FEEDS` (ClaimReview JSON/HTML, Fact Check
Tools answers, CSV/JSONL, RSS/Atom: whatever `tipline ingest` reads) is downloaded and parsed. The new
items go into a freshly built collection (old points copied, new ones embedded) that is swapped in
behind the collection's alias (`KnowledgeBase.rebuild_with`), so checks running meanwhile search
either the old index or the new one, never a half-built one. A feed that fails is reported and
skipped; the others still land. Feed URLs are set by the operator, so they are trusted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field

from bot.ingest_files import read_source
from core.ingest import IngestFormatError, parse_bytes
from core.knowledge import KnowledgeBase
from schema.models import FactCheck

log = logging.getLogger(__name__)


@dataclass
class RefreshReport:
    fetched: int = 0
    added: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    bad_rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # why items were refused: "no rating" -> 3
    unrated: int = 0  # items stored unrated: a rating that could not be read ("unknown rating 'Banana'")
    swapped: bool = False


class FeedRefresher:
    def __init__(self, kb: KnowledgeBase, feeds: list[str], *, interval_minutes: float = 60.0):
        self.kb = kb
        self.feeds = list(feeds)
        self.interval_s = max(1.0, interval_minutes * 60)
        self.last: RefreshReport | None = None

    async def refresh_once(self) -> RefreshReport:
        report = RefreshReport()
        items: list[FactCheck] = []
        for url in self.feeds:
            try:
                name, data = await read_source(url)
                rows = await asyncio.to_thread(parse_bytes, name, data)  # CPU work: off the bot's event loop
            except IngestFormatError as exc:
                report.failed[url] = str(exc)
                log.warning("feed %s skipped: %s", url, exc)
                continue
            items += [r.factcheck for r in rows if r.factcheck is not None]
            report.bad_rows += sum(1 for r in rows if r.error)
            report.skipped.update(r.reason for r in rows if r.reason)
            unrated = [r.warning for r in rows if r.warning and r.factcheck is not None]
            if unrated:  # one line per feed and refresh, not one per item every hour
                report.unrated += len(unrated)
                log.warning("feed %s: %d item(s) stored unrated, e.g. %s", url, len(unrated), unrated[0])
        report.fetched = len(items)
        if items:
            run_id = await self.kb.db.start_ingest_run("feeds: " + ", ".join(self.feeds)[:500])
            report.added = await self.kb.rebuild_with(items, run_id=run_id)
            report.swapped = True
            await self.kb.db.finish_ingest_run(run_id, status="done", added=report.added, skipped=report.bad_rows,
                                               errors=[f"{u}: {e}" for u, e in report.failed.items()])
        log.info("feeds refreshed: %d items, %d new, %d feed(s) failed, %d item(s) skipped%s%s", report.fetched,
                 report.added, len(report.failed), report.bad_rows,
                 "".join(f"; {n} {why}" for why, n in report.skipped.most_common()),
                 f"; {report.unrated} stored unrated (rating not understood)" if report.unrated else "")
        self.last = report
        return report

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Refresh now, then every interval, until `stop` is set. Never raises: a bad cycle is logged."""
        while not stop.is_set():
            try:
                await self.refresh_once()
            except Exception:
                log.exception("feed refresh failed; the next cycle will try again")
            try:
                await asyncio.wait_for(stop.wait(), self.interval_s)
            except TimeoutError:
                pass
