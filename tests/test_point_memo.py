"""The memo of stored vectors read back with fact-check candidates (storage/point_memo.py): what it
answers is what the engine holds, after upserts, alias swaps and deletions; and it stays within its bytes."""

from __future__ import annotations

import uuid

import numpy as np

from core.sparse import document_vector, query_vector
from storage.edge_store import EdgeVectorStore
from storage.point_memo import PointVectorMemo
from storage.vectors import FACTCHECK_VECTORS, FactCheckPoint

DIM = 8


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _points(n: int, seed: int) -> list[FactCheckPoint]:
    rng = np.random.default_rng(seed)
    c, t, m, u = _unit(rng, n, DIM), _unit(rng, n, DIM), _unit(rng, n, DIM + 2), _unit(rng, n, DIM + 4)
    return [FactCheckPoint(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"fc{i}")), claim_vector=c[i], title_vector=t[i],
                           terms=document_vector(f"claim number {i} about vaccines"), payload={"i": i},
                           multi_vector=m[i], use_vector=u[i]) for i in range(n)]


async def _candidates(store: EdgeVectorStore, name: str, p: FactCheckPoint) -> dict[str, dict[str, np.ndarray]]:
    hits = await store.search_factchecks(name, p.claim_vector, query_vector("claim about vaccines"), 10,
                                         multi=p.multi_vector)
    return {h.id: h.vectors for h in hits}


def _vectors(p: FactCheckPoint) -> dict[str, np.ndarray]:
    return {"claim": p.claim_vector, "title": p.title_vector, "multi": p.multi_vector, "use": p.use_vector}


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    return set(got) == set(want) and all(np.allclose(got[k], want[k], atol=1e-5) for k in want)


async def test_candidates_carry_the_vectors_the_engine_holds_after_writes_and_swaps(tmp_path):
    store = await EdgeVectorStore.open(tmp_path / "edge", dim=DIM, multi_dim=DIM + 2, use_dim=DIM + 4)
    try:
        await store.ensure_factchecks("fc__a")
        await store.point_alias("fc", "fc__a")
        old = _points(30, seed=1)
        await store.upsert_factchecks("fc", old)
        first = await _candidates(store, "fc", old[3])
        by_id = {p.id: p for p in old}
        assert first and all(_same(v, _vectors(by_id[i])) for i, v in first.items())
        assert len(store._memo) == len(first)  # read once, now remembered
        # The same ids re-embedded in place: the next search must not answer from what it read before.
        new = _points(30, seed=2)
        await store.upsert_factchecks("fc", new)
        by_id = {p.id: p for p in new}
        again = await _candidates(store, "fc", new[3])
        assert again and all(_same(v, _vectors(by_id[i])) for i, v in again.items())
        # A rebuild swapped in behind the alias (a model change): the other collection's vectors.
        await store.ensure_factchecks("fc__b")
        swapped = _points(30, seed=3)
        await store.upsert_factchecks("fc__b", swapped)
        await _candidates(store, "fc", new[3])  # remembered for fc__a
        await store.swap_alias("fc", "fc__b")
        by_id = {p.id: p for p in swapped}
        after = await _candidates(store, "fc", swapped[3])
        assert after and all(_same(v, _vectors(by_id[i])) for i, v in after.items())
        # Deleted points come back without vectors, not with remembered ones.
        gone = list(after)[:3]
        await store.delete("fc", gone)
        assert await store.point_vectors("fc", gone, FACTCHECK_VECTORS) == {}
        store.forget_vectors()
        assert len(store._memo) == 0
    finally:
        await store.aclose()


def test_a_read_from_before_a_write_is_not_remembered():
    memo = PointVectorMemo(max_bytes=1 << 20)
    g = memo.generation("fc")
    memo.forget("fc")  # a write landed while the read was out
    memo.remember("fc", g, [("a", {"claim": np.ones(4, np.float32)})])
    assert memo.lookup("fc", ["a"], ["claim"]) == ({}, ["a"])
    memo.remember("fc", memo.generation("fc"), [("a", {"claim": np.ones(4, np.float32)})])
    found, missing = memo.lookup("fc", ["a", "b", "a"], ["claim"])
    assert list(found) == ["a"] and missing == ["b"]
    # An entry without every asked field is a miss.
    assert memo.lookup("fc", ["a"], ["claim", "use"])[1] == ["a"]


def test_memo_stays_within_its_bytes_dropping_the_least_recently_used():
    entry = 4 * 100  # 100 float32s
    memo = PointVectorMemo(max_bytes=10 * entry)
    g = memo.generation("fc")
    memo.remember("fc", g, [(f"p{i}", {"claim": np.zeros(100, np.float32)}) for i in range(10)])
    memo.lookup("fc", ["p0"], ["claim"])  # p0 used again: p1 is now the oldest
    memo.remember("fc", g, [("p10", {"claim": np.zeros(100, np.float32)})])
    assert memo.nbytes == 10 * entry and len(memo) == 10
    found, missing = memo.lookup("fc", ["p0", "p1", "p10"], ["claim"])
    assert set(found) == {"p0", "p10"} and missing == ["p1"]
    memo.remember("fc", g, [("huge", {"claim": np.zeros(10_000, np.float32)})])  # larger than the memo: not kept
    assert memo.nbytes == 10 * entry and memo.lookup("fc", ["huge"], ["claim"])[1] == ["huge"]
