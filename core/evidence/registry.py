"""Build the configured evidence sources from Settings, and own their HTTP sessions.

    async with EvidenceSources(settings, matcher=app.matcher) as ev:
        evidence, reports = await gather_all(ev.sources, ClaimQuery(claim=..., urls=[...]), limit=8,
                                             timeout=settings.source_timeout_s)

Only configured providers are built: the knowledge base (when a matcher is given), the `evidence`
collection (when an EvidenceIndex is given, see core/evidence/evidence_index.py), Fact Check Tools
(key set), SearxNG (URL set), Brave (key set), GDELT (URL set; the public endpoint by default) and link
expansion (always; SSRF-guarded, `fetch_allow_hosts` trusted). Two sessions: `api_session` for the
operator's provider URLs (trusted) and `fetch_session` for URLs from messages (guarded resolver, no
proxies from the environment). Both use a short connect timeout so an offline machine reports "could not
be reached" in seconds rather than waiting out the whole source timeout. Each is opened only when needed:
`api_session` when a provider is configured, `fetch_session` by the first link a message carries. Without
them nothing imports aiohttp, ~0.22 s of a one-shot `tipline check`'s CPU.

`build_sources(settings, api_session=..., fetcher=..., matcher=...)` is the pure part, for callers
that own their sessions (tests, or a composition root with its own AsyncExitStack).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from pydantic import SecretStr

from core.evidence.base import EvidenceSource
from core.evidence.evidence_index import EvidenceIndex, EvidenceIndexSource
from core.evidence.knowledge import KnowledgeSource
from core.evidence.links import Fetcher, LinkSource
from core.matching.matcher import ClaimMatcher

# The provider modules and fetch.py are imported where a source is built: each imports aiohttp.
if TYPE_CHECKING:
    import aiohttp

    from core.evidence.fetch import FetchedPage, PageFetcher

CONNECT_TIMEOUT_S = 3.0


class Settings(Protocol):
    """The fields of bot.settings.Settings this module reads (core/ may not import bot/)."""

    searxng_url: str | None
    brave_api_key: SecretStr | None
    brave_url: str
    gdelt_url: str | None
    factcheck_api_key: SecretStr | None
    factcheck_url: str
    fetch_allow_hosts: list[str]
    fetch_max_bytes: int
    fetch_timeout_s: float
    source_timeout_s: float
    max_links: int


def providers(settings: Settings) -> list[str]:
    """The outside providers the settings turn on, in the order their sources are built."""
    on = {"factcheck_api": settings.factcheck_api_key is not None and bool(settings.factcheck_url),
          "searxng": bool(settings.searxng_url),
          "brave": settings.brave_api_key is not None and bool(settings.brave_url),
          "gdelt": bool(settings.gdelt_url)}
    return [name for name, wanted in on.items() if wanted]


def api_session() -> aiohttp.ClientSession:
    import aiohttp

    from core.evidence.fetch import USER_AGENT

    # trust_env: operators behind a corporate proxy reach the providers through HTTPS_PROXY.
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=100, limit_per_host=20, ttl_dns_cache=300),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S),
        headers={"User-Agent": USER_AGENT}, trust_env=True)


def build_sources(settings: Settings, *, api_session: aiohttp.ClientSession | None,
                  fetcher: Fetcher | None = None, matcher: ClaimMatcher | None = None,
                  evidence_index: EvidenceIndex | None = None) -> list[EvidenceSource]:
    """`api_session` may be None only when no provider is configured (`providers(settings)` is empty);
    no `fetcher`: no link expansion."""
    # Each provider call gets a little less than the per-source budget, so it ends with its own error
    # sentence instead of being cut off by gather_all's timeout.
    t = max(1.0, settings.source_timeout_s * 0.8)
    sources: list[EvidenceSource] = []
    if matcher is not None:
        sources.append(KnowledgeSource(matcher))
    if evidence_index is not None:
        sources.append(EvidenceIndexSource(evidence_index))
    wanted = providers(settings)
    if wanted:
        if api_session is None:
            raise ValueError(f"build_sources needs an api_session for {', '.join(wanted)}")
        sources += _provider_sources(settings, wanted, api_session, t)
    if fetcher is not None and settings.max_links > 0:
        sources.append(LinkSource(fetcher, max_links=settings.max_links, total_timeout_s=t))
    return sources


def _provider_sources(settings: Settings, wanted: list[str], session: aiohttp.ClientSession,
                      t: float) -> list[EvidenceSource]:
    sources: list[EvidenceSource] = []
    if "factcheck_api" in wanted and settings.factcheck_api_key is not None:
        from core.evidence.factcheck_api import FactCheckAPISource

        sources.append(FactCheckAPISource(session, settings.factcheck_url,
                                          settings.factcheck_api_key.get_secret_value(), timeout_s=t))
    if "searxng" in wanted and settings.searxng_url:
        from core.evidence.searxng import SearxNGSource

        sources.append(SearxNGSource(session, settings.searxng_url, timeout_s=t))
    if "brave" in wanted and settings.brave_api_key is not None:
        from core.evidence.brave import BraveSource

        sources.append(BraveSource(session, settings.brave_url, settings.brave_api_key.get_secret_value(),
                                   timeout_s=t))
    if "gdelt" in wanted and settings.gdelt_url:
        from core.evidence.gdelt import GdeltSource

        sources.append(GdeltSource(session, settings.gdelt_url, timeout_s=t))
    return sources


class _OnFirstLink:
    """The link source's fetcher: the guarded session and its PageFetcher are made once, by the first link
    a message carries; most messages carry none."""

    def __init__(self, open_fetcher: Callable[[], Awaitable[PageFetcher]]):
        self._open = open_fetcher
        self._fetcher: PageFetcher | None = None
        self._lock = asyncio.Lock()

    async def fetch(self, url: str) -> FetchedPage:
        async with self._lock:  # links are fetched concurrently: one session for all of them
            if self._fetcher is None:
                self._fetcher = await self._open()
        return await self._fetcher.fetch(url)


class EvidenceSources:
    """The sources plus the sessions they share; `async with` (or `await aclose()`) closes the sessions."""

    def __init__(self, settings: Settings, *, matcher: ClaimMatcher | None = None,
                 evidence_index: EvidenceIndex | None = None):
        self.settings = settings
        self.matcher = matcher
        self.evidence_index = evidence_index
        self.sources: list[EvidenceSource] = []
        self.api_session: aiohttp.ClientSession | None = None  # opened with a provider
        self.fetch_session: aiohttp.ClientSession | None = None  # opened by the first link
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> EvidenceSources:
        await self.open()
        return self

    async def open(self) -> None:
        if providers(self.settings):
            self.api_session = await self._stack.enter_async_context(api_session())
        self.sources = build_sources(self.settings, api_session=self.api_session,
                                     fetcher=_OnFirstLink(self._page_fetcher), matcher=self.matcher,
                                     evidence_index=self.evidence_index)

    async def _page_fetcher(self) -> PageFetcher:
        from core.evidence.fetch import PageFetcher, guarded_session
        from core.evidence.ssrf import SSRFGuard

        guard = SSRFGuard(self.settings.fetch_allow_hosts)
        self.fetch_session = await self._stack.enter_async_context(
            guarded_session(guard, connect_timeout_s=CONNECT_TIMEOUT_S))
        return PageFetcher(self.fetch_session, guard, max_bytes=self.settings.fetch_max_bytes,
                           timeout_s=self.settings.fetch_timeout_s)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sources]

    async def aclose(self) -> None:
        await self._stack.aclose()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
