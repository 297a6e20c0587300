"""Link expansion: the pages a message links to, as evidence (source_type "page").

    source = LinkSource(fetcher, max_links=settings.max_links, total_timeout_s=settings.source_timeout_s)
    evidence, notes = await source.gather_noted(ClaimQuery(claim=..., urls=[...]), limit=3)
    # notes: one sentence per link that could not be read ("Link 2 was not opened: it points to ...")

`fetcher` is a `core.evidence.fetch.PageFetcher` over a guarded session (SSRF checks on every hop), or
anything with its `fetch` (the registry's opens that session on the first link).
Links are fetched in parallel, each under the fetcher's per-link timeout, all under `total_timeout_s`.
A page that is a ClaimReview (a fact-check with schema.org markup) carries its rating and normalised
verdict. Parsing runs in a worker thread so a slow page never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.errors import EvidenceError, FetchError, FetchTimeout
from core.evidence.html_extract import PageInfo, best_passage, extract_page, parse_date
from core.evidence.text import domain_of

if TYPE_CHECKING:  # types only: fetch.py imports aiohttp (~0.22 s of CPU), which a message without links never needs
    from core.evidence.fetch import FetchedPage


class Fetcher(Protocol):
    """What reads one page (core.evidence.fetch.PageFetcher); raises the typed FetchError family."""

    async def fetch(self, url: str) -> FetchedPage: ...


def _page_info(page: FetchedPage) -> PageInfo:
    if page.content_type in ("text/html", "application/xhtml+xml"):
        return extract_page(page.text, page.url)
    if page.content_type in ("application/json", "application/ld+json"):
        # Some "pages" are JSON documents; show them as text rather than parse them as HTML.
        try:
            text = json.dumps(json.loads(page.text), ensure_ascii=False)[:20_000]
        except (ValueError, RecursionError):
            text = page.text[:20_000]
        return PageInfo(url=page.url, text=text)
    return PageInfo(url=page.url, text=page.text[:60_000])


class LinkSource:
    name = "links"
    label = "the linked pages"
    searches_web = False

    def __init__(self, fetcher: Fetcher, *, max_links: int = 3, total_timeout_s: float = 10.0):
        self.fetcher = fetcher
        self.max_links = max_links
        self.total_timeout_s = total_timeout_s

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        evidence, notes = await self.gather_noted(query, limit=limit)
        if not evidence and notes:
            raise FetchError(notes[0] if len(notes) == 1 else " ".join(notes))
        return evidence

    async def gather_noted(self, query: ClaimQuery, *, limit: int) -> tuple[list[Evidence], list[str]]:
        urls = list(dict.fromkeys(u.strip() for u in query.urls if u.strip()))[: min(self.max_links, max(limit, 0))]
        if not urls:
            return [], []
        tasks = [asyncio.create_task(self._one(url, query)) for url in urls]
        done, pending = await asyncio.wait(tasks, timeout=self.total_timeout_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        evidence: list[Evidence] = []
        notes: list[str] = []
        for n, (url, task) in enumerate(zip(urls, tasks, strict=True), start=1):
            label = f"Link {n}" if len(urls) > 1 else "The link"
            if task in pending:
                notes.append(f"{label}: {FetchTimeout.sentence}")
                continue
            exc = task.exception()
            if isinstance(exc, EvidenceError):
                notes.append(f"{label}: {exc.sentence}")
            elif exc is not None:
                notes.append(f"{label}: the page could not be read.")
            else:
                evidence.append(task.result())
        return evidence, notes

    async def _one(self, url: str, query: ClaimQuery) -> Evidence:
        page = await self.fetcher.fetch(url)
        info = await asyncio.to_thread(_page_info, page)
        return page_evidence(info, query.claim, source=self.name)


def page_evidence(info: PageInfo, claim: str, *, source: str = "links") -> Evidence:
    review = info.claim_reviews[0] if info.claim_reviews else None
    text = info.text or info.description
    snippet = best_passage(text, claim) if text else ""
    if review and review.claim:
        snippet = f"Claim reviewed: {review.claim}. Rating: {review.rating or 'none given'}. {snippet}"[:900]
    elif info.description and info.description not in snippet:
        snippet = f"{info.description} {snippet}"[:900]
    published: datetime | None = info.published or (parse_date(review.date) if review else None)
    return Evidence(
        url=info.url, title=info.title or info.url, snippet=snippet.strip(),
        publisher=info.site_name or (review.author if review else ""), domain=domain_of(info.url),
        published_at=published, source=source, source_type="page", language=info.language,
        rating=review.rating if review else "", verdict=review.verdict if review else None,
        retrieval_score=1.0,  # the user linked it: it is about the message by definition
    )
