"""A local news site serving RSS 2.0 and Atom 1.0 feeds (`/feeds/<name>.xml`) the way web servers answer
feed readers: an ETag and a Last-Modified on every 200, a 304 with no body when the request's
If-None-Match matches the ETag (or, without If-None-Match, when If-Modified-Since is not older than
Last-Modified: RFC 9110 section 13.2.2), and the refusals a reader meets.

    fake = await FakeNewsFeeds().start()
    feed = fake.feed("outlet", "Outlet News", kind="rss")     # or kind="atom"
    fake.item("outlet", "Title", "<p>Summary with <b>HTML</b></p>")
    feed.mode = "gone"      # feed | gone (404) | forbidden (403) | html (a web page) | huge (a 10 MB page)
                            # | layout (items with nothing readable) | moved (301 to /feeds/<name>-new.xml)
    feed.validators = "last-modified"                          # both | etag | last-modified | none
    fake.slow_down("300")                                      # the next request: 429 with Retry-After
    fake.requests                                              # [(path, {header: value} of the conditional ones)]
    fake.answers                                               # [(path, status)]
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import html
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from aiohttp import web

from tests.fakes.loopback import LoopbackFake

HUGE_BYTES = 10 * 1024 * 1024


@dataclass
class FakeItem:
    guid: str
    title: str
    summary: str  # HTML, as outlets put it in <description> / <summary type="html">
    link: str
    at: datetime


@dataclass
class FakeFeed:
    name: str
    title: str
    kind: str = "rss"
    items: list[FakeItem] = field(default_factory=list)
    mode: str = "feed"
    validators: str = "both"


def _rfc822(at: datetime) -> str:
    return email.utils.format_datetime(at.astimezone(UTC), usegmt=True)


def rss(feed: FakeFeed, site: str) -> str:
    items = "".join(
        f"<item><title>{html.escape(i.title)}</title><link>{html.escape(i.link)}</link>"
        f'<guid isPermaLink="false">{html.escape(i.guid)}</guid>'
        f"<description>{html.escape(i.summary)}</description><pubDate>{_rfc822(i.at)}</pubDate>"
        f"<category>news</category></item>" for i in reversed(feed.items))  # newest first, as outlets list them
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">'
            f"<channel><title>{html.escape(feed.title)}</title><link>{site}/</link>"
            f"<description>Latest news of {html.escape(feed.title)}</description><language>ru</language>"
            f'<atom:link href="{site}/feeds/{feed.name}.xml" rel="self" type="application/rss+xml"/>'
            f"<lastBuildDate>{_rfc822(_updated(feed))}</lastBuildDate><ttl>10</ttl>{items}</channel></rss>")


def atom(feed: FakeFeed, site: str) -> str:
    entries = "".join(
        f"<entry><id>{html.escape(i.guid)}</id><title>{html.escape(i.title)}</title>"
        f'<link rel="alternate" type="text/html" href="{html.escape(i.link)}"/>'
        f"<published>{i.at.isoformat()}</published><updated>{i.at.isoformat()}</updated>"
        f'<summary type="html">{html.escape(i.summary)}</summary><author><name>Редакция</name></author></entry>'
        for i in reversed(feed.items))
    return ('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="uk">'
            f"<title>{html.escape(feed.title)}</title><id>{site}/feeds/{feed.name}.xml</id>"
            f'<link rel="self" href="{site}/feeds/{feed.name}.xml"/><link rel="alternate" href="{site}/"/>'
            f"<updated>{_updated(feed).isoformat()}</updated>{entries}</feed>")


def _updated(feed: FakeFeed) -> datetime:
    return max((i.at for i in feed.items), default=datetime(2024, 1, 1, tzinfo=UTC))


@dataclass
class FakeNewsFeeds(LoopbackFake):
    feeds: dict[str, FakeFeed] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    answers: list[tuple[str, int]] = field(default_factory=list)
    refusals: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # answered first, in order

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str) -> str:
        return f"{self.base_url}/feeds/{name}.xml"

    def feed(self, name: str, title: str = "", *, kind: str = "rss", mode: str = "feed") -> FakeFeed:
        if name not in self.feeds:
            self.feeds[name] = FakeFeed(name, title or name, kind, mode=mode)
        return self.feeds[name]

    def item(self, name: str, title: str, summary: str = "", *, at: datetime | None = None,
             link: str = "") -> FakeItem:
        feed = self.feed(name)
        n = len(feed.items) + 1
        when = (at or datetime.now(UTC) - timedelta(minutes=1)).replace(microsecond=0)
        it = FakeItem(f"{name}-{n}", title, summary, link or f"https://{name}.example/news/{n}", when)
        feed.items.append(it)
        return it

    def slow_down(self, retry_after: str | None = "120", times: int = 1) -> None:
        self.refusals += [(429, {"Retry-After": retry_after} if retry_after is not None else {})] * times

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/feeds/{name}.xml", self._feed)

    def _answer(self, request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
        self.answers.append((request.path, response.status))
        return response

    async def _feed(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, {k: v for k, v in request.headers.items()
                                             if k.lower() in ("if-none-match", "if-modified-since")}))
        async with self._changed:
            self._changed.notify_all()
        if self.refusals:
            status, headers = self.refusals.pop(0)
            return self._answer(request, web.Response(status=status, headers=headers, text="Too Many Requests"))
        name = request.match_info["name"]
        feed = self.feeds.get(name.removesuffix("-new"))
        if feed is None or feed.mode == "gone":
            return self._answer(request, web.Response(status=404, text="<h1>Not Found</h1>", content_type="text/html"))
        if feed.mode == "forbidden":
            return self._answer(request, web.Response(status=403, text="Forbidden"))
        if feed.mode == "moved" and not name.endswith("-new"):
            return self._answer(request, web.Response(status=301, headers={"Location": f"/feeds/{name}-new.xml"}))
        if feed.mode == "html":  # the outlet's home page where the feed was
            page = ("<!doctype html><html><head><title>Outlet</title><script>var x = '<rss><item>';</script></head>"
                    "<body><h1>Новости</h1><p>Читайте нас в Telegram</p></body></html>")
            return self._answer(request, web.Response(text=page, content_type="text/html"))
        if feed.mode == "huge":
            return await self._huge(request)
        site = self.base_url
        if feed.mode == "layout":  # items with no title, text or link
            body = ('<?xml version="1.0"?><rss version="2.0"><channel><title>Broken</title>'
                    + "<item><enclosure url='' length='0' type='audio/mpeg'/></item>" * 3 + "</channel></rss>")
        else:
            body = rss(feed, site) if feed.kind == "rss" else atom(feed, site)
        etag = '"' + hashlib.sha1(body.encode()).hexdigest()[:20] + '"'
        modified = _updated(feed)
        headers = {}
        if feed.validators in ("both", "etag"):
            headers["ETag"] = etag
        if feed.validators in ("both", "last-modified"):
            headers["Last-Modified"] = _rfc822(modified)
        if self._not_modified(request, feed, etag, modified):
            return self._answer(request, web.Response(status=304, headers=headers))
        ctype = "application/rss+xml" if feed.kind == "rss" else "application/atom+xml"
        return self._answer(request, web.Response(body=body.encode(), headers=headers,
                                                  content_type=ctype, charset="utf-8"))

    @staticmethod
    def _not_modified(request: web.Request, feed: FakeFeed, etag: str, modified: datetime) -> bool:
        inm = request.headers.get("If-None-Match")
        if inm is not None and feed.validators in ("both", "etag"):
            return etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*"
        ims = request.headers.get("If-Modified-Since")
        if inm is None and ims and feed.validators in ("both", "last-modified"):
            try:
                since = email.utils.parsedate_to_datetime(ims)
            except (TypeError, ValueError):
                return False
            return modified.replace(microsecond=0) <= since
        return False

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """A 10 MB answer sent in chunks, with no Content-Length: the reader has to stop reading it."""
        resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        await resp.prepare(request)
        chunk = ("<div><script>alert(1)</script>" + "<p>новости " * 200 + "</div>").encode()
        sent = 0
        try:
            while sent < HUGE_BYTES:
                await resp.write(chunk)
                sent += len(chunk)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the reader stopped reading: that is the point
        self.answers.append((request.path, 200))
        return resp
