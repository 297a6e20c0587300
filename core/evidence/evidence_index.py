"""The knowledge base grows with use: web/news/page evidence is indexed into the `evidence` collection,
and searched there as one more evidence source.

    index = EvidenceIndex(EvidenceVectors(app.vectors, settings.evidence_collection), app.embedder)
    await index.open()
    await index.add(evidence)                          # after a check: keeps web, news and page items
    source = EvidenceIndexSource(index)                # name "evidence_index", source_type "knowledge"

Scores: cosine similarity + 0.02 per past use (`access_count`), and an item's count goes
up each time it is returned above `min_similarity`, so evidence that keeps proving relevant rises.
"""

from __future__ import annotations

from datetime import datetime, timezone

from core.evidence.ranking import evidence_text
from core.evidence.credibility import default_credibility
from core.encoders.text_embedder import TextEmbedder
from core.evidence.base import ClaimQuery, Evidence
from core.evidence.text import parse_datetime
from storage.evidence_vectors import EvidencePoint, EvidenceVectors

INDEXED_TYPES = frozenset({"web", "news", "page"})
ACCESS_BOOST = 0.02


def payload_of(e: Evidence) -> dict:
    return {"domain": e.domain, "source_type": e.source_type, "credibility": default_credibility(e.domain),
            "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"), "language": e.language or "en",
            "title": e.title[:500], "snippet": e.snippet[:1500], "publisher": e.publisher[:200],
            "published_at": e.published_at.isoformat() if e.published_at else None, "found_by": e.source,
            "text_length": len(e.snippet)}


class EvidenceIndex:
    def __init__(self, vectors: EvidenceVectors, embedder: TextEmbedder):
        self.vectors = vectors
        self.embedder = embedder

    async def open(self) -> None:
        await self.vectors.ensure()

    async def add(self, evidence: list[Evidence]) -> int:
        keep = {e.url: e for e in evidence if e.source_type in INDEXED_TYPES and e.url and (e.snippet or e.title)}
        if not keep:
            return 0
        items = list(keep.values())
        # The same text ranking embedded, so the embedder's cache answers instead of the model.
        vecs = await self.embedder.embed([evidence_text(e) for e in items])
        return await self.vectors.add_new([EvidencePoint(e.url, vecs[i], payload_of(e)) for i, e in enumerate(items)])


class EvidenceIndexSource:
    name = "evidence_index"
    label = "stored evidence"
    searches_web = False

    def __init__(self, index: EvidenceIndex, *, min_similarity: float = 0.5):
        self.index = index
        self.min_similarity = min_similarity

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        vec = (await self.index.embedder.embed([query.claim]))[0]
        hits = await self.index.vectors.search(vec, max(limit * 3, 10))
        scored = sorted(((h.score + ACCESS_BOOST * int(h.payload.get("access_count", 0)), h) for h in hits
                         if h.score >= self.min_similarity), key=lambda p: -p[0])[:limit]
        if scored:
            await self.index.vectors.increment_access([h.url for _, h in scored])
        return [Evidence(url=h.url, title=str(p.get("title", "")), snippet=str(p.get("snippet", "")),
                         publisher=str(p.get("publisher", "")), domain=str(p.get("domain", "")),
                         published_at=parse_datetime(p.get("published_at")), source=self.name,
                         source_type="knowledge", language=str(p.get("language", "")),
                         retrieval_score=round(min(1.0, boosted), 4))
                for boosted, h in scored for p in [h.payload]]
