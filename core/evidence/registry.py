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
be reached" in seconds rather than waiting out the whole source timeout.

`build_sources(settings, api_session=..., fetch_session=..., matcher=...)` is the pure part, for callers
that own their sessions (tests, or a composition root with its own AsyncExitStack).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType
from typing import Protocol

import aiohttp
from pydantic import SecretStr

from core.evidence.base import EvidenceSource
from core.evidence.brave import BraveSource
from core.evidence.evidence_index import EvidenceIndex, EvidenceIndexSource
from core.evidence.factcheck_api import FactCheckAPISource
from core.evidence.fetch import USER_AGENT, PageFetcher, guarded_session
from core.evidence.gdelt import GdeltSource
from core.evidence.knowledge import KnowledgeSource
from core.evidence.links import LinkSource
from core.evidence.searxng import SearxNGSource
from core.evidence.ssrf import SSRFGuard
from core.matching import ClaimMatcher

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


def api_session() -> aiohttp.ClientSession:
    # trust_env: operators behind a corporate proxy reach the providers through HTTPS_PROXY.
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=100, limit_per_host=20, ttl_dns_cache=300),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S),
        headers={"User-Agent": USER_AGENT}, trust_env=True)


def build_sources(settings: Settings, *, api_session: aiohttp.ClientSession,
                  fetch_session: aiohttp.ClientSession | None = None, guard: SSRFGuard | None = None,
                  matcher: ClaimMatcher | None = None,
                  evidence_index: EvidenceIndex | None = None) -> list[EvidenceSource]:
    # Each provider call gets a little less than the per-source budget, so it ends with its own error
    # sentence instead of being cut off by gather_all's timeout.
    t = max(1.0, settings.source_timeout_s * 0.8)
    sources: list[EvidenceSource] = []
    if matcher is not None:
        sources.append(KnowledgeSource(matcher))
    if evidence_index is not None:
        sources.append(EvidenceIndexSource(evidence_index))
    if settings.factcheck_api_key is not None and settings.factcheck_url:
        sources.append(FactCheckAPISource(api_session, settings.factcheck_url,
                                          settings.factcheck_api_key.get_secret_value(), timeout_s=t))
    if settings.searxng_url:
        sources.append(SearxNGSource(api_session, settings.searxng_url, timeout_s=t))
    if settings.brave_api_key is not None and settings.brave_url:
        sources.append(BraveSource(api_session, settings.brave_url, settings.brave_api_key.get_secret_value(),
                                   timeout_s=t))
    if settings.gdelt_url:
        sources.append(GdeltSource(api_session, settings.gdelt_url, timeout_s=t))
    if fetch_session is not None and settings.max_links > 0:
        guard = guard or SSRFGuard(settings.fetch_allow_hosts)
        fetcher = PageFetcher(fetch_session, guard, max_bytes=settings.fetch_max_bytes,
                              timeout_s=settings.fetch_timeout_s)
        sources.append(LinkSource(fetcher, max_links=settings.max_links, total_timeout_s=t))
    return sources


class EvidenceSources:
    """The sources plus the sessions they share; `async with` (or `await aclose()`) closes the sessions."""

    def __init__(self, settings: Settings, *, matcher: ClaimMatcher | None = None,
                 evidence_index: EvidenceIndex | None = None):
        self.settings = settings
        self.matcher = matcher
        self.evidence_index = evidence_index
        self.guard = SSRFGuard(settings.fetch_allow_hosts)
        self.sources: list[EvidenceSource] = []
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> EvidenceSources:
        await self.open()
        return self

    async def open(self) -> None:
        api = await self._stack.enter_async_context(api_session())
        fetch = await self._stack.enter_async_context(guarded_session(self.guard, connect_timeout_s=CONNECT_TIMEOUT_S))
        self.api_session, self.fetch_session = api, fetch
        self.sources = build_sources(self.settings, api_session=api, fetch_session=fetch, guard=self.guard,
                                     matcher=self.matcher, evidence_index=self.evidence_index)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sources]

    async def aclose(self) -> None:
        await self._stack.aclose()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
