"""The knowledge base (previously fact-checked claims) as an evidence source.

    KnowledgeSource(app.matcher)

Runs the existing `ClaimMatcher.match` (exact URL, then hybrid search + learned re-ranker) unchanged and
returns each candidate above the matcher's "suggest" threshold as source_type "factcheck" Evidence:
rating words and normalised verdict from the fact-check, retrieval_score = the matcher's calibrated
probability that it is the same claim. Candidates below "suggest" are left out: they are other claims.
"""

from __future__ import annotations

from datetime import datetime, time, timezone

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.text import domain_of
from core.matching.matcher import ClaimMatcher
from schema.models import Match


def match_evidence(m: Match, *, source: str = "knowledge") -> Evidence:
    published = datetime.combine(m.published_at, time(), tzinfo=timezone.utc) if m.published_at else None
    return Evidence(url=m.url, title=m.title or m.claim, snippet=f"Claim checked: {m.claim}"[:900],
                    publisher=m.publisher, domain=domain_of(m.url), published_at=published, source=source,
                    source_type="factcheck", rating=m.rating_text, verdict=m.verdict,
                    retrieval_score=m.similarity, match_probability=m.similarity,
                    match_tier=m.tier if m.tier in ("auto", "suggest") else None)


class KnowledgeSource:
    name = "knowledge"
    label = "the fact-check knowledge base"
    searches_web = False

    def __init__(self, matcher: ClaimMatcher):
        self.matcher = matcher

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        matches = await self.matcher.match(query.claim, query.urls, limit=limit)
        return [match_evidence(m, source=self.name) for m in matches if m.tier != "none"]
