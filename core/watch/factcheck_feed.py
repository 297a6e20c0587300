"""One read of a fact-checker's feed into fact-checks: the feed by conditional GET (core/watch/feed_fetch.py), each
new item's article page for its ClaimReview JSON-LD, else the publisher's verdict words heading its title.

    reader = FactCheckFeedReader(feed_http, page_fetcher)
    read = await reader.read(url, publisher=find_recommended("stopfake-ru"), etag=..., last_modified=...,
                             done={keys decided before}, attempts={key: failed page reads})
    read.factchecks, read.decisions, read.skipped   # what to store, what to remember, why items were left out

An item (RSS `<item>`, Atom `<entry>`, known by its guid/id, else its link) is decided once:
- **claimreview**: its link is read (through the SSRF guard: the link comes from the feed, not the operator;
  bounded by TIPLINE_FETCH_MAX_BYTES) and every schema.org ClaimReview in the page's ld+json blocks becomes a
  fact-check (claimReviewed, reviewRating.alternateName / ratingValue, itemReviewed, author, datePublished,
  url; core/ingest/claimreview.py), the rating read with the publisher's own words first;
- **title**: no ClaimReview, but the title opens with rating words ("Фейк: …", "[False] …": the publisher's
  table, then the shared one); the rest of the title is the claim, the item's link the article;
- **skipped**: neither; counted by reason, never guessed from prose.
A page that failed for a passing reason (timeout, 429, 5xx) leaves its item **pending**: read again next
time, up to MAX_ATTEMPTS, then decided by its title. At most `max_pages` pages are read per feed and read,
one at a time; the rest wait for the next read (the caller then keeps the feed's old validators, so a
304 cannot hide them).

A feed that is not RSS/Atom but a ClaimReview document (JSON, JSON-LD, a DataFeed dump) is read whole, as
`tipline ingest` reads it. Nothing of a user's message is in any request.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp

from core.evidence.errors import EvidenceError, FetchTimeout, ConnectFailed, HTTPStatusError
from core.evidence.links import Fetcher
from core.watch.feed_fetch import FeedFetchError, fetch_feed
from core.ingest import IngestFormatError, parse_bytes
from core.ingest.base import RowError
from core.ingest.claimreview import find_claimreviews, ld_json_blocks, parse_record
from core.ingest.feeds import entry_date, parse_feed, split_title
from core.ingest.fields import build_factcheck, clean_text
from core.watch.recommended_feeds import RecommendedFeed
from core.ingest.ratings import match_rating, rating_key
from schema.models import FactCheck

log = logging.getLogger(__name__)

MAX_ITEMS = 100  # newest items looked at per read (fact-checkers' feeds hold 10-50)
MAX_PAGES = 30  # article pages read per feed and read
MAX_ATTEMPTS = 3  # reads of a page that failed for a passing reason before the title decides
PAGE_GAP_S = 0.5  # between two pages of one feed: one site, read politely
NO_VERDICT = "no ClaimReview and no verdict in its title"
NO_TITLE = "no title"
NO_LINK = "no link and no verdict in its title"

Outcome = Literal["claimreview", "title", "skipped", "pending"]


@dataclass(frozen=True)
class ItemDecision:
    key: str
    outcome: Outcome
    reason: str = ""


@dataclass
class FeedRead:
    status: str  # "ok", "unchanged" (304), or a FeedFetchError status / "not a feed"
    detail: str = ""
    title: str = ""  # the feed's own title
    factchecks: list[FactCheck] = field(default_factory=list)
    decisions: list[ItemDecision] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # items left out, by reason
    unrated: int = 0  # ClaimReviews stored unrated (a rating nobody's table knows)
    pages: int = 0  # article pages asked for
    deferred: int = 0  # new items left for the next read (over the pages a read may fetch)
    etag: str = ""
    last_modified: str = ""
    retry_after_s: float | None = None

    @property
    def pending(self) -> int:
        """Items to read again next time: a page that failed for a passing reason, or over the read's pages."""
        return self.deferred + sum(1 for d in self.decisions if d.outcome == "pending")


@dataclass(frozen=True)
class _Item:
    key: str
    title: str
    link: str
    published: Any
    language: str | None


def _passing(exc: EvidenceError) -> bool:
    """A failure worth trying again later (the site is busy or down), not one the page will always give."""
    if isinstance(exc, HTTPStatusError):
        return exc.status == 429 or exc.status >= 500
    return isinstance(exc, (FetchTimeout, ConnectFailed))


class FactCheckFeedReader:
    def __init__(self, http: aiohttp.ClientSession, pages: Fetcher, *, max_pages: int = MAX_PAGES,
                 page_gap_s: float = PAGE_GAP_S, max_feed_bytes: int | None = None):
        self.http = http
        self.pages = pages
        self.max_pages = max_pages
        self.page_gap_s = page_gap_s
        self.max_feed_bytes = max_feed_bytes

    async def read(self, url: str, *, publisher: RecommendedFeed | None = None, etag: str = "",
                   last_modified: str = "", done: set[str] | frozenset[str] = frozenset(),
                   attempts: dict[str, int] | None = None) -> FeedRead:
        try:
            kw = {} if self.max_feed_bytes is None else {"max_bytes": self.max_feed_bytes}
            response = await fetch_feed(self.http, url, etag=etag, last_modified=last_modified, **kw)
        except FeedFetchError as exc:
            return FeedRead(exc.status, str(exc), etag=etag, last_modified=last_modified,
                            retry_after_s=exc.retry_after_s)
        if response.status == "unchanged":
            return FeedRead("unchanged", "not modified since the last read (HTTP 304)", etag=response.etag,
                            last_modified=response.last_modified)
        read = FeedRead("ok", etag=response.etag, last_modified=response.last_modified)
        try:
            parsed = await asyncio.to_thread(parse_feed, response.body)  # CPU work: off the event loop
        except IngestFormatError:
            return await self._claimreview_document(url, response.body, read)
        read.title = clean_text(parsed.feed.get("title"))[:200]
        items = self._items(parsed, publisher)
        tries = attempts or {}
        budget = self.max_pages
        for item in items:
            if item.key in done:
                continue
            if budget <= 0:  # left for the next read
                read.deferred += 1
                continue
            fetch_page = bool(item.link) and (publisher is None or publisher.claimreview != "no")
            if fetch_page:
                budget -= 1
                if read.pages:
                    await asyncio.sleep(self.page_gap_s)
            await self._decide(item, publisher, read, read_page=fetch_page, tries=tries.get(item.key, 0),
                               fallback_publisher=read.title)
        log.info("fact-check feed %s: %d fact-check(s) from %d new item(s), %d page(s) read, %d skipped, %d pending",
                 url, len(read.factchecks), sum(1 for d in read.decisions if d.outcome != "pending"), read.pages,
                 sum(read.skipped.values()), read.pending)
        return read

    def _items(self, parsed: Any, publisher: RecommendedFeed | None) -> list[_Item]:
        feed_language = parsed.feed.get("language") or (publisher.languages[0] if publisher and
                                                         len(publisher.languages) == 1 else None)
        items: list[_Item] = []
        for entry in parsed.entries[:MAX_ITEMS]:
            title = clean_text(entry.get("title"))
            link = clean_text(entry.get("link"))
            key = clean_text(entry.get("id")) or link or title
            if not key:
                continue
            language = (entry.get("title_detail") or {}).get("language") or feed_language
            items.append(_Item(key[:500], title, link, entry_date(entry), language))
        return items

    async def _decide(self, item: _Item, publisher: RecommendedFeed | None, read: FeedRead, *, read_page: bool,
                      tries: int, fallback_publisher: str) -> None:
        page_problem = ""
        if read_page:
            read.pages += 1
            try:
                page = await self.pages.fetch(item.link)
            except EvidenceError as exc:
                if _passing(exc) and tries + 1 < MAX_ATTEMPTS:
                    read.decisions.append(ItemDecision(item.key, "pending", exc.sentence))
                    return
                page_problem = exc.sentence
            else:
                found = await asyncio.to_thread(_claimreviews, page.text, page.url, item, publisher)
                if found:
                    factchecks, unrated = found
                    read.factchecks += factchecks
                    read.unrated += unrated
                    read.decisions.append(ItemDecision(item.key, "claimreview"))
                    return
        factcheck = _from_title(item, publisher, fallback_publisher)
        if factcheck is not None:
            read.factchecks.append(factcheck)
            read.decisions.append(ItemDecision(item.key, "title"))
            return
        reason = NO_TITLE if not item.title else NO_VERDICT if item.link else NO_LINK
        if page_problem:
            log.info("article page %s not read: %s", item.link, page_problem)
        read.skipped[reason] += 1
        read.decisions.append(ItemDecision(item.key, "skipped", reason))

    async def _claimreview_document(self, url: str, body: bytes, read: FeedRead) -> FeedRead:
        """Not RSS/Atom: a ClaimReview document (or nothing tipline reads), taken whole as `tipline ingest` does."""
        name = url.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or "feed"
        try:
            rows = await asyncio.to_thread(parse_bytes, name, body)
        except IngestFormatError as exc:
            return FeedRead("not a feed", str(exc).rstrip("."), etag="", last_modified="")
        read.factchecks = [r.factcheck for r in rows if r.factcheck is not None]
        read.unrated = sum(1 for r in rows if r.warning and r.factcheck is not None)
        read.skipped.update(r.reason for r in rows if r.reason)
        return read


def _claimreviews(text: str, page_url: str, item: _Item,
                  publisher: RecommendedFeed | None) -> tuple[list[FactCheck], int] | None:
    """The page's ClaimReviews as fact-checks (and how many are unrated), or None when it has none readable."""
    factchecks: list[FactCheck] = []
    unrated = 0
    for obj in find_claimreviews(ld_json_blocks(text)):
        record = dict(obj)
        record.setdefault("url", page_url)  # the article is the review when the markup names no url
        if item.language and not record.get("inLanguage"):
            record["inLanguage"] = item.language
        notes: list[str] = []
        try:
            factcheck = parse_record(record, notes)
        except (RowError, ValueError):
            continue
        rating = record.get("reviewRating")
        rating = rating[0] if isinstance(rating, list) and rating else rating
        words = clean_text((rating or {}).get("alternateName") or (rating or {}).get("name")) \
            if isinstance(rating, dict) else ""
        own = publisher.verdicts.get(rating_key(words)) if publisher is not None and words else None
        if own is not None:  # the publisher's own words, which the shared table may not know
            factcheck = factcheck.model_copy(update={"verdict": own, "rating_text": words})
        elif notes:
            unrated += 1
        factchecks.append(factcheck)
    return (factchecks, unrated) if factchecks else None


def _from_title(item: _Item, publisher: RecommendedFeed | None, feed_title: str) -> FactCheck | None:
    """A fact-check from a title that opens with rating words, or None."""
    if not item.title or not item.link:
        return None
    lookup = publisher.verdict_for if publisher is not None else (lambda words: match_rating(words, exact=True))
    claim, verdict, words = split_title(item.title, lookup)
    if verdict is None or not claim:
        return None
    try:
        factcheck = build_factcheck(claim=claim, title=item.title, url=item.link,
                                    publisher=publisher.publisher if publisher is not None else feed_title,
                                    published_at=item.published, rating_text=words, language=item.language,
                                    source_id=item.key)
    except (RowError, ValueError):
        return None
    return factcheck.model_copy(update={"verdict": verdict, "rating_text": words})
