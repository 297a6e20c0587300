"""The photos of watched channels' posts: downloaded from the URL the preview page names (bounded) and
perceptually hashed (core/corroboration/photo_hash.py), so that the same picture in several channels is one story.

Only URLs on the preview's own host (TIPLINE_TELEGRAM_PREVIEW_URL) or Telegram's file CDN (`*.telesco.pe`,
`*.cdn-telegram.org`) are fetched: a page is outside input, and its style attribute must not make tipline
request anything else. No redirect is followed. A download is bounded by a total timeout and a byte cap
(Content-Length refused up front, the body cut at the cap), and the image by its pixel count before anything
decodes it. Every failure is an outcome with a reason, never an exception: the post is then stored by its
text alone (a photo-only post is skipped).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from core.watch.public_session import PublicSession
from core.intake.image_limits import ImageLimits, ImageRefused
from core.corroboration.photo_hash import photo_hash

log = logging.getLogger(__name__)

CDN_SUFFIXES = (".telesco.pe", ".cdn-telegram.org")  # where t.me/s/ pages point their photos
MAX_AT_ONCE = 2  # photo downloads in flight per fetcher


@dataclass(frozen=True)
class PhotoResult:
    """A photo's hash, or why there is none (`reason`: a few words for the log)."""

    url: str
    hash: int | None = None
    reason: str = ""


class PreviewPhotos:
    """Downloads and hashes watched posts' photos; one session, opened on first use."""

    def __init__(self, preview_url: str, *, timeout_s: float = 10.0, limits: ImageLimits | None = None,
                 session: aiohttp.ClientSession | None = None):
        where = urlsplit(preview_url)
        self.preview_host = (where.hostname or "").lower()
        self.preview_port = where.port
        self.timeout_s = timeout_s
        self.limits = limits or ImageLimits()
        self._public = PublicSession(timeout_s, "image/jpeg,image/png,image/webp;q=0.9", session)
        self._slots = asyncio.Semaphore(MAX_AT_ONCE)
        self.requests = 0  # photos asked for, for the docs' request rate

    def allowed(self, url: str) -> bool:
        """Whether `url` is on the preview's host or Telegram's file CDN (https, or the preview's own scheme)."""
        try:
            parts = urlsplit(url)
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
            return False
        if host == self.preview_host and port == self.preview_port:
            return True
        return parts.scheme == "https" and port in (None, 443) and host.endswith(CDN_SUFFIXES)

    def _http(self) -> aiohttp.ClientSession:
        return self._public.get()

    async def aclose(self) -> None:
        await self._public.aclose()

    async def hash(self, url: str) -> PhotoResult:
        """The perceptual hash of the photo at `url`, or the reason there is none. Never raises (but for
        cancellation)."""
        if not self.allowed(url):
            return PhotoResult(url, reason="not a Telegram photo URL")
        async with self._slots:
            try:
                data = await asyncio.wait_for(self._download(url), self.timeout_s)
            except (TimeoutError, asyncio.TimeoutError):
                return PhotoResult(url, reason=f"no answer within {self.timeout_s:g} s")
            except ImageRefused as exc:
                return PhotoResult(url, reason=str(exc))
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                return PhotoResult(url, reason=f"{type(exc).__name__}: {exc}"[:200])
        if isinstance(data, str):
            return PhotoResult(url, reason=data)
        try:
            return PhotoResult(url, hash=await asyncio.to_thread(photo_hash, data, self.limits))
        except ImageRefused as exc:
            return PhotoResult(url, reason=f"{exc.key}: {exc}"[:200])

    async def _download(self, url: str) -> bytes | str:
        """The body (at most the byte cap), or why not (a string)."""
        self.requests += 1
        async with self._http().get(url, allow_redirects=False) as resp:
            if resp.status != 200:
                return f"HTTP {resp.status}"
            size = resp.content_length
            self.limits.refuse_size(size)
            body = bytearray()
            async for chunk in resp.content.iter_chunked(64 * 1024):
                body += chunk
                self.limits.refuse_size(len(body))
            return bytes(body)
