"""The remote backend: a Qdrant server or cluster through qdrant-client's `AsyncQdrantClient`.

No lock: each call is its own request, so one slow search never holds up another (the old store sent
every call through one `threading.Lock`). The same class runs over qdrant-client's own local mode
(`AsyncQdrantClient(":memory:")`), which speaks the same API: the congruence tests use it as the
second backend, since no Qdrant server can be installed here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from storage.vectors import (
    AnyOf,
    Condition,
    IdIn,
    CollectionSpec,
    IndexKind,
    Point,
    Query,
    Record,
    Scored,
    Terms,
    VectorStore,
    VectorStoreError,
    Where,
    WithPayload,
    WithVectors,
)

_INDEX_KINDS: dict[IndexKind, models.PayloadSchemaType] = {
    "keyword": models.PayloadSchemaType.KEYWORD, "float": models.PayloadSchemaType.FLOAT,
    "integer": models.PayloadSchemaType.INTEGER, "datetime": models.PayloadSchemaType.DATETIME,
    "bool": models.PayloadSchemaType.BOOL}


def _filter(where: Where | None) -> models.Filter | None:
    if where is None or not (where.must or where.must_not):
        return None

    def cond(c: Condition) -> models.FieldCondition | models.HasIdCondition:
        if isinstance(c, IdIn):
            return models.HasIdCondition(has_id=list(c.ids))
        if isinstance(c, AnyOf):
            values = list(c.values)
            return models.FieldCondition(key=c.key, match=models.MatchValue(value=values[0]) if len(values) == 1
                                         else models.MatchAny(any=values))
        return models.FieldCondition(key=c.key, range=models.Range(gte=c.gte, lte=c.lte, lt=c.lt))
    return models.Filter(must=[cond(c) for c in where.must] or None,
                         must_not=[cond(c) for c in where.must_not] or None)


def _vector(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.astype(np.float32, copy=False).tolist()
    return models.SparseVector(indices=list(v.indices), values=list(v.values))


def _split(vector: Any) -> tuple[dict[str, np.ndarray], dict[str, Terms]]:
    dense: dict[str, np.ndarray] = {}
    sparse: dict[str, Terms] = {}
    if isinstance(vector, dict):
        for k, v in vector.items():
            if isinstance(v, models.SparseVector):
                sparse[k] = Terms(list(v.indices), list(v.values))
            else:
                dense[k] = np.asarray(v, dtype=np.float32)
    return dense, sparse


def _sel(x: WithPayload) -> Any:
    return x if isinstance(x, bool) else list(x)


class RemoteVectorStore(VectorStore):
    def __init__(self, client: AsyncQdrantClient, dim: int, multi_dim: int | None = None, *,
                 payload_indexes: bool = True, use_dim: int | None = None):
        super().__init__(dim, multi_dim, use_dim)
        self._client = client
        # qdrant-client's local mode ignores payload indexes (and warns); a server builds them.
        self._payload_indexes = payload_indexes

    @classmethod
    async def connect(cls, url: str, *, api_key: str | None, dim: int,
                      multi_dim: int | None = None, use_dim: int | None = None) -> RemoteVectorStore:
        client = AsyncQdrantClient(url=url, api_key=api_key, timeout=30)
        try:
            await client.get_collections()  # fail now, with a clear message, if the server is unreachable
        except Exception as exc:  # connection errors come in many types from httpx/grpc
            await client.close()
            raise VectorStoreError(f"cannot reach the Qdrant server at {url}: {exc}") from exc
        return cls(client, dim, multi_dim, use_dim=use_dim)

    async def aclose(self) -> None:
        await self._client.close()

    async def settle(self) -> None:
        return None  # the server builds its indexes itself and answers searches meanwhile

    # --- collections -----------------------------------------------------------------------------

    async def spec_of(self, name: str) -> CollectionSpec | None:
        name = (await self.aliases()).get(name, name)
        if not await self._client.collection_exists(name):
            return None
        info = await self._client.get_collection(name)
        params = info.config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        kinds = {v: k for k, v in _INDEX_KINDS.items()}
        return CollectionSpec(dense={k: v.size for k, v in vectors.items()},
                              unindexed=tuple(k for k, v in vectors.items() if v.hnsw_config is not None
                                              and v.hnsw_config.m == 0),
                              sparse=tuple(params.sparse_vectors or {}),
                              indexes={f: kinds[s.data_type] for f, s in (info.payload_schema or {}).items()
                                       if s.data_type in kinds})

    async def create_collection(self, name: str, spec: CollectionSpec) -> None:
        await self._client.create_collection(
            name,
            # A vector nothing searches gets no HNSW graph (m=0), as on Qdrant Edge.
            vectors_config={f: models.VectorParams(size=d, distance=models.Distance.COSINE,
                                                   hnsw_config=models.HnswConfigDiff(m=0) if f in spec.unindexed else None)
                            for f, d in spec.dense.items()},
            sparse_vectors_config={f: models.SparseVectorParams(modifier=models.Modifier.IDF) for f in spec.sparse})
        if self._payload_indexes:
            for fld, kind in spec.indexes.items():
                await self._client.create_payload_index(name, field_name=fld, field_schema=_INDEX_KINDS[kind])

    async def create_index(self, name: str, field_name: str, kind: IndexKind) -> None:
        if self._payload_indexes:
            await self._client.create_payload_index(name, field_name=field_name, field_schema=_INDEX_KINDS[kind])

    async def collection_names(self) -> list[str]:
        return sorted(c.name for c in (await self._client.get_collections()).collections)

    async def aliases(self) -> dict[str, str]:
        return {a.alias_name: a.collection_name for a in (await self._client.get_aliases()).aliases}

    async def point_alias(self, alias: str, target: str) -> None:
        ops: list[models.AliasOperations] = []
        if alias in await self.aliases():
            ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
        ops.append(models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=target,
                                                                                alias_name=alias)))
        await self._client.update_collection_aliases(change_aliases_operations=ops)  # one atomic switch

    async def delete_collection(self, name: str) -> None:
        await self._client.delete_collection(name)

    # --- points ----------------------------------------------------------------------------------

    async def upsert(self, name: str, points: Sequence[Point]) -> None:
        if points:
            await self._client.upsert(name, wait=True, points=[
                models.PointStruct(id=p.id, payload=p.payload,
                                   vector={**{k: _vector(v) for k, v in p.dense.items()},
                                           **{k: _vector(v) for k, v in p.sparse.items()}})
                for p in points])

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        for i in range(0, len(ids), 1000):
            await self._client.delete(name, points_selector=models.PointIdsList(points=list(ids[i:i + 1000])),
                                      wait=True)

    async def delete_where(self, name: str, where: Where) -> None:
        flt = _filter(where)
        if flt is None:
            raise ValueError("delete_where needs a condition")
        await self._client.delete(name, points_selector=models.FilterSelector(filter=flt), wait=True)

    async def set_payload(self, name: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        if ids:
            await self._client.set_payload(name, payload=payload, points=list(ids), wait=True)

    async def set_payloads(self, name: str, payloads: Mapping[str, dict[str, Any]]) -> None:
        if payloads:
            await self._client.batch_update_points(name, [
                models.SetPayloadOperation(set_payload=models.SetPayload(payload=p, points=[pid]))
                for pid, p in payloads.items()], wait=True)

    async def set_payload_where(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        flt = _filter(where)
        if flt is None:
            raise ValueError("set_payload_where needs a condition")
        await self._client.set_payload(name, payload=payload, points=flt, wait=True)

    async def retrieve(self, name: str, ids: Sequence[str], *, payload: WithPayload = True,
                       vectors: WithVectors = False) -> list[Record]:
        if not ids:
            return []
        out = []
        for r in await self._client.retrieve(name, ids=list(ids), with_payload=_sel(payload),
                                             with_vectors=_sel(vectors)):
            dense, sparse = _split(r.vector)
            out.append(Record(str(r.id), dict(r.payload or {}), dense, sparse))
        return out

    async def query_batch(self, name: str, queries: Sequence[Query], *, payload: WithPayload = True,
                          vectors: WithVectors = False) -> list[list[Scored]]:
        if not queries:
            return []
        responses = await self._client.query_batch_points(name, requests=[
            models.QueryRequest(query=_vector(q.vector), using=q.using, limit=q.limit, filter=_filter(q.where),
                                score_threshold=q.min_score, with_payload=_sel(payload if q.payload is None else q.payload),
                                with_vector=_sel(vectors if q.vectors is None else q.vectors))
            for q in queries])
        out = []
        for response in responses:
            row = []
            for p in response.points:
                dense, _ = _split(p.vector)
                row.append(Scored(str(p.id), float(p.score), dict(p.payload or {}), dense))
            out.append(row)
        return out

    async def scroll(self, name: str, where: Where | None = None, *, payload: WithPayload = True,
                     vectors: WithVectors = False, batch: int = 1024) -> AsyncIterator[list[Record]]:
        offset = None
        flt = _filter(where)
        while True:
            records, offset = await self._client.scroll(name, scroll_filter=flt, limit=batch, offset=offset,
                                                        with_payload=_sel(payload), with_vectors=_sel(vectors))
            out = []
            for r in records:
                dense, sparse = _split(r.vector)
                out.append(Record(str(r.id), dict(r.payload or {}), dense, sparse))
            if out:
                yield out
            if offset is None:
                return

    async def count(self, name: str, where: Where | None = None) -> int:
        return (await self._client.count(name, count_filter=_filter(where), exact=True)).count
