"""Local fact-checkers' sites: RSS 2.0 and Atom feeds with ETag / Last-Modified (a 304 when nothing changed),
and article pages carrying schema.org ClaimReview JSON-LD, built here from the schema.org structure
(ClaimReview: claimReviewed, reviewRating{Rating: ratingValue, bestRating, worstRating, alternateName},
itemReviewed{Claim: author, datePublished, appearance}, author{Organization}, datePublished, url), some in
an `@graph` beside the Article as CMS plugins write it. Not copied from any site.

    site = await FakeFactcheckSite().start()
    site.rss("/checks/rss.xml", "Example Checks", [Article(...), ...])   # items link site.base_url + article.path
    site.atom("/ru/atom.xml", "Проверки", [Article(...)], lang="ru")
    site.hits["/checks/rss.xml"]     # requests per path;  site.not_modified: 304s sent
    site.refuse("/gone.xml", 404)    # or 429 with site.retry_after; 5xx
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
from collections import Counter
from dataclasses import dataclass, field
from email.utils import format_datetime
from datetime import UTC, datetime

from aiohttp import web

from tests.fakes.loopback import LoopbackFake


@dataclass
class Article:
    path: str  # "/checks/lemon-water"
    title: str  # the feed item's title
    claim: str = ""  # claimReviewed; "" = the page has no ClaimReview
    rating: str = ""  # reviewRating.alternateName
    rating_value: int | None = None
    published: str = "2026-03-02"
    lang: str = ""  # inLanguage, "" = not given
    page: str = "claimreview"  # claimreview | graph | plain | broken | huge | busy | missing
    guid: str = ""


def claimreview(site: str, a: Article) -> dict:
    review: dict = {
        "@context": "https://schema.org", "@type": "ClaimReview", "url": site + a.path,
        "claimReviewed": a.claim, "datePublished": a.published,
        "author": {"@type": "Organization", "name": "Example Checks", "url": site + "/"},
        "reviewRating": {"@type": "Rating", "alternateName": a.rating, "bestRating": 5, "worstRating": 1},
        "itemReviewed": {"@type": "Claim", "datePublished": a.published,
                         "author": {"@type": "Person", "name": "A viral post"},
                         "appearance": {"@type": "CreativeWork", "url": "https://social.example/post/1"}},
    }
    if a.rating_value is not None:
        review["reviewRating"]["ratingValue"] = a.rating_value
    if a.lang:
        review["inLanguage"] = a.lang
    return review


def _page(site: str, a: Article) -> str:
    head = f"<title>{html.escape(a.title)}</title>"
    if a.page == "claimreview":
        head += f'<script type="application/ld+json">{json.dumps(claimreview(site, a), ensure_ascii=False)}</script>'
    elif a.page == "graph":
        graph = {"@context": "https://schema.org", "@graph": [
            {"@type": "Article", "headline": a.title, "url": site + a.path},
            {k: v for k, v in claimreview(site, a).items() if k != "@context"}]}
        head += f'<script type="application/ld+json">\n<!--\n{json.dumps(graph)}\n-->\n</script>'
    elif a.page == "broken":  # a CMS that cut its JSON short
        head += '<script type="application/ld+json">{"@type": "ClaimReview", "claimReviewed": "' + a.claim + '", </script>'
    script = "<script>document.write('x'.repeat(1e6))</script>"
    return (f"<!doctype html><html><head><meta charset='utf-8'>{head}</head><body>{script}"
            f"<article><h1>{html.escape(a.title)}</h1><p>{html.escape(a.claim or a.title)}</p></article></body></html>")


@dataclass
class _Feed:
    body: str
    content_type: str
    modified: datetime

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha1(self.body.encode()).hexdigest()[:16] + '"'


@dataclass
class FakeFactcheckSite(LoopbackFake):
    feeds: dict[str, _Feed] = field(default_factory=dict)
    articles: dict[str, Article] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)
    retry_after: str = "120"
    hits: Counter[str] = field(default_factory=Counter)
    not_modified: int = 0
    huge_bytes: int = 5 * 1024 * 1024

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/{path:.*}", self._get)

    def refuse(self, path: str, status: int) -> None:
        self.refusals[path] = status

    def rss(self, path: str, title: str, articles: list[Article], *, lang: str = "en") -> None:
        items = []
        for a in articles:
            self.articles[a.path] = a
            guid = a.guid or self.base_url + a.path
            items.append(f"<item><title>{html.escape(a.title)}</title><link>{self.base_url}{a.path}</link>"
                         f"<guid isPermaLink=\"false\">{html.escape(guid)}</guid>"
                         f"<pubDate>Mon, 02 Mar 2026 10:00:00 GMT</pubDate>"
                         f"<description>{html.escape(a.claim or a.title)}</description></item>")
        body = (f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{html.escape(title)}</title>'
                f"<link>{self.base_url}/</link><language>{lang}</language>{''.join(items)}</channel></rss>")
        self.feeds[path] = _Feed(body, "application/rss+xml; charset=utf-8", datetime.now(UTC).replace(microsecond=0))

    def atom(self, path: str, title: str, articles: list[Article], *, lang: str) -> None:
        entries = []
        for a in articles:
            self.articles[a.path] = a
            lang_attr = f' xml:lang="{a.lang}"' if a.lang else ""
            entries.append(f"<entry{lang_attr}><title>{html.escape(a.title)}</title><link href=\"{self.base_url}{a.path}\"/>"
                           f"<id>{html.escape(a.guid or 'urn:x:' + a.path)}</id>"
                           f"<updated>2026-03-02T10:00:00Z</updated><summary>{html.escape(a.title)}</summary></entry>")
        body = (f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom" xml:lang="{lang}">'
                f"<title>{html.escape(title)}</title><id>urn:x:{path}</id><updated>2026-03-02T10:00:00Z</updated>"
                f"{''.join(entries)}</feed>")
        self.feeds[path] = _Feed(body, "application/atom+xml; charset=utf-8", datetime.now(UTC).replace(microsecond=0))

    def raw(self, path: str, body: str, content_type: str) -> None:
        self.feeds[path] = _Feed(body, content_type, datetime.now(UTC).replace(microsecond=0))

    async def _get(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        self.hits[path] += 1
        async with self._changed:
            self._changed.notify_all()
        if path in self.refusals:
            status = self.refusals[path]
            headers = {"Retry-After": self.retry_after} if status == 429 else {}
            return web.Response(status=status, text="refused", headers=headers)
        if path in self.feeds:
            return self._feed(request, self.feeds[path])
        article = self.articles.get(path)
        if article is None or article.page == "missing":
            return web.Response(status=404, text="no such page")
        if article.page == "busy":
            return web.Response(status=429, text="slow down", headers={"Retry-After": "30"})
        if article.page == "huge":  # streamed, no Content-Length: the ClaimReview comes after the cap
            resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            await resp.write(b"<html><head><title>big</title></head><body>")
            chunk = b"<div>" + b"padding " * 8000 + b"</div>"
            sent = 0
            try:
                while sent < self.huge_bytes:
                    await resp.write(chunk)
                    sent += len(chunk)
                await resp.write(_page(self.base_url, Article(**{**article.__dict__, "page": "claimreview"})).encode())
            except (ConnectionResetError, RuntimeError):
                pass  # the reader stopped at its cap
            return resp
        return web.Response(text=_page(self.base_url, article), content_type="text/html", charset="utf-8")

    def _feed(self, request: web.Request, feed: _Feed) -> web.Response:
        last_modified = format_datetime(feed.modified, usegmt=True)
        validators = {"ETag": feed.etag, "Last-Modified": last_modified}
        if request.headers.get("If-None-Match") == feed.etag or (
                "If-None-Match" not in request.headers and request.headers.get("If-Modified-Since") == last_modified):
            self.not_modified += 1
            return web.Response(status=304, headers=validators)
        return web.Response(body=feed.body.encode(), headers={**validators, "Content-Type": feed.content_type})
