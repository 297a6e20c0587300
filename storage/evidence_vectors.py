"""The `evidence` collection: web/news/page evidence, indexed as checks find it.

One point per evidence URL (stable id from the URL), a dense cosine vector of title + snippet, and the
evidence metadata as payload: source (URL), domain, source_type, credibility, timestamp (indexed at),
access_count, language, plus title/snippet/published_at so a hit can be cited without refetching.
`access_count` is how often an item was returned as relevant; core/evidence/evidence_index.py adds a
small boost for it (+0.02 per use). Re-indexing a URL that is already stored keeps its point
(and its count) rather than resetting it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from storage.vectors import CollectionSpec, Point, Query, VectorStore

VECTOR = "text"
_NS = uuid.UUID("5f0c2d8e-41b7-4a57-9e0b-7c61d2a4f3aa")  # evidence URL -> stable point id


def point_id(url: str) -> str:
    return str(uuid.uuid5(_NS, url.strip()))


@dataclass(frozen=True)
class EvidencePoint:
    url: str
    vector: np.ndarray
    payload: dict[str, Any]


@dataclass(frozen=True)
class EvidenceHit:
    url: str
    score: float  # cosine similarity
    payload: dict[str, Any]


class EvidenceVectors:
    def __init__(self, store: VectorStore, name: str = "evidence"):
        self.store = store
        self.name = name

    async def ensure(self) -> None:
        await self.store.ensure_collection(self.name, CollectionSpec(dense={VECTOR: self.store.dim}, indexes={
            "domain": "keyword", "source_type": "keyword", "language": "keyword"}))

    async def add_new(self, points: Sequence[EvidencePoint]) -> int:
        """Store the points whose URL is not stored yet; returns how many were new."""
        if not points:
            return 0
        by_id = {point_id(p.url): p for p in points}
        existing = {r.id for r in await self.store.retrieve(self.name, list(by_id), payload=False)}
        fresh = [Point(pid, {VECTOR: np.asarray(p.vector, np.float32)}, {**p.payload, "source": p.url,
                                                                        "access_count": 0})
                 for pid, p in by_id.items() if pid not in existing]
        await self.store.upsert(self.name, fresh)
        return len(fresh)

    async def search(self, vector: np.ndarray, limit: int) -> list[EvidenceHit]:
        [points] = await self.store.query_batch(self.name, [Query(VECTOR, np.asarray(vector, np.float32), limit)])
        return [EvidenceHit(str(p.payload.get("source", "")), p.score, p.payload) for p in points]

    async def increment_access(self, urls: Sequence[str]) -> None:
        """+1 on `access_count` for each URL. Not atomic across concurrent checks: two at once may
        count one use (a ranking nudge, not a ledger)."""
        ids = list(dict.fromkeys(point_id(u) for u in urls))
        for rec in await self.store.retrieve(self.name, ids, payload=["access_count"]):
            count = int(rec.payload.get("access_count", 0)) + 1
            await self.store.set_payload(self.name, [rec.id], {"access_count": count})

    async def count(self) -> int:
        return await self.store.count(self.name)
