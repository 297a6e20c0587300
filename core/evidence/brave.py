"""Brave Web Search API: GET {brave_url}?q=…&count=N with header `X-Subscription-Token: <key>`.

    BraveSource(session, settings.brave_url, settings.brave_api_key.get_secret_value())

Response: {"web": {"results": [{"url", "title", "description", "page_age", "age", ...}]},
"news": {"results": [...]}} — `news` only when Brave mixes news into the page; both are used.
`page_age` is an ISO timestamp; `age` is display text ("2 days ago", "January 5, 2024").
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import aiohttp

from core.evidence.base import ClaimQuery, Evidence, SourceType
from core.evidence.errors import ProviderError
from core.evidence.http import get_json
from core.evidence.searxng import site_filter
from core.evidence.staged import staged_search
from core.evidence.text import clean_snippet, domain_of, parse_datetime

MAX_COUNT = 20  # Brave's limit for web results


def _age(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    for fmt in ("%B %d, %Y", "%b %d, %Y"):
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return parse_datetime(value)


class BraveSource:
    name = "brave"
    label = "web search"
    searches_web = True

    def __init__(self, session: aiohttp.ClientSession, url: str, api_key: str, *, timeout_s: float = 8.0,
                 enough: int = 3):
        self.session = session
        self.url = url
        self._key = api_key
        self.timeout_s = timeout_s
        self.enough = enough

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        return await staged_search(self.search, site_filter, query, limit=limit, enough=self.enough)

    async def search(self, q: str, count: int) -> list[Evidence]:
        doc = await get_json(self.session, "Brave Search", self.url,
                             params={"q": q[:400], "count": str(max(1, min(count, MAX_COUNT)))},
                             headers={"X-Subscription-Token": self._key, "Accept": "application/json"},
                             timeout_s=self.timeout_s)
        if not isinstance(doc, dict):
            raise ProviderError("Brave Search", "Brave Search sent an answer that is not a JSON object.")
        out: list[Evidence] = []
        sections: tuple[tuple[str, SourceType], ...] = (("web", "web"), ("news", "news"))
        for section, kind in sections:
            block = doc.get(section)
            results = block.get("results") if isinstance(block, dict) else None
            for item in results if isinstance(results, list) else []:
                if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                    continue
                url = item["url"]
                if not url.startswith(("http://", "https://")):
                    continue
                raw_profile = item.get("profile")
                profile: dict[str, Any] = raw_profile if isinstance(raw_profile, dict) else {}
                out.append(Evidence(
                    url=url, title=clean_snippet(item.get("title"), 300), snippet=clean_snippet(item.get("description")),
                    publisher=str(profile.get("name") or "")[:200], domain=domain_of(url),
                    published_at=parse_datetime(item.get("page_age")) or _age(item.get("age")),
                    source=self.name, source_type=kind,
                    language=str(item.get("language") or "")[:8]))
        return out[: max(count, 0)]
