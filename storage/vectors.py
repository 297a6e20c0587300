"""Qdrant collections through qdrant-client.

Embedded local mode under `<data>/qdrant` by default, or a Qdrant server/cluster by URL, with the
same code. Local mode is synchronous, CPU-bound and not thread-safe, so every call runs in a worker
thread under one lock; with a server the lock costs nothing that matters.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from core.sparse import SparseVector
from storage.local_index import LocalHybridIndex

DENSE_FIELDS = ("claim", "title")  # the English model's vectors of the claim and the headline
MULTI_FIELD = "multi"              # the multilingual model's vector of claim + headline
SPARSE_FIELD = "terms"


class VectorStoreError(RuntimeError):
    """Qdrant could not be opened or used; the message is meant for the user."""


@dataclass(frozen=True)
class FactCheckPoint:
    id: str
    claim_vector: np.ndarray
    title_vector: np.ndarray
    terms: SparseVector
    payload: dict[str, Any]
    multi_vector: np.ndarray


@dataclass
class Hit:
    id: str
    payload: dict[str, Any]
    vectors: dict[str, np.ndarray]
    ranks: dict[str, int]  # 1-based rank in each candidate list that found it
    scores: dict[str, float]


def _sparse(v: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=v.indices, values=v.values)


class VectorStore:
    def __init__(self, client: QdrantClient, dim: int, local: bool, multi_dim: int | None = None):
        self._client = client
        self.dim = dim
        self.multi_dim = multi_dim or dim
        self.local = local
        self._lock = threading.Lock()
        # Local mode only: collection name -> in-process index (see local_index.py for why).
        self._indexes: dict[str, LocalHybridIndex] = {}

    @classmethod
    def open(cls, *, dim: int, path: Path | None = None, url: str | None = None,
             api_key: str | None = None, multi_dim: int | None = None) -> "VectorStore":
        try:
            if url:
                client = QdrantClient(url=url, api_key=api_key, timeout=30)
                client.get_collections()  # fail now, with a clear message, if the server is unreachable
            else:
                assert path is not None
                path.mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=str(path))
        except RuntimeError as exc:
            if "already accessed" in str(exc):
                raise VectorStoreError(
                    f"another tipline process is using {path}; embedded Qdrant allows one process per data "
                    "dir (stop the other one, use another TIPLINE_DATA_DIR, or run a Qdrant server and set "
                    "TIPLINE_QDRANT_URL)") from exc
            raise VectorStoreError(f"cannot open Qdrant: {exc}") from exc
        except Exception as exc:  # connection errors come in many types from httpx/grpc
            raise VectorStoreError(f"cannot open Qdrant at {url or path}: {exc}") from exc
        return cls(client, dim, local=not url, multi_dim=multi_dim)

    async def _run(self, fn, *args, **kwargs):
        def call():
            with self._lock:
                return fn(*args, **kwargs)
        return await asyncio.to_thread(call)

    def close(self) -> None:
        with self._lock:
            self._client.close()

    # --- factchecks ---------------------------------------------------------------------------

    def _dims(self) -> dict[str, int]:
        return {**{f: self.dim for f in DENSE_FIELDS}, MULTI_FIELD: self.multi_dim}

    def _factchecks_current_sync(self, name: str) -> bool:
        """Whether `name` holds every vector this version writes, at the models' sizes."""
        vectors = self._client.get_collection(name).config.params.vectors
        if not isinstance(vectors, dict):
            return False
        return all(f in vectors and vectors[f].size == d for f, d in self._dims().items())

    async def factchecks_current(self, name: str) -> bool:
        """False for a collection written by an earlier version (other models or fewer vectors): its
        fact-checks must be re-embedded into a new collection (core/knowledge.py does, aside)."""
        def check() -> bool:
            return not self._client.collection_exists(name) or self._factchecks_current_sync(name)
        return await self._run(check)

    def _ensure_factchecks_sync(self, name: str) -> None:
        if self._client.collection_exists(name):
            return
        self._client.create_collection(
            name,
            vectors_config={f: models.VectorParams(size=d, distance=models.Distance.COSINE)
                            for f, d in self._dims().items()},
            sparse_vectors_config={SPARSE_FIELD: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        if self.local:
            return  # local mode ignores payload indexes (and warns); filters scan in memory anyway
        for field, schema in (("verdict", models.PayloadSchemaType.KEYWORD),
                              ("publisher", models.PayloadSchemaType.KEYWORD),
                              ("language", models.PayloadSchemaType.KEYWORD),
                              ("published_at", models.PayloadSchemaType.DATETIME)):
            self._client.create_payload_index(name, field_name=field, field_schema=schema)

    def _tune_local_storage(self, name: str) -> None:
        """Make embedded Qdrant's per-point commits cheap.

        Local mode commits every point in its own SQLite transaction with the default rollback
        journal, i.e. one fsync per point: 63 points/s here. WAL with synchronous=NORMAL keeps the
        data safe across a process crash (not an OS crash mid-write) and measured 1,400 points/s.
        This reaches into qdrant-client internals, so it is skipped if they change shape.
        """
        local = getattr(self._client, "_client", None)
        name = getattr(local, "aliases", {}).get(name, name)
        collection = getattr(local, "collections", {}).get(name)
        conn = getattr(getattr(collection, "storage", None), "storage", None)
        if conn is not None and hasattr(conn, "execute"):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")

    def _load_local_index(self, name: str) -> None:
        dims = self._dims()
        index = LocalHybridIndex(dims)
        offset = None
        while True:
            points, offset = self._client.scroll(name, limit=1024, offset=offset, with_payload=True,
                                                 with_vectors=True)
            for p in points:
                vec = p.vector or {}
                sp = vec.get(SPARSE_FIELD)
                # An old collection (no multilingual vector) is loaded only to be re-embedded.
                index.upsert(str(p.id), {f: np.asarray(vec[f], dtype=np.float32) if f in vec
                                         else np.zeros(d, dtype=np.float32) for f, d in dims.items()},
                             SparseVector(list(sp.indices), list(sp.values)) if sp else SparseVector([], []),
                             p.payload or {})
            if offset is None:
                break
        self._indexes[name] = index

    async def ensure_factchecks(self, name: str) -> None:
        def ensure():
            self._ensure_factchecks_sync(name)
            if self.local:
                self._tune_local_storage(name)
                self._load_local_index(name)
        await self._run(ensure)

    async def upsert_factchecks(self, name: str, points: Sequence[FactCheckPoint]) -> None:
        structs = [
            models.PointStruct(
                id=p.id,
                vector={"claim": p.claim_vector.tolist(), "title": p.title_vector.tolist(),
                        MULTI_FIELD: p.multi_vector.tolist(), SPARSE_FIELD: _sparse(p.terms)},
                payload=p.payload,
            )
            for p in points
        ]
        def upsert():
            self._client.upsert(name, points=structs, wait=True)
            index = self._indexes.get(name)
            if index is not None:
                for p in points:
                    index.upsert(p.id, {"claim": p.claim_vector, "title": p.title_vector,
                                        MULTI_FIELD: p.multi_vector}, p.terms, p.payload)
        await self._run(upsert)

    # --- single-vector collections (evidence, tracked messages) ---------------------------------

    async def ensure_dense_collection(self, name: str, vector: str,
                                      indexes: dict[str, models.PayloadSchemaType]) -> None:
        """Create `name` with one cosine vector `vector` unless it exists, with payload `indexes` on a
        server (local mode ignores them), and cheap per-point commits in local mode."""
        def ensure() -> None:
            if not self._client.collection_exists(name):
                self._client.create_collection(name, vectors_config={
                    vector: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)})
                if not self.local:
                    for field, schema in indexes.items():
                        self._client.create_payload_index(name, field_name=field, field_schema=schema)
            if self.local:
                self._tune_local_storage(name)
        await self._run(ensure)

    # --- atomic rebuilds: a fresh physical collection behind an alias ---------------------------

    def _aliases_sync(self) -> dict[str, str]:
        return {a.alias_name: a.collection_name for a in self._client.get_aliases().aliases}

    async def physical_name(self, name: str) -> str:
        """The collection an alias points at, or `name` itself when it is a plain collection."""
        return (await self._run(self._aliases_sync)).get(name, name)

    async def copy_points(self, source: str, target: str, batch: int = 512) -> int:
        """Copy every point (vectors and payload) from `source` into `target` without re-embedding."""
        def copy() -> int:
            n, offset = 0, None
            while True:
                points, offset = self._client.scroll(source, limit=batch, offset=offset, with_payload=True,
                                                     with_vectors=True)
                if points:
                    self._client.upsert(target, wait=True, points=[
                        models.PointStruct(id=p.id, vector=p.vector or {}, payload=p.payload or {})
                        for p in points])
                    n += len(points)
                if offset is None:
                    break
            if self.local:
                self._load_local_index(target)
            return n
        return await self._run(copy)

    async def swap_alias(self, alias: str, target: str) -> str | None:
        """Point `alias` at `target` and drop what it pointed at before; returns that collection's name.

        On a server the alias switch is one `update_collection_aliases` call, so searches see either the
        old or the new collection, never a half-built one. A data dir from before aliases has a plain
        collection under the alias name: it is deleted and the alias created right after (a moment
        without the collection, once, on the first refresh). In local mode the whole swap runs under
        the store's lock, so no search runs in between.
        """
        def swap() -> str | None:
            aliases = self._aliases_sync()
            old = aliases.get(alias)
            ops: list[models.AliasOperations] = []
            if old is not None:
                ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
            elif alias in {c.name for c in self._client.get_collections().collections}:
                self._client.delete_collection(alias)
                old = None
            ops.append(models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=target, alias_name=alias)))
            self._client.update_collection_aliases(change_aliases_operations=ops)
            if old is not None and old != target:
                self._client.delete_collection(old)
                self._indexes.pop(old, None)
            if target in self._indexes:
                self._indexes[alias] = self._indexes.pop(target)
            return old
        return await self._run(swap)

    async def collection_names(self) -> list[str]:
        return await self._run(lambda: [c.name for c in self._client.get_collections().collections])

    async def drop_orphans(self, alias: str) -> list[str]:
        """Delete collections built for `alias` (named `alias__…`) that it does not point at: what an
        interrupted rebuild left behind."""
        def drop() -> list[str]:
            current = self._aliases_sync().get(alias)
            gone = [c.name for c in self._client.get_collections().collections
                    if c.name.startswith(alias + "__") and c.name != current]
            for name in gone:
                self._client.delete_collection(name)
                self._indexes.pop(name, None)
            return gone
        return await self._run(drop)

    async def count(self, name: str) -> int:
        return (await self._run(self._client.count, name, exact=True)).count

    async def delete_collection(self, name: str) -> None:
        self._indexes.pop(name, None)
        await self._run(self._client.delete_collection, name)

    def _search_local(self, index: LocalHybridIndex, queries: dict[str, np.ndarray], sparse: SparseVector,
                      limit: int) -> list[Hit]:
        hits: dict[int, Hit] = {}
        for list_name, rows in index.search(queries, sparse, limit).items():
            for rank, (row, score) in enumerate(rows, start=1):
                hit = hits.get(row)
                if hit is None:
                    hit = hits[row] = Hit(id=index.id_of(row), payload=index.payload_of(row),
                                          vectors=index.vectors_of(row), ranks={}, scores={})
                hit.ranks[list_name] = rank
                hit.scores[list_name] = score
        return list(hits.values())

    def _search_sync(self, name: str, dense: np.ndarray, sparse: SparseVector, limit: int,
                     multi: np.ndarray | None) -> list[Hit]:
        queries = {f: dense for f in DENSE_FIELDS}
        if multi is not None:
            queries[MULTI_FIELD] = multi
        index = self._indexes.get(name)
        if index is not None:
            return self._search_local(index, queries, sparse, limit)
        lists = {f: models.QueryRequest(query=np.asarray(q).tolist(), using=f, limit=limit)
                 for f, q in queries.items()}
        if sparse.indices:
            lists[SPARSE_FIELD] = models.QueryRequest(query=_sparse(sparse), using=SPARSE_FIELD, limit=limit)
        for req in lists.values():
            req.with_payload = True
            req.with_vector = [*DENSE_FIELDS, MULTI_FIELD]
        responses = self._client.query_batch_points(name, requests=list(lists.values()))
        hits: dict[str, Hit] = {}
        for list_name, response in zip(lists, responses):
            for rank, p in enumerate(response.points, start=1):
                pid = str(p.id)
                hit = hits.get(pid)
                if hit is None:
                    hit = hits[pid] = Hit(id=pid, payload=p.payload or {}, ranks={}, scores={}, vectors={
                        k: np.asarray(v, dtype=np.float32) for k, v in (p.vector or {}).items()})
                hit.ranks[list_name] = rank
                hit.scores[list_name] = float(p.score)
        return list(hits.values())

    async def search_factchecks(self, name: str, dense: np.ndarray, sparse: SparseVector,
                                limit: int, multi: np.ndarray | None = None) -> list[Hit]:
        """Hybrid candidates: the union of dense search on claim and title (English model), on claim +
        title (multilingual model, when `multi` is given) and sparse term search, each candidate
        carrying its rank and score in every list that found it (the re-ranker's input)."""
        return await self._run(self._search_sync, name, dense, sparse, limit, multi)
