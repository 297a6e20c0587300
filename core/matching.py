"""Claim matching: has this already been fact-checked?

1. Exact URL: a link in the message that is a known fact-check or a known appearance of a claim.
2. Hybrid candidates: dense search over the claim and the headline fields plus sparse term search
   (storage/vectors.py), the union of the three lists.
3. A learned re-ranker (core/reranker.py, trained on CLEF-2020 Task 2 train) scores every candidate
   with a calibrated probability that it is the same claim; two thresholds from the same training
   decide: >= auto, the verdict may inherit the fact-check's rating; >= suggest, "possibly related".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.knowledge import KnowledgeBase
from core.matchfeatures import FEATURE_NAMES, LISTS, candidate_features, prepare_query
from core.models import FactCheck, Match, Verdict
from core.reranker import Reranker
from core.sparse import query_vector
from core.textclean import clean_query

# Our vector-store list names -> the re-ranker's candidate-list names.
_LIST_NAMES = {"claim": LISTS[0], "title": LISTS[1], "terms": LISTS[2]}


_COS_DOC = FEATURE_NAMES.index("cos_doc")


@dataclass(frozen=True)
class Thresholds:
    auto: float
    suggest: float
    auto_min_cos_doc: float = 0.0

    def tier(self, p: float, cos_doc: float) -> str:
        if p >= self.auto and cos_doc >= self.auto_min_cos_doc:
            return "auto"
        return "suggest" if p >= self.suggest else "none"


def _match_from_payload(pid: str, payload: dict, p: float, tier: str) -> Match:
    return Match(
        factcheck_id=pid, claim=payload.get("claim", ""), title=payload.get("title", ""),
        url=payload.get("url", ""), publisher=payload.get("publisher", ""),
        published_at=payload.get("published_at"), rating_text=payload.get("rating_text", ""),
        verdict=Verdict(payload.get("verdict", Verdict.NOT_ENOUGH_EVIDENCE.value)),
        similarity=round(float(p), 4), method="hybrid", tier=tier,
    )


def _match_from_factcheck(fc: FactCheck) -> Match:
    return Match(factcheck_id=fc.id, claim=fc.claim, title=fc.title, url=fc.url, publisher=fc.publisher,
                 published_at=fc.published_at, rating_text=fc.rating_text, verdict=fc.verdict,
                 similarity=1.0, method="url", tier="auto")


class ClaimMatcher:
    def __init__(self, kb: KnowledgeBase, reranker: Reranker, *, candidates: int = 40,
                 auto: float | None = None, suggest: float | None = None,
                 auto_languages: frozenset[str] | None = frozenset({"en"})):
        self.kb = kb
        # The default embedding model and the re-ranker's training data are English. In other
        # languages similarities are unreliable (Cyrillic text all looks alike to it), so matches are
        # shown but never decide a verdict. None lifts this, e.g. with a multilingual model.
        self.auto_languages = auto_languages
        self.reranker = reranker
        self.candidates = candidates
        self.thresholds = Thresholds(auto if auto is not None else reranker.auto_threshold,
                                     suggest if suggest is not None else reranker.suggest_threshold,
                                     reranker.auto_min_cos_doc)

    async def by_url(self, urls: list[str]) -> list[Match]:
        return [_match_from_factcheck(fc) for fc in await self.kb.db.factchecks_by_urls(urls)]

    async def by_text(self, text: str, limit: int = 5) -> list[Match]:
        """Every candidate scored, best first, at most `limit`."""
        clean = clean_query(text)
        vec = (await self.kb.embedder.embed([clean]))[0]
        hits = await self.kb.vectors.search_factchecks(self.kb.collection, vec, query_vector(clean),
                                                       self.candidates)
        if not hits:
            return []
        query = prepare_query(text, clean, vec, self.kb.stats)
        dim = vec.shape[0]
        ranks = {_LIST_NAMES[name]: [h.ranks.get(name, 0) for h in hits] for name in _LIST_NAMES}
        features = candidate_features(
            query,
            [h.payload.get("claim", "") for h in hits],
            [h.payload.get("title", "") for h in hits],
            np.vstack([h.vectors.get("claim", np.zeros(dim, np.float32)) for h in hits]),
            np.vstack([h.vectors.get("title", np.zeros(dim, np.float32)) for h in hits]),
            ranks, self.kb.stats,
        )
        probs = self.reranker.score(features)
        order = np.argsort(-probs, kind="stable")[:limit]
        return [_match_from_payload(hits[i].id, hits[i].payload, probs[i],
                                    self.thresholds.tier(probs[i], features[i, _COS_DOC]))
                for i in order]

    async def match(self, text: str, urls: list[str], limit: int = 5, language: str = "en") -> list[Match]:
        exact = await self.by_url(urls)
        seen = {m.factcheck_id for m in exact}
        ranked = [m for m in await self.by_text(text, limit + len(exact)) if m.factcheck_id not in seen]
        if self.auto_languages is not None and language not in self.auto_languages:
            ranked = [m.model_copy(update={"tier": "suggest"}) if m.tier == "auto" else m for m in ranked]
        return (exact + ranked)[:limit]
