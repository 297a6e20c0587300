"""Google Fact Check Tools `claims:search` as an evidence source (source_type "factcheck").

    FactCheckAPISource(session, settings.factcheck_url, settings.factcheck_api_key.get_secret_value())

GET {factcheck_url}?query=…&languageCode=en&pageSize=N&key=KEY. The response is parsed by the same code
that ingests saved API responses (core/ingest/factcheck_api.py), so ratings are normalised the same way
(core/ingest/ratings.py); each claimReview is one Evidence. No matches is `{}`. The key never appears in errors.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, time, timezone

import aiohttp

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.errors import ProviderError
from core.evidence.http import get_json
from core.evidence.text import domain_of
from core.ingest.factcheck_api import parse_document


class FactCheckAPISource:
    name = "factcheck_api"
    label = "fact-check search"
    searches_web = True

    def __init__(self, session: aiohttp.ClientSession, url: str, api_key: str, *, timeout_s: float = 8.0,
                 max_queries: int = 2):
        self.session = session
        self.url = url
        self._key = api_key
        self.timeout_s = timeout_s
        self.max_queries = max_queries

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        queries = list(dict.fromkeys(query.search_queries))[: self.max_queries]
        batches = await asyncio.gather(*(self.search(q, limit, query.language) for q in queries))
        found: dict[str, Evidence] = {}
        for batch in batches:
            for item in batch:
                found.setdefault(item.url, item)
        return list(found.values())[:limit]

    async def search(self, q: str, count: int, language: str = "en") -> list[Evidence]:
        params = {"query": q[:500], "pageSize": str(max(1, min(count, 50))), "key": self._key}
        if language:
            params["languageCode"] = language
        doc = await get_json(self.session, "Fact Check Tools", self.url, params=params, timeout_s=self.timeout_s)
        if not isinstance(doc, dict):
            raise ProviderError("Fact Check Tools", "Fact Check Tools sent an answer that is not a JSON object.")
        if "claims" not in doc:
            return []  # the API's "nothing found"
        if not isinstance(doc["claims"], list):
            raise ProviderError("Fact Check Tools", "Fact Check Tools sent claims in an unexpected shape.")
        out: list[Evidence] = []
        for rank, row in enumerate(parse_document(doc)):
            fc = row.factcheck
            if fc is None or not fc.url.startswith(("http://", "https://")):
                continue
            published = datetime.combine(fc.published_at, time(), tzinfo=timezone.utc) if fc.published_at else None
            out.append(Evidence(
                url=fc.url, title=fc.title or fc.claim, snippet=f"Claim checked: {fc.claim}"[:900],
                publisher=fc.publisher, domain=domain_of(fc.url), published_at=published, source=self.name,
                source_type="factcheck", language=fc.language, rating=fc.rating_text, verdict=fc.verdict,
                retrieval_score=round(1.0 - rank / (rank + 10), 4)))
        return out[:count]
