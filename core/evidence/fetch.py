"""Fetch one web page from an untrusted URL, safely.

    guard = SSRFGuard(settings.fetch_allow_hosts)
    async with guarded_session(guard) as session:          # one per process, shared by all checks
        fetcher = PageFetcher(session, guard, max_bytes=settings.fetch_max_bytes,
                              timeout_s=settings.fetch_timeout_s)
        page = await fetcher.fetch("https://example.org/story")   # -> FetchedPage, or a FetchError

Every hop (the first URL and each redirect) is checked by the SSRF guard before it is requested, and the
session's connector resolves names through `GuardedResolver`, so the socket goes to an address the guard
accepted. Redirects are followed by hand (at most `max_redirects`). The body is streamed and capped:
a declared Content-Length over the cap is refused unread; an undeclared one is cut at the cap and marked
`truncated`. Only text types are read. Errors are typed (core/evidence/errors.py), each with a sentence.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from yarl import URL

from core.evidence.errors import (
    BlockedURL,
    ConnectFailed,
    FetchTimeout,
    HostNotFound,
    HTTPStatusError,
    PageTooLarge,
    TooManyRedirects,
    UnsupportedContent,
)
from core.evidence.ssrf import GuardedResolver, SSRFGuard

TEXT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "application/json",
                        "application/ld+json"})
_REDIRECTS = {301, 302, 303, 307, 308}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]{1,40})""", re.I)
USER_AGENT = "tipline-factcheck/1.0 (+https://github.com/tipline)"


@dataclass
class FetchedPage:
    url: str  # after redirects
    status: int
    content_type: str
    charset: str
    text: str
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)


@asynccontextmanager
async def guarded_session(guard: SSRFGuard, *, connect_timeout_s: float = 5.0) -> AsyncIterator[aiohttp.ClientSession]:
    """A session for untrusted URLs: guarded DNS, no DNS cache (each connection re-checks), no proxies
    from the environment (a proxy would resolve names where we cannot check them), no cookies kept."""
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(guard), use_dns_cache=False, limit=50,
                                     limit_per_host=4)
    session = aiohttp.ClientSession(
        connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s),
        headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5"},
    )
    try:
        yield session
    finally:
        await session.close()


def _charset_of(content_type_header: str, body: bytes) -> str:
    """Header charset, else a BOM, else <meta charset>, else utf-8; only names Python knows."""
    candidates: list[str] = []
    match = re.search(r"charset\s*=\s*[\"']?([^\s;\"']+)", content_type_header or "", re.I)
    if match:
        candidates.append(match.group(1))
    if body.startswith(codecs.BOM_UTF8):
        candidates.append("utf-8-sig")
    elif body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        candidates.append("utf-16")
    meta = _META_CHARSET.search(body[:4096])
    if meta:
        candidates.append(meta.group(1).decode("ascii", "ignore"))
    for name in candidates:
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return "utf-8"


def decode_body(body: bytes, content_type_header: str = "") -> tuple[str, str]:
    charset = _charset_of(content_type_header, body)
    try:
        return body.decode(charset), charset
    except UnicodeDecodeError:
        # Mislabelled pages are common: utf-8 declared, cp1252 served (or the reverse). Try the other,
        # then keep what we can rather than lose the page.
        fallback = "cp1252" if charset.replace("-", "") in ("utf8", "utf8sig") else "utf-8"
        try:
            return body.decode(fallback), fallback
        except UnicodeDecodeError:
            return body.decode(charset, errors="replace"), charset


def looks_binary(body: bytes) -> bool:
    head = body[:2048]
    if not head:
        return False
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in head or sum(b < 9 or 13 < b < 32 for b in head) > len(head) // 10


class PageFetcher:
    def __init__(self, session: aiohttp.ClientSession, guard: SSRFGuard, *, max_bytes: int = 2 * 1024 * 1024,
                 timeout_s: float = 8.0, max_redirects: int = 5, read_timeout_s: float | None = None):
        self.session = session
        self.guard = guard
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.max_redirects = max_redirects
        # A drip-feeding server that sends a byte every few seconds would beat a pure read timeout;
        # the overall `timeout_s` is what bounds it. The read timeout just fails silent servers sooner.
        self.read_timeout_s = read_timeout_s or timeout_s

    async def fetch(self, url: str) -> FetchedPage:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._fetch(url)
        except TimeoutError as exc:
            raise FetchTimeout() from exc

    async def _fetch(self, url: str) -> FetchedPage:
        redirects: list[str] = []
        current = url
        for _hop in range(self.max_redirects + 1):
            checked = await self.guard.check(current)
            try:
                async with self.session.get(
                    checked.url, allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=self.read_timeout_s),
                ) as resp:
                    if resp.status in _REDIRECTS:
                        location = resp.headers.get("Location", "")
                        if not location:
                            raise HTTPStatusError(resp.status, "The page redirected without saying where to.")
                        try:
                            current = str(checked.url.join(URL(location)))
                        except ValueError as exc:
                            raise BlockedURL("The page redirected to an address that is not valid.") from exc
                        redirects.append(current)
                        continue
                    return await self._read(resp, redirects)
            except aiohttp.ClientConnectorDNSError as exc:
                raise HostNotFound() from exc
            except (aiohttp.InvalidURL, ValueError) as exc:
                raise BlockedURL("The link was not opened: it is not a valid web address.") from exc
            except TimeoutError as exc:  # aiohttp's read/connect timeouts are TimeoutErrors too
                raise FetchTimeout() from exc
            except aiohttp.ClientPayloadError as exc:
                raise ConnectFailed("The site stopped sending the page part-way.") from exc
            except aiohttp.ClientError as exc:
                raise ConnectFailed() from exc
        raise TooManyRedirects()

    async def _read(self, resp: aiohttp.ClientResponse, redirects: list[str]) -> FetchedPage:
        if resp.status >= 400:
            raise HTTPStatusError(resp.status)
        header = resp.headers.get("Content-Type", "")
        mime = header.split(";", 1)[0].strip().lower()
        if mime not in TEXT_TYPES:
            raise UnsupportedContent(f"The link is not a web page (it is {mime or 'of an unknown type'}).")
        if resp.content_length is not None and resp.content_length > self.max_bytes:
            raise PageTooLarge(f"The page is too large to read ({resp.content_length // 1_000_000} MB).")
        chunks: list[bytes] = []
        size = 0
        truncated = False
        async for chunk in resp.content.iter_chunked(64 * 1024):
            chunks.append(chunk)
            size += len(chunk)
            if size >= self.max_bytes:
                truncated = size > self.max_bytes or not resp.content.at_eof()
                break
        body = b"".join(chunks)[: self.max_bytes]
        if looks_binary(body):
            raise UnsupportedContent("The link is not a web page (its content is binary).")
        text, charset = decode_body(body, header)
        return FetchedPage(url=str(resp.url), status=resp.status, content_type=mime, charset=charset,
                           text=text, truncated=truncated, redirects=redirects)
