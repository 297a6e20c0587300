"""The embedded backend: Qdrant Edge (PyPI qdrant-edge-py), the Qdrant engine in-process.

One Edge shard (a directory) per physical collection under `<root>/collections/`, and a catalog
(`<root>/catalog.json`: each collection's vectors and payload indexes, and the aliases) written
atomically, so an alias swap is one rename and a shard directory the catalog does not name is what an
interrupted create left behind (removed on open). A lock file keeps a second process out: Edge owns
its files, one process per data dir. A collection's shard is loaded on its first use (an asyncio lock
per collection, so two first uses load it once), or by `maintain()`, which a long-running app calls at
start: a one-shot `tipline check` reads the fact-checks and the evidence, not the tracked messages, and
loading the fact-checks' shard alone took 0.10-0.13 s of CPU for the 107 seed fact-checks (Edge fills
the mapped files of every field as it loads), a tracked-messages shard more with every message.

Edge calls block and burn CPU, so each runs in a worker thread, except a search that reads payloads
only (below). The shards answer queries from several
threads at once, so there is no store-wide lock (a lock guards only the catalog and the table of open
shards, for microseconds); writes to one collection go one at a time (an asyncio lock per collection).
A shard an alias swap retires is closed once the calls that already hold it finish.

Index building. Edge never optimizes on its own: points land in a plain segment that every search
scans in full, exactly; fast while small. Once a shard has `OPTIMIZE_AT` points and `OPTIMIZE_EVERY`
more since the last build, the shard is built again *in a child process* (storage/edge_build.py):
`EdgeShard.optimize()` holds the GIL for the whole build (measured: a Python thread ticking every ms
saw a 1.76 s gap during a 1.8 s build of 6,000 × 64-d points), so in a thread it would stall the event
loop and every search. The parent flushes the shard and copies its directory (writes wait, searches go
on), the child optimizes the copy (HNSW graphs on one core, segment merges, vacuum), and meanwhile the
parent keeps answering from the original and records every write; then it opens the built copy,
replays the recorded writes on it and swaps it in (a catalog entry), under the collection's write lock.
Stopping tipline mid-build kills the child and loses nothing: the original was never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import qdrant_edge as qe

from storage.vectors import (
    AnyOf,
    Condition,
    IdIn,
    CollectionSpec,
    IndexKind,
    DataDirInUse,
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

log = logging.getLogger(__name__)
T = TypeVar("T")

# Below this many points a shard is searched by full scan (exact); at and above it `optimize()` builds
# HNSW in the background. 20,000 × 384-d cosine: full scan p50 ~2 ms here, so nothing to gain below.
OPTIMIZE_AT = 20_000
# …and is run again once this many points were written since the last build (new points sit in a
# plain segment that every search scans until then).
OPTIMIZE_EVERY = 20_000
# HNSW search breadth: 128 kept top-20 recall at 1.0 on CLEF's 10k claims (default: ef_construct=100).
HNSW_EF = 128

_INDEX_KINDS: dict[IndexKind, qe.PayloadSchemaType] = {
    "keyword": qe.PayloadSchemaType.Keyword, "float": qe.PayloadSchemaType.Float,
    "integer": qe.PayloadSchemaType.Integer, "datetime": qe.PayloadSchemaType.Datetime,
    "bool": qe.PayloadSchemaType.Bool}
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _edge_filter(where: Where | None) -> qe.Filter | None:
    if where is None or not (where.must or where.must_not):
        return None

    def cond(c: Condition) -> qe.FieldCondition | qe.HasIdCondition:
        if isinstance(c, IdIn):
            return qe.HasIdCondition(set(c.ids))
        if isinstance(c, AnyOf):
            values = list(c.values)
            return qe.FieldCondition(key=c.key, match=qe.MatchValue(values[0]) if len(values) == 1
                                     else qe.MatchAny(values))
        return qe.FieldCondition(key=c.key, range=qe.RangeFloat(gte=c.gte, lte=c.lte, lt=c.lt))
    return qe.Filter(must=[cond(c) for c in where.must] or None,
                     must_not=[cond(c) for c in where.must_not] or None)


def _edge_vector(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.astype(np.float32, copy=False).tolist()
    return qe.SparseVector(list(v.indices), list(v.values))


def _selector(payload: WithPayload) -> Any:
    return payload if isinstance(payload, bool) else list(payload)


def _split(vector: Any) -> tuple[dict[str, np.ndarray], dict[str, Terms]]:
    dense: dict[str, np.ndarray] = {}
    sparse: dict[str, Terms] = {}
    if isinstance(vector, dict):
        names = []
        for k, v in vector.items():
            if isinstance(v, qe.SparseVector):
                sparse[k] = Terms(list(v.indices), list(v.values))
            else:
                names.append(k)
        # np.fromiter: 3.4 ms for 84 fact-checks' four vectors where np.asarray took 7.7 (same floats).
        dense = {k: np.fromiter(vector[k], dtype=np.float32, count=len(vector[k])) for k in names}
    return dense, sparse



def shard_config(dense: Mapping[str, int], sparse: Sequence[str], optimize_at: int, *,
                 threads: int = 1, unindexed: Sequence[str] = (), index_all: bool = False) -> qe.EdgeConfig:
    """A collection's engine settings; storage/edge_build.py rebuilds the same with more threads, and with
    `index_all` (settle) indexes every segment, however small."""
    # Edge's own indexing threshold (KB of vectors per segment) sits below our trigger, so a build
    # started at optimize_at points does index the segment.
    threshold_kb = max(1, optimize_at * max(dense.values(), default=1) * 4 // 1024 // 2)
    # A vector nothing searches (the fact-checks' USE vector) gets no graph: m=0. Building one for it
    # cost ~30 % more wall time to write and index 2,000 fact-checks.
    no_graph = qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=threshold_kb,
                                  max_indexing_threads=threads)
    # Cold: mapped, read on touch. "Cached" populates every 32 MB storage chunk whole at load: 200 MiB of a
    # one-shot check's 660 for a knowledge base of 107 fact-checks; touched pages stay in the page cache anyway.
    cold = qe.Memory.Cold
    return qe.EdgeConfig(
        vectors={f: qe.EdgeVectorParams(size=d, distance=qe.Distance.Cosine, hnsw_config=no_graph, memory=cold)
                 if f in unindexed else qe.EdgeVectorParams(size=d, distance=qe.Distance.Cosine, memory=cold)
                 for f, d in dense.items()},
        sparse_vectors={f: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) for f in sparse},
        payload_memory=cold,
        # A background build uses one thread: on 2 cores the other stays free for searches and the models.
        # settle() (nothing is served meanwhile) uses every core: 20k × 384-d took 22.6 s on one thread,
        # 12.6 s on two here.
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=threshold_kb,
                                       max_indexing_threads=threads),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1 if index_all else threshold_kb))

class _Shard:
    """An open shard, with the number of calls using it: one that a swap retires is closed (and its
    directory removed) by whichever finishes last, the swap or the last call."""

    def __init__(self, edge: qe.EdgeShard, path: Path):
        self.edge = edge
        self.path = path
        self.users = 0
        self.retired = False
        self.written = 0  # points written since the last index build
        self.replay: list[qe.UpdateOperation] | None = None  # writes made while a copy is being built

    def dispose(self) -> None:
        self.edge.close()
        shutil.rmtree(self.path, ignore_errors=True)


class EdgeVectorStore(VectorStore):
    def __init__(self, root: Path, lock_fd: int, dim: int, multi_dim: int | None, optimize_at: int,
                 optimize_every: int, use_dim: int | None = None):
        super().__init__(dim, multi_dim, use_dim)
        self.root = root
        self.optimize_at = optimize_at
        self.optimize_every = optimize_every
        self._lock_fd = lock_fd
        self._guard = threading.Lock()  # the catalog and the table of open shards; never held over an Edge call
        self._catalog: dict[str, Any] = {"collections": {}, "aliases": {}}
        self._shards: dict[str, _Shard] = {}
        self._writing: dict[str, asyncio.Lock] = {}  # per physical collection: writes, and a build's copy and swap
        self._loading: dict[str, asyncio.Lock] = {}  # per physical collection: its shard's first load
        self._tasks: set[asyncio.Task[None]] = set()
        self._building: set[str] = set()
        self._held = 0  # builds_held() depth: writes are counted, no build starts

    # --- opening and closing -------------------------------------------------------------------

    @classmethod
    async def open(cls, root: Path, *, dim: int, multi_dim: int | None = None, use_dim: int | None = None,
                   optimize_at: int = OPTIMIZE_AT,
                   optimize_every: int = OPTIMIZE_EVERY) -> EdgeVectorStore:
        return await asyncio.to_thread(cls._open_sync, root, dim, multi_dim, optimize_at, optimize_every, use_dim)

    @classmethod
    def _open_sync(cls, root: Path, dim: int, multi_dim: int | None, optimize_at: int,
                   optimize_every: int, use_dim: int | None = None) -> EdgeVectorStore:
        try:
            (root / "collections").mkdir(parents=True, exist_ok=True)
            fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise VectorStoreError(f"cannot open the vector store at {root}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise DataDirInUse(
                f"another tipline process is using {root}; the embedded vector store allows one process per "
                "data dir (stop the other one, use another TIPLINE_DATA_DIR, or run a Qdrant server and set "
                "TIPLINE_QDRANT_URL)") from exc
        store = cls(root, fd, dim, multi_dim, optimize_at, optimize_every, use_dim)
        try:
            store._load()
        except BaseException:
            store._close_sync()
            raise
        return store

    def _load(self) -> None:
        path = self.root / "catalog.json"
        if path.exists():
            try:
                self._catalog = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise VectorStoreError(f"the vector store's catalog {path} is unreadable ({exc})") from exc
        known = {self._dir(name) for name in self._catalog["collections"]}
        for d in (self.root / "collections").iterdir():
            if d not in known:  # a create, migration or build interrupted before the catalog named it
                shutil.rmtree(d, ignore_errors=True)

    def loaded(self) -> list[str]:
        """The collections whose shards are loaded now (the others load on first use)."""
        with self._guard:
            return sorted(self._shards)

    async def _loaded(self, name: str) -> None:
        """`name`'s shard loaded (an alias: its collection's), once; nothing for a name the catalog lacks."""
        physical = self._physical(name)
        if physical in self._shards:
            return
        async with self._loading.setdefault(physical, asyncio.Lock()):
            with self._guard:
                if physical in self._shards or physical not in self._catalog["collections"]:
                    return
                path = self._dir(physical)
                n_dense = max(1, len(self._catalog["collections"][physical]["dense"]))

            def load() -> _Shard:
                try:
                    edge = qe.EdgeShard.load(str(path))
                except Exception as exc:
                    raise VectorStoreError(f"cannot open the collection {physical!r} in {self.root}: {exc}") from exc
                shard = _Shard(edge, path)
                # What the last process wrote and did not index yet counts towards the next build.
                info = edge.info()
                shard.written = max(0, info.points_count - info.indexed_vectors_count // n_dense)
                return shard
            shard = await asyncio.to_thread(load)
            with self._guard:
                gone = physical not in self._catalog["collections"]  # deleted while it loaded
                if not gone:
                    self._shards[physical] = shard
            if gone:
                await asyncio.to_thread(shard.edge.close)

    def _dir(self, name: str) -> Path:
        """Where a collection's shard lives now: its name, or the name and a build generation."""
        entry = self._catalog["collections"].get(name, {})
        return self.root / "collections" / entry.get("dir", name)

    def _save_catalog(self) -> None:
        tmp = self.root / f".catalog.{uuid.uuid4().hex}.tmp"
        tmp.write_text(json.dumps(self._catalog, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.root / "catalog.json")  # atomic: readers see the old or the new catalog

    async def aclose(self) -> None:
        # A build in progress is abandoned (its child killed, its copy removed): the original is intact.
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        with self._guard:
            shards, self._shards = list(self._shards.values()), {}
        for s in shards:
            try:
                s.edge.close()
            except Exception:  # closing what is already closed; nothing to save
                log.debug("vector store: close failed", exc_info=True)
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        os.close(self._lock_fd)

    # --- running calls ---------------------------------------------------------------------------

    def _physical(self, name: str) -> str:
        with self._guard:
            return self._catalog["aliases"].get(name, name)

    def _resolve(self, name: str) -> _Shard | None:
        """`name`'s open shard; None if its collection's shard is not loaded yet (see `_loaded`)."""
        physical = self._catalog["aliases"].get(name, name)
        shard = self._shards.get(physical)
        if shard is None and physical not in self._catalog["collections"]:
            raise VectorStoreError(f"no collection {name!r} in the vector store")
        return shard

    def _lock_of(self, name: str) -> asyncio.Lock:
        physical = self._catalog["aliases"].get(name, name)
        return self._writing.setdefault(physical, asyncio.Lock())

    async def _update(self, name: str, op: qe.UpdateOperation | Sequence[qe.UpdateOperation], points: int = 0) -> None:
        """Every write: one at a time per collection, recorded for replay while a build copy is out.
        Several operations go to the worker thread together."""
        ops = [op] if isinstance(op, qe.UpdateOperation) else list(op)
        await self._loaded(name)
        async with self._lock_of(name):
            def apply(edge: qe.EdgeShard) -> None:
                for o in ops:
                    edge.update(o)
            with self._guard:
                shard = self._resolve(name)
            await self._call(name, apply)
            if shard is not None and shard.replay is not None:  # None: loaded by this write, no build out
                shard.replay.extend(ops)
        if points:
            self._wrote(name, points)

    async def _call(self, name: str, fn: Callable[[qe.EdgeShard], T], *, inline: bool = False) -> T:
        """`fn` on `name`'s shard, in a worker thread (on the event loop itself when `inline`)."""
        while True:  # again if an alias swap moved `name` onto a collection not loaded yet meanwhile
            await self._loaded(name)
            with self._guard:
                shard = self._resolve(name)
                if shard is not None:
                    shard.users += 1
                    break

        def run() -> T:
            try:
                return fn(shard.edge)
            finally:
                with self._guard:
                    shard.users -= 1
                    last = shard.retired and shard.users == 0
                if last:
                    if inline:  # closing a shard and removing its directory is slow: not on the loop
                        asyncio.get_running_loop().run_in_executor(None, shard.dispose)
                    else:
                        shard.dispose()
        return run() if inline else await asyncio.to_thread(run)

    # --- collections -----------------------------------------------------------------------------

    async def spec_of(self, name: str) -> CollectionSpec | None:
        with self._guard:
            raw = self._catalog["collections"].get(self._catalog["aliases"].get(name, name))
        if raw is None:
            return None
        return CollectionSpec(dense=dict(raw["dense"]), sparse=tuple(raw["sparse"]), indexes=dict(raw["indexes"]),
                              unindexed=tuple(raw.get("unindexed", ())))

    async def create_collection(self, name: str, spec: CollectionSpec) -> None:
        if not _SAFE_NAME.match(name):
            raise VectorStoreError(f"invalid collection name {name!r}")

        def create() -> None:
            path = self.root / "collections" / name
            shutil.rmtree(path, ignore_errors=True)
            edge = qe.EdgeShard.create(str(path), shard_config(spec.dense, spec.sparse, self.optimize_at,
                                                               unindexed=spec.unindexed))
            for fld, kind in spec.indexes.items():
                edge.update(qe.UpdateOperation.create_field_index(fld, _INDEX_KINDS[kind]))
            with self._guard:
                self._shards[name] = _Shard(edge, path)
                self._catalog["collections"][name] = {"dense": dict(spec.dense), "sparse": list(spec.sparse),
                                                      "indexes": dict(spec.indexes), "dir": name,
                                                      "unindexed": list(spec.unindexed)}
                self._save_catalog()
        await asyncio.to_thread(create)

    async def create_index(self, name: str, field_name: str, kind: IndexKind) -> None:
        await self._update(name, qe.UpdateOperation.create_field_index(field_name, _INDEX_KINDS[kind]))

        def record() -> None:
            with self._guard:
                entry = self._catalog["collections"].get(self._catalog["aliases"].get(name, name))
                if entry is not None:
                    entry["indexes"][field_name] = kind
                    self._save_catalog()
        await asyncio.to_thread(record)

    async def collection_names(self) -> list[str]:
        with self._guard:
            return sorted(self._catalog["collections"])

    async def aliases(self) -> dict[str, str]:
        with self._guard:
            return dict(self._catalog["aliases"])

    async def point_alias(self, alias: str, target: str) -> None:
        def point() -> None:
            with self._guard:
                if target not in self._catalog["collections"]:
                    raise VectorStoreError(f"no collection {target!r} to point {alias!r} at")
                self._catalog["aliases"][alias] = target
                self._save_catalog()
        await asyncio.to_thread(point)

    async def delete_collection(self, name: str) -> None:
        def delete() -> None:
            with self._guard:
                if name not in self._catalog["collections"]:
                    return
                path = self._dir(name)
                del self._catalog["collections"][name]
                self._catalog["aliases"] = {a: t for a, t in self._catalog["aliases"].items() if t != name}
                self._save_catalog()
                shard = self._shards.pop(name, None)
                if shard is not None:
                    shard.retired = True
                now = shard is not None and shard.users == 0
            if shard is None:  # never loaded: its files only
                shutil.rmtree(path, ignore_errors=True)
            elif now:
                shard.dispose()
        async with self._loading.setdefault(name, asyncio.Lock()):  # not while its first load runs
            await asyncio.to_thread(delete)

    # --- points ----------------------------------------------------------------------------------

    async def upsert(self, name: str, points: Sequence[Point]) -> None:
        if not points:
            return
        edge_points = [qe.Point(p.id, {**{k: _edge_vector(v) for k, v in p.dense.items()},
                                       **{k: _edge_vector(v) for k, v in p.sparse.items()}}, p.payload)
                       for p in points]
        await self._update(name, qe.UpdateOperation.upsert_points(edge_points), len(points))

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        if ids:
            await self._update(name, qe.UpdateOperation.delete_points(list(ids)))

    async def delete_where(self, name: str, where: Where) -> None:
        flt = _edge_filter(where)
        if flt is None:
            raise ValueError("delete_where needs a condition")
        await self._update(name, qe.UpdateOperation.delete_points_by_filter(flt))

    async def set_payload(self, name: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        if ids:
            await self._update(name, qe.UpdateOperation.set_payload(list(ids), payload))

    async def set_payloads(self, name: str, payloads: Mapping[str, dict[str, Any]]) -> None:
        # Counted as points written: the engine moves a point whose payload changes out of its indexed
        # segment (100,000 filled without a rebuild: a fact-check search batch 4.6 -> 31 ms).
        if payloads:
            await self._update(name, [qe.UpdateOperation.set_payload([pid], p) for pid, p in payloads.items()],
                               len(payloads))

    async def set_payload_where(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        flt = _edge_filter(where)
        if flt is None:
            raise ValueError("set_payload_where needs a condition")
        await self._update(name, qe.UpdateOperation.set_payload_by_filter(flt, payload))

    async def retrieve(self, name: str, ids: Sequence[str], *, payload: WithPayload = True,
                       vectors: WithVectors = False) -> list[Record]:
        if not ids:
            return []

        def get(edge: qe.EdgeShard) -> list[Record]:
            out = []
            for r in edge.retrieve(list(ids), with_payload=_selector(payload), with_vector=_selector(vectors)):
                dense, sparse = _split(r.vector)
                out.append(Record(str(r.id), dict(r.payload or {}), dense, sparse))
            return out
        return await self._call(name, get)

    async def query_batch(self, name: str, queries: Sequence[Query], *, payload: WithPayload = True,
                          vectors: WithVectors = False) -> list[list[Scored]]:
        if not queries:
            return []
        # One filter per distinct condition: a fact-check's cosine searches share theirs, and building an
        # id condition parses every id (0.64 ms for 115 candidates' ids).
        filters = {id(w): _edge_filter(w) for w in {id(q.where): q.where for q in queries}.values()}
        requests = [qe.QueryRequest(limit=q.limit, query=qe.Query.Nearest(_edge_vector(q.vector), using=q.using),
                                    filter=filters[id(q.where)], score_threshold=q.min_score,
                                    with_payload=_selector(payload if q.payload is None else q.payload),
                                    with_vector=_selector(vectors if q.vectors is None else q.vectors),
                                    params=qe.SearchParams(hnsw_ef=max(HNSW_EF, q.limit)))
                    for q in queries]
        reads_vectors = any(vectors if q.vectors is None else q.vectors for q in queries)

        def run(edge: qe.EdgeShard) -> list[list[Scored]]:
            results = edge.query_batch(qe.QueryBatchRequest(requests)) if len(requests) > 1 \
                else [edge.query(requests[0])]
            # A point found by several lists is converted once (per payload selection): reading a point's
            # vectors out of the binding is most of a fact-check search's time (160 hits x 3 vectors: 7 of 15 ms).
            seen: dict[tuple[str, str], tuple[dict[str, Any], dict[str, np.ndarray]]] = {}
            out = []
            for q, points in zip(queries, results):
                row = []
                selected = repr((q.payload, q.vectors))
                with_vectors = vectors if q.vectors is None else q.vectors
                for p in points:
                    pid = str(p.id)
                    known = seen.get((selected, pid))
                    if known is None:
                        known = seen[selected, pid] = (dict(p.payload or {}), _split(p.vector)[0] if with_vectors else {})
                    row.append(Scored(pid, float(p.score), known[0], known[1]))
                out.append(row)
            return out
        # A search that reads no vectors runs on the event loop: Edge holds the GIL for the whole search
        # (a Python thread ticking every 0.1 ms saw gaps of 6.6 ms p50 while 2.2 ms searches ran), so a
        # worker thread stalls the loop just as long and adds its hop: 0.43 of the 3.8 ms that "also
        # reported by"'s candidate search took at 1M stored messages. Reading vectors out of the binding
        # is Python work of several ms (160 hits x 3 vectors: 7 ms), so that stays in a thread, where
        # the loop gets the GIL back every switch interval.
        return await self._call(name, run, inline=not reads_vectors)

    async def scroll(self, name: str, where: Where | None = None, *, payload: WithPayload = True,
                     vectors: WithVectors = False, batch: int = 1024) -> AsyncIterator[list[Record]]:
        flt = _edge_filter(where)
        offset: Any = None
        while True:
            def page(edge: qe.EdgeShard, offset: Any = offset) -> tuple[list[Record], Any]:
                records, nxt = edge.scroll(qe.ScrollRequest(offset=offset, limit=batch, filter=flt,
                                                            with_payload=_selector(payload),
                                                            with_vector=_selector(vectors)))
                out = []
                for r in records:
                    dense, sparse = _split(r.vector)
                    out.append(Record(str(r.id), dict(r.payload or {}), dense, sparse))
                return out, nxt
            records, offset = await self._call(name, page)
            if records:
                yield records
            if offset is None:
                return

    async def count(self, name: str, where: Where | None = None) -> int:
        flt = _edge_filter(where)
        return await self._call(name, lambda e: e.count(qe.CountRequest(exact=True, filter=flt)))

    # --- index building (see the module doc) --------------------------------------------------------

    async def maintain(self) -> None:
        """Load every collection's shard and start the index builds that are due (after open: a previous
        process may have stopped first). A long-running app calls it at start; a one-shot check does not
        (bot/app.py), and loads only the shards it reads, on first use."""
        for name in await self.collection_names():
            await self._loaded(name)
            self._wrote(name, 0)

    @contextlib.asynccontextmanager
    async def builds_held(self) -> AsyncIterator[None]:
        """No background build starts inside (builds already running finish). A bulk fill of 1M points
        would otherwise start one every OPTIMIZE_EVERY writes, each copying and re-indexing everything
        written so far; `settle()` afterwards builds once, on every core."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1

    def _wrote(self, name: str, n: int) -> None:
        with self._guard:
            physical = self._catalog["aliases"].get(name, name)
            shard = self._shards.get(physical)
            if shard is None or shard.retired:
                return
            shard.written += n
            if self._held or physical in self._building or shard.written < self.optimize_every:
                return
            self._building.add(physical)
        task = asyncio.get_running_loop().create_task(self._build(physical), name=f"tipline-index-{physical}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _build(self, name: str) -> None:
        try:
            await self._build_aside(name)
        except asyncio.CancelledError:
            raise
        except Exception:  # the original stays in place: searchable, by full scan where unindexed
            log.exception("vector store: index build failed for %s", name)
            return
        finally:
            with self._guard:
                self._building.discard(name)
        self._wrote(name, 0)  # what was written during the build may be due already

    async def _build_aside(self, name: str, *, threads: int = 1, rewrite: bool = False,
                           index_all: bool = False) -> None:
        """`rewrite`: the child writes the live points into a new shard instead of optimizing a copy
        (`purge`), whatever the collection's size. `index_all` (settle): every segment is indexed, where a
        background build leaves a segment under the engine's indexing threshold (writes replayed after the
        last build, when no merge takes them) plain."""
        lock = self._lock_of(name)
        async with lock:
            with self._guard:
                shard = self._shards.get(name)
                if shard is None or shard.retired:
                    return
                entry = self._catalog["collections"][name]
                generation = int(entry.get("generation", 0)) + 1
                shard.users += 1  # the copy reads its files
            try:
                if not rewrite and \
                        await asyncio.to_thread(shard.edge.count, qe.CountRequest(exact=False)) < self.optimize_at:
                    shard.written = 0  # small enough for full scan; counting starts again
                    return
                built = self.root / "collections" / f"{name}.g{generation}"
                copy = built.with_name(built.name + ".src") if rewrite else built
                shutil.rmtree(built, ignore_errors=True)
                shutil.rmtree(copy, ignore_errors=True)
                await asyncio.to_thread(shard.edge.flush)
                await asyncio.to_thread(shutil.copytree, shard.path, copy)
                shard.written = 0
                shard.replay = []
            finally:
                with self._guard:
                    shard.users -= 1
        proc: asyncio.subprocess.Process | None = None
        try:
            args = [str(built)]
            if threads > 1 or rewrite or index_all:
                args += ["--threads", str(threads), "--spec",
                         json.dumps({"dense": entry["dense"], "sparse": entry["sparse"], "optimize_at": self.optimize_at,
                                     "index_all": index_all,
                                     "unindexed": entry.get("unindexed", []), "indexes": entry.get("indexes", {})})]
            if rewrite:
                args += ["--rewrite", str(copy)]
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "storage.edge_build", *args,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            _, err = await proc.communicate()
            if proc.returncode != 0:
                raise VectorStoreError(f"index build of {name} failed: {err.decode(errors='replace')[-500:]}")
            async with lock:
                replay, shard.replay = shard.replay or [], None

                def swap_in() -> qe.EdgeShard:
                    # Loaded with the serving settings, so the next background build is one thread again.
                    fresh = qe.EdgeShard.load(str(built), shard_config(dict(entry["dense"]), entry["sparse"],
                                                                       self.optimize_at,
                                                                       unindexed=entry.get("unindexed", ())))
                    for op in replay:
                        fresh.update(op)
                    return fresh
                fresh = await asyncio.to_thread(swap_in)
                with self._guard:
                    if self._shards.get(name) is not shard:  # deleted meanwhile
                        fresh.close()
                        raise VectorStoreError(f"{name} went away during its index build")
                    self._catalog["collections"][name].update(dir=built.name, generation=generation)
                    self._save_catalog()
                    swapped = self._shards[name] = _Shard(fresh, built)
                    # The replayed writes sit in a plain segment of the built copy: they count towards the next build.
                    swapped.written = shard.written
                    shard.retired = True
                    now = shard.users == 0
                if now:
                    await asyncio.to_thread(shard.dispose)
                log.info("vector store: %s re-indexed (%d writes replayed)", name, len(replay))
        except BaseException:
            shard.replay = None
            if proc is not None and proc.returncode is None:
                proc.kill()
                await proc.wait()
            if not (self._shards.get(name) is not shard and self._dir(name) == built):
                shutil.rmtree(built, ignore_errors=True)
            if rewrite:
                shutil.rmtree(copy, ignore_errors=True)
            raise

    async def purge(self, name: str) -> None:
        """Leave no trace of deleted points in `name`'s files. Edge keeps a deleted point's payload in its
        segment and its write in the shard's write-ahead log (a preallocated file rewritten only as it wraps
        round), so the collection is written anew: a copy goes to a child process (as an index build does,
        module doc), which writes the live points into a new shard, optimizes it and removes the copy; the
        new shard is swapped in with the writes made meanwhile, and the old directory is removed. Costs a
        copy and a rewrite of the collection (bot/personal.py calls it after forgetting someone)."""
        physical = self._physical(name)
        await self._loaded(physical)
        while True:  # after a build already running (it copied the shard before the delete)
            with self._guard:
                shard = self._shards.get(physical)
                if shard is None:
                    return
                if physical not in self._building:
                    self._building.add(physical)
                    break
            await asyncio.sleep(0.05)
        try:
            await self._build_aside(physical, rewrite=True)
        finally:
            with self._guard:
                self._building.discard(physical)
        for _ in range(600):  # the old shard is removed when the last search using it ends (_Shard.dispose)
            if not await asyncio.to_thread(shard.path.exists) or self._shards.get(physical) is shard:
                return
            await asyncio.sleep(0.05)
        raise VectorStoreError(f"the old files of {name} are still in use after 30 s")

    async def indexed_vectors(self, name: str) -> int:
        """Vectors in indexed (HNSW) segments; the rest are searched by full scan."""
        return await self._call(name, lambda e: e.info().indexed_vectors_count)

    async def settle(self) -> None:
        """Wait for the builds running, then build whatever is still unindexed (benchmarks, tests, moving
        a data dir): afterwards every point of a shard past optimize_at is in an indexed segment."""
        for name in await self.collection_names():
            await self._loaded(name)  # a shard not read yet may hold what a previous process left unindexed
        while True:
            while self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            with self._guard:
                due = [name for name, s in self._shards.items() if s.written > 0 and not s.retired
                       and name not in self._building]
                self._building.update(due)
            if not due:
                return
            for name in due:
                await self._build_once(name)

    async def _build_once(self, name: str) -> None:
        """A build that does not chain another (settle loops itself), on every core: whoever settles
        waits for it and serves nothing meanwhile."""
        try:
            await self._build_aside(name, threads=os.cpu_count() or 1, index_all=True)
        finally:
            with self._guard:
                self._building.discard(name)
