"""SearxNG (self-hosted, keyless) JSON API: GET {base}/search?q=…&format=json.

    SearxNGSource(session, settings.searxng_url, timeout_s=settings.source_timeout_s)

Response: {"results": [{"url", "title", "content", "publishedDate", "engine", ...}], ...}. The instance
must have `json` in `search.formats` (otherwise it answers 403, reported as such).
"""

from __future__ import annotations

import aiohttp

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.errors import ProviderError
from core.evidence.http import get_json
from core.evidence.staged import staged_search
from core.evidence.text import clean_snippet, domain_of, parse_datetime


def site_filter(domains: list[str]) -> str:
    return "(" + " OR ".join(f"site:{d}" for d in domains) + ")"


class SearxNGSource:
    name = "searxng"
    label = "web search"
    searches_web = True

    def __init__(self, session: aiohttp.ClientSession, base_url: str, *, timeout_s: float = 8.0, enough: int = 3):
        self.session = session
        self.url = base_url.rstrip("/") + "/search"
        self.timeout_s = timeout_s
        self.enough = enough

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        return await staged_search(lambda q, n: self.search(q, n, query.language), site_filter, query,
                                   limit=limit, enough=self.enough)

    async def search(self, q: str, count: int, language: str = "en") -> list[Evidence]:
        doc = await get_json(self.session, "SearxNG", self.url,
                             params={"q": q, "format": "json", "language": language or "all", "pageno": "1"},
                             timeout_s=self.timeout_s)
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
            raise ProviderError("SearxNG", "SearxNG sent an answer without a results list.")
        out: list[Evidence] = []
        for item in doc["results"]:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            url = item["url"]
            if not url.startswith(("http://", "https://")):
                continue
            out.append(Evidence(url=url, title=clean_snippet(item.get("title"), 300),
                                snippet=clean_snippet(item.get("content")), domain=domain_of(url),
                                published_at=parse_datetime(item.get("publishedDate")), source=self.name,
                                source_type="news" if item.get("category") == "news" else "web",
                                language=language))
            if len(out) >= count:
                break
        return out
