"""News outlets' RSS and Atom feeds as watched sources: feed addresses, one conditional GET of
a feed, and its items as plain text.

A feed is read with the validators of the last answer (`If-None-Match: <ETag>`, `If-Modified-Since:
<Last-Modified>`): a 304 costs one request and nothing else. A 200 is read up to `max_bytes`
(TIPLINE_FETCH_MAX_BYTES) and parsed by feedparser in a worker thread: RSS 0.9x/1.0/2.0 (`<item>` with
`<guid>`, `<link>`, `<title>`, `<description>`, `<pubDate>`) and Atom (`<entry>` with `<id>`, `<link
href>`, `<title>`, `<summary>`/`<content>`, `<published>`/`<updated>`). An item is known by its guid (RSS)
or id (Atom), else its link, else its title and text. Its text is the title and the summary with HTML
stripped, at most `MAX_TEXT` characters; at most `MAX_ITEMS` items of a feed are read.

Feed addresses are given by admins in a chat, so every request goes through the SSRF guard
(core/evidence/ssrf.py): each hop of a redirect is checked, and the connector only dials addresses the
guard accepted. Nothing of a user's message is ever in a request: only the feed's own address.
"""

from __future__ import annotations

import asyncio
import calendar
import hashlib
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from yarl import URL

from core.evidence.errors import BlockedURL, HostNotFound
from core.evidence.fetch import USER_AGENT, looks_binary
from core.evidence.ssrf import GuardedResolver, SSRFGuard
from core.ingest.fields import clean_text
from core.watch.telegram_preview import retry_after_s

log = logging.getLogger(__name__)

MAX_ITEMS = 200  # items read of one feed (outlets publish 10-100)
MAX_TEXT = 4000  # characters of an item's title and summary
MAX_TITLE = 200  # characters of a feed's title, which names the outlet on cards
_REDIRECTS = {301, 302, 303, 307, 308}
_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_TELEGRAM_HOSTS = {"t.me", "www.t.me", "telegram.me", "www.telegram.me", "telegram.dog"}
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
# What comes before a document's root element: a BOM, the XML declaration, comments, processing
# instructions, a DOCTYPE.
_PROLOG = re.compile(rb"(?:\xef\xbb\xbf|\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>)*", re.S | re.I)
_ROOT = re.compile(rb"<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)")
_FEED_ROOTS = {b"rss", b"feed", b"rdf", b"channel"}  # RSS 0.9x/2.0, Atom, RSS 1.0 (rdf:RDF), Userland's bare channel


class NotAFeed(ValueError):
    """`str(exc)` says why the text is not a feed's address."""


def is_feed_ref(ref: str) -> bool:
    """Does `ref` name a web address other than a t.me link (so a feed, not a channel)?"""
    s = _unwrap(ref)
    if not s or s.startswith("@") or s.lower().startswith("tg://"):
        return False
    bare = _SCHEME.sub("", s)
    host = bare.split("/", 1)[0].split("?", 1)[0].lower()
    if host.rsplit(":", 1)[0] in _TELEGRAM_HOSTS:
        return False
    return bool(_SCHEME.match(s)) or ("." in host and "/" in bare)


def _unwrap(ref: str) -> str:
    """Slack writes links as `<url>` or `<url|label>`."""
    s = ref.strip().strip("<>").strip()
    return s.split("|", 1)[0].strip()


def feed_url(ref: str) -> str:
    """The canonical address of a feed written as `https://outlet.example/rss.xml` (or without the scheme):
    scheme and host lowercase, no fragment, https when none is given. Raises `NotAFeed`."""
    s = _unwrap(ref)
    if not _SCHEME.match(s):
        s = "https://" + s
    try:
        parts = urlsplit(s)
        port = parts.port
    except ValueError as exc:
        raise NotAFeed("it is not a valid web address") from exc
    if parts.scheme.lower() not in ("http", "https"):
        raise NotAFeed("only http and https feeds are read")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host or any(c in host for c in " \\%@"):
        raise NotAFeed("it has no host name")
    if len(s) > 2000:
        raise NotAFeed("the address is too long")
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def feed_chat_id(url: str) -> str:
    """The tracked chat of a feed: its address without the scheme ("outlet.example/rss.xml")."""
    return _SCHEME.sub("", url).rstrip("/")


def feed_host(url: str) -> str:
    host = urlsplit(url).hostname or url
    return host.removeprefix("www.")


@dataclass(frozen=True)
class FeedItem:
    uid: str  # the item's guid or id, else its link, else a digest of its title and text
    link: str
    title: str
    text: str  # title and summary, plain, at most MAX_TEXT characters
    at: datetime | None

    @property
    def message_id(self) -> str:
        """A short stable id for the tracked message (guids can be long URLs)."""
        return hashlib.sha1(self.uid.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class FeedPage:
    title: str = ""
    link: str = ""  # the outlet's site
    version: str = ""  # feedparser's name of the format: "rss20", "atom10", …
    items: list[FeedItem] = field(default_factory=list)
    entries: int = 0  # entries seen, read or not
    problem: str = ""  # why the body is not a feed tipline reads, when it is not


FeedStatus = Literal["ok", "not_modified", "not_found", "forbidden", "not_feed", "slowed", "layout", "unreachable",
                     "blocked"]


@dataclass(frozen=True)
class FeedOutcome:
    """What one request for a feed said. `page` only with ok; `etag`/`last_modified` the validators of a 200;
    `retry_after` (seconds) only with slowed; `detail` a short reason."""

    status: FeedStatus
    page: FeedPage | None = None
    etag: str = ""
    last_modified: str = ""
    retry_after: float | None = None
    detail: str = ""
    truncated: bool = False


def _when(entry: Any) -> datetime | None:
    # feedparser's *_parsed are UTC time tuples; dict.get: FeedParserDict.get aliases updated<->published.
    for key in ("published_parsed", "updated_parsed", "created_parsed"):
        parsed = dict.get(entry, key)
        if parsed:
            try:
                return datetime.fromtimestamp(calendar.timegm(parsed), UTC)
            except (OverflowError, ValueError, TypeError):
                continue
    return None


def _item(entry: Any) -> FeedItem | None:
    title = clean_text(entry.get("title"))[:MAX_TEXT]
    summary = clean_text(entry.get("summary"))
    if not summary:
        for content in entry.get("content") or []:
            summary = clean_text(content.get("value"))
            if summary:
                break
    link = str(entry.get("link") or "").strip()
    if link and not link.lower().startswith(("http://", "https://")):
        link = ""
    if title and summary.startswith(title) and not summary[len(title):len(title) + 1].isalnum():
        title_text = summary  # the summary repeats the title: once is enough
    else:
        title_text = f"{title}\n{summary}" if title and summary else title or summary
    text = title_text[:MAX_TEXT].strip()
    uid = str(entry.get("id") or "").strip() or link
    if not uid and text:
        uid = "text:" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
    if not text or not uid:
        return None
    return FeedItem(uid[:2000], link[:2000], title[:MAX_TITLE * 2], text, _when(entry))


def _root_element(data: bytes) -> bytes:
    """The local name of the document's first element, lowercase ("rss", "feed", "rdf", "html"), or b""."""
    head = data[:64 * 1024]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16: read its ASCII-range characters
        head = head.decode("utf-16", "ignore").encode("ascii", "ignore")
    m = _ROOT.match(head, _PROLOG.match(head).end())  # type: ignore[union-attr]
    return m.group(2).lower() if m else b""


def parse_feed(data: bytes, content_type: str = "") -> FeedPage:
    """The items of an RSS or Atom document (CPU work: call it in a thread). Never raises: a body that is
    not a feed comes back with `problem` set."""
    if _ENTITY_DECLARATION.search(data[:64 * 1024]):
        # Declared entities are how a "billion laughs" file is made; a feed has no use for them.
        return FeedPage(problem="the document declares XML entities, which tipline does not read")
    if looks_binary(data):
        return FeedPage(problem="the answer is binary, not a feed")
    root = _root_element(data)
    if root not in _FEED_ROOTS:
        # feedparser's lenient parser finds "<item>" even in a web page's script; only a feed's root counts.
        what = f"<{root.decode('ascii', 'replace')}>" if root else "no XML element"
        return FeedPage(problem=f"no RSS or Atom feed in it ({what}: a web page?)")
    import feedparser  # ~0.03 s to import; only a process that reads feeds pays it

    try:
        parsed = feedparser.parse(data, response_headers={"content-type": content_type} if content_type else None,
                                  sanitize_html=False, resolve_relative_uris=False)
    except Exception as exc:  # feedparser is lenient; this is the belt to its braces
        return FeedPage(problem=f"feedparser stopped: {type(exc).__name__}")
    version = str(parsed.get("version") or "")
    entries = list(parsed.get("entries") or [])
    if not version and not entries:
        return FeedPage(problem="no RSS or Atom feed in it (a web page?)")
    feed = parsed.get("feed") or {}
    page = FeedPage(title=clean_text(feed.get("title"))[:MAX_TITLE], link=str(feed.get("link") or "")[:2000],
                    version=version, entries=len(entries))
    for entry in entries[:MAX_ITEMS]:
        item = _item(entry)
        if item is not None:
            page.items.append(item)
    return page


class FeedReader:
    """Reads feeds by their address through the SSRF guard, with conditional GET. One session, opened on
    first use; redirects are followed by hand (each hop checked), at most `max_redirects`."""

    def __init__(self, guard: SSRFGuard, *, timeout_s: float = 15.0, max_bytes: int = 2 * 1024 * 1024,
                 max_redirects: int = 5):
        self.guard = guard
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0  # requests sent, for the docs' request rate

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(resolver=GuardedResolver(self.guard), use_dns_cache=False, limit=20,
                                             limit_per_host=2)
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5.0),
                headers={"User-Agent": USER_AGENT,
                         "Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, "
                                   "text/xml;q=0.9, */*;q=0.5"})
        return self._session

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def read(self, url: str, *, etag: str = "", last_modified: str = "") -> FeedOutcome:
        """One conditional GET of the feed at `url`, classified. Never raises for what the network or the
        site does: that is the outcome's status."""
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._read(url, etag, last_modified)
        except BlockedURL as exc:
            return FeedOutcome("blocked", detail=exc.sentence)
        except HostNotFound:
            return FeedOutcome("unreachable", detail="its host name is not found (DNS)")
        except (TimeoutError, asyncio.TimeoutError):
            return FeedOutcome("unreachable", detail="no answer in time")
        except aiohttp.ClientConnectorError as exc:
            return FeedOutcome("unreachable", detail=f"cannot connect to {exc.host}:{exc.port}")
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            return FeedOutcome("unreachable", detail=f"{type(exc).__name__}: {exc}"[:200])

    async def _read(self, url: str, etag: str, last_modified: str) -> FeedOutcome:
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        current = url
        for _hop in range(self.max_redirects + 1):
            checked = await self.guard.check(current)
            self.requests += 1
            async with self._http().get(checked.url, headers=headers, allow_redirects=False,
                                        timeout=aiohttp.ClientTimeout(total=None, sock_read=self.timeout_s)) as resp:
                if resp.status in _REDIRECTS:
                    location = resp.headers.get("Location", "")
                    if not location:
                        return FeedOutcome("unreachable", detail=f"HTTP {resp.status} without a Location")
                    current = str(checked.url.join(URL(location)))
                    continue
                return await self._answer(resp)
        return FeedOutcome("unreachable", detail="too many redirects")

    async def _answer(self, resp: aiohttp.ClientResponse) -> FeedOutcome:
        status = resp.status
        if status == 304:
            return FeedOutcome("not_modified", detail="HTTP 304")
        if status == 429 or (status == 503 and resp.headers.get("Retry-After")):
            return FeedOutcome("slowed", retry_after=retry_after_s(resp.headers.get("Retry-After")),
                               detail=f"HTTP {status}")
        if status in (404, 410):
            return FeedOutcome("not_found", detail=f"HTTP {status}")
        if status in (401, 403):
            return FeedOutcome("forbidden", detail=f"HTTP {status}")
        if status != 200:
            return FeedOutcome("unreachable", detail=f"HTTP {status}")
        body = bytearray()
        truncated = False
        async for chunk in resp.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > self.max_bytes:
                del body[self.max_bytes:]
                truncated = True
                break
        content_type = resp.headers.get("Content-Type", "")
        page = await asyncio.to_thread(parse_feed, bytes(body), content_type)
        etag, modified = resp.headers.get("ETag", "")[:500], resp.headers.get("Last-Modified", "")[:100]
        cut = f"cut at {self.max_bytes // 1024} KB (TIPLINE_FETCH_MAX_BYTES)" if truncated else ""
        if page.problem:
            return FeedOutcome("not_feed", detail="; ".join(x for x in (page.problem, cut) if x), truncated=truncated)
        if page.entries and not page.items:
            return FeedOutcome("layout", detail=f"{page.entries} item(s), none with a title, text or link",
                               truncated=truncated)
        return FeedOutcome("ok", page=page, etag=etag, last_modified=modified, detail=cut, truncated=truncated)
