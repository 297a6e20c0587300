"""Vector collections behind one interface; the backend is chosen once, at the composition root.

    store = await open_vector_store(path=…, url=…, dim=384, multi_dim=384, use_dim=512)   # storage/vector_backends.py

- `EdgeVectorStore` (storage/edge_store.py): the embedded default, Qdrant Edge in-process (the Rust
  engine: HNSW, sparse vectors with the IDF modifier, payload indexes), one shard per collection
  under `<data>/qdrant-edge`.
- `RemoteVectorStore` (storage/qdrant_remote.py): a Qdrant server or cluster through qdrant-client's
  `AsyncQdrantClient` (`TIPLINE_QDRANT_URL`), no lock: every call is its own request.

Both implement the same small set of collection operations (create, upsert, delete, payload updates,
batched queries with payload filters, scroll, count, aliases); what the fact-check, evidence and
message collections need is written once, here and in storage/evidence_vectors.py and
storage/message_vectors.py, on top of them. Callers never ask which backend they got.
"""

from __future__ import annotations

import abc
import dataclasses
import contextlib
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

DENSE_FIELDS = ("claim", "title")  # the English model's vectors of the claim and the headline
MULTI_FIELD = "multi"              # the multilingual model's vector of claim + headline
USE_FIELD = "use"                  # the second multilingual model's (USE) vector of claim + headline: read, not searched
SPARSE_FIELD = "terms"
SEQ_FIELD = "seq"  # payload: a fact-check's place in ingest order
DOC_NORM_FIELD = "doc_norm"  # payload: |claim + title| of a fact-check's unit vectors (core/matching/features.py cos_doc)
GLOSS_LIST = "gloss"  # a list, not a field: the English gloss of a Cyrillic message searched in `claim`
TIE_SLACK = 8  # results asked beyond a candidate list's limit, to cut it between equal scores (search_factchecks)

IndexKind = Literal["keyword", "float", "integer", "datetime", "bool"]


class VectorStoreError(RuntimeError):
    """The vector store could not be opened or used; the message is meant for the user."""


class DataDirInUse(VectorStoreError):
    """Another process holds the embedded vector store (one process per data dir): `tipline ingest`
    then hands its files to the running bot instead (adapters/ingest_client.py)."""


class SparseTerms(Protocol):
    """Term ids and weights (core.encoders.sparse.SparseVector is one); storage needs nothing more of it."""

    @property
    def indices(self) -> Sequence[int]: ...

    @property
    def values(self) -> Sequence[float]: ...


@dataclass(frozen=True)
class Terms:
    """The sparse vectors storage hands back (read from a collection)."""

    indices: list[int]
    values: list[float]


# --- what a collection is and holds ---------------------------------------------------------------

@dataclass(frozen=True)
class CollectionSpec:
    """Named cosine vectors (name -> dimension), named sparse vectors (IDF modifier) and the payload
    fields to index (what filters run on). `unindexed`: dense vectors stored and read back but never
    searched, so no HNSW graph is built for them."""

    dense: Mapping[str, int]
    sparse: tuple[str, ...] = ()
    indexes: Mapping[str, IndexKind] = field(default_factory=dict)
    unindexed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Point:
    id: str
    dense: Mapping[str, np.ndarray]
    payload: dict[str, Any]
    sparse: Mapping[str, SparseTerms] = field(default_factory=dict)


@dataclass(frozen=True)
class Record:
    id: str
    payload: dict[str, Any]
    dense: dict[str, np.ndarray]
    sparse: dict[str, Terms]


@dataclass(frozen=True)
class Scored:
    id: str
    score: float
    payload: dict[str, Any]
    dense: dict[str, np.ndarray]


# --- filters on payload fields, the same on both backends -----------------------------------------

@dataclass(frozen=True)
class AnyOf:
    """The field equals one of `values`."""

    key: str
    values: tuple[str, ...]  # keyword fields only (chat, story, script): Qdrant's MatchAny takes no str/int mix


@dataclass(frozen=True)
class Between:
    """A numeric field within the given bounds (None: unbounded)."""

    key: str
    gte: float | None = None
    lte: float | None = None
    lt: float | None = None


@dataclass(frozen=True)
class IdIn:
    """The point is one of `ids`: a search restricted to them scores just those points (the engine's
    cosines of a fact-check's candidates, instead of reading their vectors back)."""

    ids: tuple[str, ...]


Condition = AnyOf | Between | IdIn


@dataclass(frozen=True)
class Where:
    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()


WithPayload = bool | Sequence[str]
WithVectors = bool | Sequence[str]


@dataclass(frozen=True)
class Query:
    """Nearest neighbours of `vector` (dense array or sparse terms) in the named vector `using`."""

    using: str
    vector: np.ndarray | SparseTerms
    limit: int
    where: Where | None = None
    min_score: float | None = None
    payload: WithPayload | None = None  # this query's payload fields; None: the batch's
    vectors: WithVectors | None = None  # this query's vectors; None: the batch's



# --- fact-check points and candidates ------------------------------------------------------------

@dataclass(frozen=True)
class FactCheckPoint:
    id: str
    claim_vector: np.ndarray
    title_vector: np.ndarray
    terms: SparseTerms
    payload: dict[str, Any]
    multi_vector: np.ndarray
    use_vector: np.ndarray


@dataclass
class Hit:
    """A fact-check found by the candidate search, with what the re-ranker reads of its stored vectors:
    their cosines with the query's (`cosines`, by `CANDIDATE_COSINES` key and MULTI_FIELD: 0 when the point
    was deleted in between, as a zero vector's cosine), |claim + title| (`doc_norm`) and its multilingual
    vector (`multi`: the candidates' similarity to each other)."""

    id: str
    payload: dict[str, Any]
    ranks: dict[str, int]  # 1-based rank in each candidate list that found it
    scores: dict[str, float]
    cosines: dict[str, float] = field(default_factory=dict)
    doc_norm: float = 0.0
    multi: np.ndarray | None = None


# The cosines the engine scores for a candidate: the stored vector each is read from and the query vector it
# is taken with. The multilingual one (key MULTI_FIELD) is taken from the e5 vectors read anyway.
CANDIDATE_COSINES = {"claim": ("claim", "dense"), "title": ("title", "dense"), USE_FIELD: (USE_FIELD, "use"),
                     "gloss_claim": ("claim", "gloss"), "gloss_title": ("title", "gloss")}


def doc_norms(claims: np.ndarray, titles: np.ndarray) -> np.ndarray:
    """|claim + title| of each row's two vectors as a cosine collection stores them (unit length)."""
    def unit(v: np.ndarray) -> np.ndarray:
        v = np.atleast_2d(np.asarray(v, dtype=np.float32))
        n = np.linalg.norm(v, axis=1, keepdims=True)
        return np.divide(v, n, out=v.copy(), where=n > 0)
    return np.linalg.norm(unit(claims) + unit(titles), axis=1)


class VectorStore(abc.ABC):
    """One interface over the embedded and the remote backend (cf. qdrant-client's QdrantBase).

    The abstract methods are the backend's; the fact-check collection's operations below are written
    once on top of them."""

    def __init__(self, dim: int, multi_dim: int | None = None, use_dim: int | None = None):
        self.dim = dim
        self.multi_dim = multi_dim or dim
        self.use_dim = use_dim or self.multi_dim
        self._seq = time.time_ns()  # fact-checks' ingest order, the tie-break of equal scores

    # --- what each backend implements ------------------------------------------------------------

    @abc.abstractmethod
    async def aclose(self) -> None: ...

    @abc.abstractmethod
    async def spec_of(self, name: str) -> CollectionSpec | None:
        """The collection's vectors (None when it does not exist); `indexes` may be empty."""

    @abc.abstractmethod
    async def create_collection(self, name: str, spec: CollectionSpec) -> None: ...

    @abc.abstractmethod
    async def create_index(self, name: str, field_name: str, kind: IndexKind) -> None:
        """Index a payload field (filters on it then use the index instead of scanning)."""

    @abc.abstractmethod
    async def upsert(self, name: str, points: Sequence[Point]) -> None: ...

    @abc.abstractmethod
    async def delete(self, name: str, ids: Sequence[str]) -> None: ...

    async def purge(self, name: str) -> None:
        """Rewrite `name`'s files so that deleted points leave no copy of their payloads behind (forgetting a
        person, storage/edge_store.py). Nothing here: a Qdrant server's files are the server's, and its
        vacuum optimizer drops deleted points on its own schedule (docs/deploy.md, Privacy)."""
        return None

    @abc.abstractmethod
    async def delete_where(self, name: str, where: Where) -> None: ...

    @abc.abstractmethod
    async def set_payload(self, name: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Set (merge) these payload fields on the points."""

    @abc.abstractmethod
    async def set_payloads(self, name: str, payloads: Mapping[str, dict[str, Any]]) -> None:
        """Set (merge) each point's own payload fields, in one write."""

    @abc.abstractmethod
    async def set_payload_where(self, name: str, where: Where, payload: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    async def retrieve(self, name: str, ids: Sequence[str], *, payload: WithPayload = True,
                       vectors: WithVectors = False) -> list[Record]:
        """The points that exist among `ids` (in no particular order)."""

    @abc.abstractmethod
    async def query_batch(self, name: str, queries: Sequence[Query], *, payload: WithPayload = True,
                          vectors: WithVectors = False) -> list[list[Scored]]:
        """One ranked list per query, best first, in one call to the engine."""

    @abc.abstractmethod
    def scroll(self, name: str, where: Where | None = None, *, payload: WithPayload = True,
               vectors: WithVectors = False, batch: int = 1024) -> AsyncIterator[list[Record]]:
        """Every point (matching `where`), a batch at a time."""

    @abc.abstractmethod
    async def count(self, name: str, where: Where | None = None) -> int: ...

    @abc.abstractmethod
    async def collection_names(self) -> list[str]:
        """Physical collections (aliases not included)."""

    @abc.abstractmethod
    async def aliases(self) -> dict[str, str]:
        """alias -> the collection it points at."""

    @abc.abstractmethod
    async def point_alias(self, alias: str, target: str) -> None:
        """Point `alias` at `target` atomically: searches see the old or the new collection."""

    @abc.abstractmethod
    async def delete_collection(self, name: str) -> None: ...

    @abc.abstractmethod
    async def settle(self) -> None:
        """Wait until index building started by earlier writes is done (benchmarks, tests, moving a
        data dir); searches never need to."""

    @contextlib.asynccontextmanager
    async def builds_held(self) -> AsyncIterator[None]:
        """Inside, writes start no index build (a bulk fill, followed by `settle()`, which builds once).
        A server builds its indexes itself: nothing to hold there."""
        yield

    # --- collections and aliases, written once ----------------------------------------------------

    async def ensure_collection(self, name: str, spec: CollectionSpec) -> None:
        """Create `name` unless it exists; an existing one (e.g. moved from an older data dir) gets the
        payload indexes it lacks."""
        have = await self.spec_of(name)
        if have is None:
            await self.create_collection(name, spec)
            return
        for fld, kind in spec.indexes.items():
            if have.indexes.get(fld) != kind:
                await self.create_index(name, fld, kind)

    async def physical_name(self, name: str) -> str:
        """The collection an alias points at, or `name` itself when it is a plain collection."""
        return (await self.aliases()).get(name, name)

    async def copy_points(self, source: str, target: str, batch: int = 512) -> int:
        """Copy every point (vectors and payload) from `source` into `target` without re-embedding."""
        n = 0
        async for records in self.scroll(source, payload=True, vectors=True, batch=batch):
            await self.upsert(target, [Point(r.id, r.dense, r.payload, r.sparse) for r in records])
            n += len(records)
        return n

    async def swap_alias(self, alias: str, target: str) -> str | None:
        """Point `alias` at `target` and drop what it pointed at before; returns that collection's name.

        A data dir from before aliases has a plain collection under the alias name: it is deleted and
        the alias created right after (a moment without the collection, once)."""
        old = (await self.aliases()).get(alias)
        if old is None and alias in await self.collection_names():
            await self.delete_collection(alias)
        await self.point_alias(alias, target)
        if old is not None and old != target:
            await self.delete_collection(old)
        return old

    async def drop_orphans(self, alias: str) -> list[str]:
        """Delete collections built for `alias` (named `alias__…`) that it does not point at: what an
        interrupted rebuild left behind."""
        current = (await self.aliases()).get(alias)
        gone = [c for c in await self.collection_names() if c.startswith(alias + "__") and c != current]
        for name in gone:
            await self.delete_collection(name)
        return gone

    # --- fact-checks ---------------------------------------------------------------------------

    def factchecks_spec(self) -> CollectionSpec:
        return CollectionSpec(
            dense={**{f: self.dim for f in DENSE_FIELDS}, MULTI_FIELD: self.multi_dim, USE_FIELD: self.use_dim},
            sparse=(SPARSE_FIELD,), unindexed=(USE_FIELD,),
            indexes={"verdict": "keyword", "publisher": "keyword", "language": "keyword", "published_at": "datetime"})

    async def factchecks_current(self, name: str) -> bool:
        """False for a collection written by an earlier version (other models or fewer vectors): its
        fact-checks must be re-embedded into a new collection (core/matching/knowledge_base.py does, aside)."""
        spec = await self.spec_of(name)
        if spec is None:
            return True
        want = self.factchecks_spec()
        return all(spec.dense.get(f) == d for f, d in want.dense.items()) and SPARSE_FIELD in spec.sparse

    async def ensure_factchecks(self, name: str) -> None:
        await self.ensure_collection(name, self.factchecks_spec())

    async def upsert_factchecks(self, name: str, points: Sequence[FactCheckPoint]) -> None:
        if not points:
            return
        out = []
        norms = doc_norms(np.array([p.claim_vector for p in points]), np.array([p.title_vector for p in points]))
        for p, norm in zip(points, norms):
            self._seq += 1
            out.append(Point(p.id, {"claim": p.claim_vector, "title": p.title_vector, MULTI_FIELD: p.multi_vector,
                                    USE_FIELD: p.use_vector},
                             {**p.payload, SEQ_FIELD: self._seq, DOC_NORM_FIELD: float(norm)},
                             {SPARSE_FIELD: p.terms}))
        await self.upsert(name, out)

    async def fill_doc_norms(self, name: str, batch: int = 1024) -> int:
        """Store `doc_norm` on the fact-checks of a collection written before it was stored (the matcher
        works it out from their vectors until then); returns how many were filled."""
        filled = 0
        async for records in self.scroll(name, payload=[DOC_NORM_FIELD], vectors=list(DENSE_FIELDS), batch=batch):
            todo = [r for r in records if r.payload.get(DOC_NORM_FIELD) is None and "claim" in r.dense and "title" in r.dense]
            if todo:
                norms = doc_norms(np.array([r.dense["claim"] for r in todo]), np.array([r.dense["title"] for r in todo]))
                await self.set_payloads(name, {r.id: {DOC_NORM_FIELD: float(n)} for r, n in zip(todo, norms)})
            filled += len(todo)
        return filled

    async def search_factchecks(self, name: str, dense: np.ndarray, sparse: SparseTerms,
                                limit: int, multi: np.ndarray | None = None,
                                gloss: np.ndarray | None = None, use: np.ndarray | None = None) -> list[Hit]:
        """Hybrid candidates: the union of dense search on claim and title (English model), on claim +
        title (multilingual model, when `multi` is given) and sparse term search, each candidate
        carrying its rank and score in every list that found it and what the re-ranker reads of its
        stored vectors (`Hit`): their cosines with `dense`, `multi`, `use` (USE's: features only, no
        list searches it) and `gloss`. `gloss`, the English model's vector of a Cyrillic message's
        word-by-word English gloss (core/matching/gloss.py), is a fifth list over the claim vectors: Russian dev
        candidate recall 0.934 -> 0.959 (docs/decisions/2026-11-24-matching-measurements.md).

        The lists go to the engine as one batch, not as one fused query: the re-ranker reads each
        candidate's rank in each list (core/matching/features.py), which fusion would throw away."""
        # A few more than `limit` from the engine, so that the cut falls between equal scores in our order:
        # which of a tie group at the cut the engine returns changed from one process to the next (a
        # Russian dev tweet's sparse list, ranks 38-40), and the candidates' similarity to each other with it.
        asked = limit + TIE_SLACK
        lists: dict[str, Query] = {f: Query(f, dense, asked) for f in DENSE_FIELDS}
        if multi is not None:
            lists[MULTI_FIELD] = Query(MULTI_FIELD, multi, asked)
        if gloss is not None:
            lists[GLOSS_LIST] = Query(DENSE_FIELDS[0], gloss, asked)
        if len(sparse.indices):
            lists[SPARSE_FIELD] = Query(SPARSE_FIELD, sparse, asked)
        # The lists read only the ingest order (for ties); each candidate's payload comes once, with its
        # cosines (`_read_candidates`): the engine reads payloads at ~20 us a point, and a candidate is in
        # ~2 lists (the four lists' engine time at 100k claims 9.0 ms with every field, 5.0 with `seq`).
        results = await self.query_batch(name, list(lists.values()), payload=[SEQ_FIELD], vectors=False)
        hits: dict[str, Hit] = {}
        for list_name, points in zip(lists, results):
            # Equal scores (the same claim fact-checked twice, short claims sharing their few terms) go
            # to the earlier-ingested fact-check, as the numpy index this replaced did: the engine's
            # own order of ties cost 0.054 MAP@5 on CLEF dev (0.9232 -> 0.8695, recall@5 unchanged).
            points = sorted(points, key=lambda p: (-float(f"{p.score:.6g}"), p.payload.get(SEQ_FIELD, math.inf)))[:limit]
            for rank, p in enumerate(points, start=1):
                hit = hits.get(p.id)
                if hit is None:
                    hit = hits[p.id] = Hit(id=p.id, payload={}, ranks={}, scores={})
                hit.ranks[list_name] = rank
                hit.scores[list_name] = p.score
        if hits:
            await self._read_candidates(name, hits, {"dense": dense, "multi": multi, "use": use, "gloss": gloss})
        return [h for h in hits.values() if h.payload]  # none: deleted since the lists were searched

    async def _read_candidates(self, name: str, hits: dict[str, Hit], query: dict[str, np.ndarray | None]) -> None:
        """Fill in each candidate's payload and what the re-ranker reads of its stored vectors. The engine
        scores them (one search per cosine, restricted to the candidates' ids; the first also reads the
        payloads and the multilingual vectors) rather than handing every vector over: Edge gives each
        vector to Python as a list of floats, and reading ~115 candidates' four vectors took 17.2 ms p50
        against 2.1 ms for six cosines (100k claims; docs/decisions/2026-11-29-notes-from-code.md).
        The multilingual vectors are read for the candidates' similarity to each other (their cosine
        with the message is taken here)."""
        ids = tuple(hits)
        only = Where(must=(IdIn(ids),))
        multi = query["multi"]
        scoring = {key: Query(field_, vec, len(ids), only) for key, (field_, which) in CANDIDATE_COSINES.items()
                   if (vec := query[which]) is not None}
        scoring["claim"] = dataclasses.replace(scoring["claim"], payload=True,
                                               vectors=[MULTI_FIELD] if multi is not None else None)
        for key, points in zip(scoring, await self.query_batch(name, list(scoring.values()), payload=False,
                                                               vectors=False)):
            for p in points:
                hit = hits[p.id]
                hit.cosines[key] = p.score
                if key == "claim":
                    hit.payload = p.payload
                    hit.multi = p.dense.get(MULTI_FIELD)
                    if hit.multi is not None and multi is not None:
                        hit.cosines[MULTI_FIELD] = float(hit.multi @ multi)
        lacking = []
        for hit in hits.values():
            stored = hit.payload.get(DOC_NORM_FIELD)
            if stored is None:
                lacking.append(hit.id)
            else:
                hit.doc_norm = float(stored)
        if lacking:
            # A collection written before doc_norm was stored (KnowledgeBase.open fills it in once): from
            # the two vectors, as at ingest.
            records = [r for r in await self.retrieve(name, lacking, payload=False, vectors=list(DENSE_FIELDS))
                       if "claim" in r.dense and "title" in r.dense]
            if records:
                norms = doc_norms(np.array([r.dense["claim"] for r in records]),
                                  np.array([r.dense["title"] for r in records]))
                for r, norm in zip(records, norms):
                    hits[r.id].doc_norm = float(norm)

