"""The Qdrant `evidence` collection: web/news/page evidence, indexed as checks find it.

One point per evidence URL (stable id from the URL), a dense cosine vector of title + snippet, and the
seed-000 metadata as payload: source (URL), domain, source_type, credibility, timestamp (indexed at),
access_count, language, plus title/snippet/published_at so a hit can be cited without refetching.
`access_count` is how often an item was returned as relevant; core/evidence/evidence_index.py adds a
small boost for it (seed 000: +0.02 per use). Re-indexing a URL that is already stored keeps its point
(and its count) rather than resetting it.

It goes through the VectorStore's client and lock (storage/vectors.py): embedded Qdrant is not
thread-safe, and local mode must run off the event loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import models

from storage.vectors import VectorStore

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

    async def _run(self, fn, *args, **kwargs):
        return await self.store._run(fn, *args, **kwargs)

    @property
    def _client(self):
        return self.store._client

    async def ensure(self) -> None:
        await self.store.ensure_dense_collection(self.name, VECTOR, {
            "domain": models.PayloadSchemaType.KEYWORD, "source_type": models.PayloadSchemaType.KEYWORD,
            "language": models.PayloadSchemaType.KEYWORD})

    async def add_new(self, points: Sequence[EvidencePoint]) -> int:
        """Store the points whose URL is not stored yet; returns how many were new."""
        if not points:
            return 0
        by_id = {point_id(p.url): p for p in points}

        def add() -> int:
            existing = {str(r.id) for r in self._client.retrieve(self.name, ids=list(by_id), with_payload=False)}
            fresh = [models.PointStruct(id=pid, vector={VECTOR: np.asarray(p.vector, np.float32).tolist()},
                                        payload={**p.payload, "source": p.url, "access_count": 0})
                     for pid, p in by_id.items() if pid not in existing]
            if fresh:
                self._client.upsert(self.name, points=fresh, wait=True)
            return len(fresh)
        return await self._run(add)

    async def search(self, vector: np.ndarray, limit: int) -> list[EvidenceHit]:
        def search() -> list[EvidenceHit]:
            res = self._client.query_points(self.name, query=np.asarray(vector, np.float32).tolist(), using=VECTOR,
                                            limit=limit, with_payload=True)
            return [EvidenceHit(str((p.payload or {}).get("source", "")), float(p.score), dict(p.payload or {}))
                    for p in res.points]
        return await self._run(search)

    async def increment_access(self, urls: Sequence[str]) -> None:
        """+1 on `access_count` for each URL (read-modify-write under the store's lock)."""
        ids = list(dict.fromkeys(point_id(u) for u in urls))
        if not ids:
            return

        def bump() -> None:
            for rec in self._client.retrieve(self.name, ids=ids, with_payload=["access_count"]):
                count = int((rec.payload or {}).get("access_count", 0)) + 1
                self._client.set_payload(self.name, payload={"access_count": count}, points=[rec.id], wait=True)
        await self._run(bump)

    async def count(self) -> int:
        return (await self._run(self._client.count, self.name, exact=True)).count
