"""One conditional GET of a fact-checker's feed: the validators of the last answer go back
(`If-None-Match: <ETag>`, `If-Modified-Since: <Last-Modified>`), and a 304 costs one request and nothing else.

    response = await fetch_feed(session, url, etag=..., last_modified=..., max_bytes=MAX_FEED_BYTES)
    # FeedResponse(status="ok", body=…, etag=…, last_modified=…) or status="unchanged"; FeedFetchError else

Feed addresses are the operator's (`tipline feeds add`), so they are trusted as `tipline ingest`'s URLs are;
the article pages a feed links are not, and are read elsewhere through the SSRF guard
(core/watch/factcheck_feed.py). A request carries only the feed's own address and tipline's User-Agent: nothing
of any user's message.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

import aiohttp

from core.evidence.fetch import USER_AGENT
from core.watch.telegram_preview import retry_after_s

MAX_FEED_BYTES = 10 * 1024 * 1024  # fact-checkers' feeds are 50 KB - 2 MB; a feed is useless cut short
ACCEPT = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"


@dataclass(frozen=True)
class FeedResponse:
    status: Literal["ok", "unchanged"]
    body: bytes = b""
    etag: str = ""
    last_modified: str = ""


class FeedFetchError(Exception):
    """The feed could not be read: `status` is the short word `tipline feeds list` shows, `str(exc)` one
    sentence; `retry_after_s` is set for a 429 (its Retry-After)."""

    def __init__(self, status: str, sentence: str, retry_after_s: float | None = None):
        super().__init__(sentence)
        self.status = status
        self.retry_after_s = retry_after_s


def feed_session(timeout_s: float = 30.0) -> aiohttp.ClientSession:
    """A session for feeds: no cookies kept, the environment's proxy honoured (an operator's way out)."""
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s), cookie_jar=aiohttp.DummyCookieJar(),
                                 headers={"User-Agent": USER_AGENT, "Accept": ACCEPT}, trust_env=True)


async def fetch_feed(session: aiohttp.ClientSession, url: str, *, etag: str = "", last_modified: str = "",
                     max_bytes: int = MAX_FEED_BYTES) -> FeedResponse:
    headers = {}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    try:
        async with session.get(url, headers=headers, max_redirects=5) as resp:
            if resp.status == 304:
                # A 304 may repeat the validators; keep the old ones when it does not.
                return FeedResponse("unchanged", etag=resp.headers.get("ETag", etag),
                                    last_modified=resp.headers.get("Last-Modified", last_modified))
            _raise_for(resp)
            if resp.content_length is not None and resp.content_length > max_bytes:
                raise FeedFetchError("too large", f"the feed is {resp.content_length / 2**20:.1f} MB, over the "
                                     f"{max_bytes / 2**20:.0f} MB a feed may be")
            body = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > max_bytes:
                    raise FeedFetchError("too large", f"the feed is over the {max_bytes / 2**20:.0f} MB a feed may be")
            return FeedResponse("ok", bytes(body), resp.headers.get("ETag", ""), resp.headers.get("Last-Modified", ""))
    except FeedFetchError:
        raise
    except aiohttp.TooManyRedirects as exc:
        raise FeedFetchError("unreachable", "the feed's address redirects too many times") from exc
    except (aiohttp.InvalidURL, ValueError) as exc:
        raise FeedFetchError("not found", "the feed's address is not a valid web address") from exc
    except aiohttp.ClientConnectorDNSError as exc:
        raise FeedFetchError("unreachable", "the feed's site name does not resolve") from exc
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        raise FeedFetchError("unreachable", f"the feed's site could not be reached ({exc.__class__.__name__})") from exc


def _raise_for(resp: aiohttp.ClientResponse) -> None:
    code = resp.status
    if code < 400:
        return
    if code == 429:
        wait = retry_after_s(resp.headers.get("Retry-After"))
        raise FeedFetchError("slowed down", f"the site asked tipline to wait {wait:.0f} s (HTTP 429)", wait)
    if code in (404, 410):
        raise FeedFetchError("not found", f"the site has no feed at this address (HTTP {code}; moved or retired?)")
    if code in (401, 403, 451):
        raise FeedFetchError("refused", f"the site refuses to serve the feed (HTTP {code})")
    raise FeedFetchError("unreachable", f"the site answered HTTP {code}")
