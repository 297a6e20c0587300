"""GDELT DOC 2.1 API (keyless news search): GET {gdelt_url}?query=…&mode=ArtList&format=json&maxrecords=N&sort=DateDesc.

    GdeltSource(session, settings.gdelt_url, timeout_s=settings.source_timeout_s)

Response: {"articles": [{"url", "title", "seendate": "20240101T120000Z", "domain", "language",
"sourcecountry", ...}]}; no matches is `{}`. GDELT reports bad queries and rate limits as plain text with
HTTP 200 ("Your search contained a phrase that was too short", "Please limit requests to one every 5
seconds"): anything that is not JSON is reported with its first words (the rate-limit notice as a 429).
Articles have no snippet, so the title stands in for one. One request per claim (see `gather`).
"""

from __future__ import annotations

import json
import re

import aiohttp

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.errors import ProviderError
from core.evidence.http import get_text
from core.evidence.staged import FACTCHECK_DOMAINS, STAGE_WEIGHTS
from core.evidence.text import clean_snippet, domain_of, parse_datetime, safe_domains

MAX_RECORDS = 250
_LANGS = {"english": "en", "spanish": "es", "french": "fr", "german": "de", "russian": "ru", "ukrainian": "uk",
          "portuguese": "pt", "italian": "it", "arabic": "ar", "chinese": "zh", "polish": "pl", "turkish": "tr"}
_STOP = frozenset("the and for that with this from are was were has have had not but its into about".split())


def gdelt_terms(text: str, max_terms: int = 8) -> str:
    """GDELT refuses short words and most punctuation; keep up to `max_terms` plain keywords."""
    words = [w for w in re.findall(r"\w+", text) if len(w) >= 3 and w.lower() not in _STOP]
    return " ".join(list(dict.fromkeys(words))[:max_terms])


class GdeltSource:
    name = "gdelt"
    label = "news search"
    searches_web = True

    def __init__(self, session: aiohttp.ClientSession, url: str, *, timeout_s: float = 8.0, enough: int = 3):
        self.session = session
        self.url = url
        self.timeout_s = timeout_s
        self.enough = enough

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        # GDELT allows one request every 5 seconds per client, so the three search stages happen locally:
        # one keyword query fetches a wide list, then trusted outlets, fact-checkers and the rest are
        # ranked in that order (the other providers run the stages as separate site-filtered queries).
        keywords = next((t for t in map(gdelt_terms, query.search_queries) if t), "") or gdelt_terms(query.claim)
        if not keywords:
            return []
        found = await self.search(keywords, min(MAX_RECORDS, max(limit * 5, 50)))
        trusted = set(safe_domains(query.allow_domains, limit=50))
        checkers = set(FACTCHECK_DOMAINS)

        def stage(e: Evidence) -> str:
            if any(e.domain == d or e.domain.endswith("." + d) for d in trusted):
                return "trusted"
            return "factcheckers" if any(e.domain == d or e.domain.endswith("." + d) for d in checkers) else "broad"

        ranked = sorted(enumerate(found), key=lambda p: (-STAGE_WEIGHTS[stage(p[1])], p[0]))[:limit]
        n = max(len(found), 1)
        return [e.model_copy(update={"retrieval_score": round(STAGE_WEIGHTS[stage(e)] * (1.0 - 0.1 * i / n), 4)})
                for i, e in ranked]

    async def search(self, q: str, count: int) -> list[Evidence]:
        text = await get_text(self.session, "GDELT", self.url,
                              params={"query": q, "mode": "ArtList", "format": "json",
                                      "maxrecords": str(max(1, min(count, MAX_RECORDS))), "sort": "DateDesc"},
                              timeout_s=self.timeout_s)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            said = " ".join(text.split())[:120]
            if "limit requests" in said.lower():
                # Its rate-limit notice comes as text with HTTP 200; give it a 429 so retries back off.
                raise ProviderError("GDELT", "GDELT is rate-limiting us (one request every 5 seconds).",
                                    status=429, retry_after=5.0) from exc
            raise ProviderError("GDELT", f"GDELT refused the search: {said!r}." if said
                                else "GDELT sent an empty answer.") from exc
        if not isinstance(doc, dict):
            raise ProviderError("GDELT", "GDELT sent an answer that is not a JSON object.")
        articles = doc.get("articles", [])
        out: list[Evidence] = []
        for item in articles if isinstance(articles, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            url = item["url"]
            if not url.startswith(("http://", "https://")):
                continue
            title = clean_snippet(item.get("title"), 300)
            out.append(Evidence(
                url=url, title=title, snippet=title, domain=domain_of(url) or str(item.get("domain") or "")[:200],
                published_at=parse_datetime(item.get("seendate")), source=self.name, source_type="news",
                language=_LANGS.get(str(item.get("language") or "").lower(), "")))
            if len(out) >= count:
                break
        return out
