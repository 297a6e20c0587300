import sqlite3
from datetime import date

import numpy as np
import pytest

from core.models import FactCheck, Result, Verdict
from core.sparse import document_vector, query_vector
from storage.sqlite import MIGRATIONS, Database, normalize_url
from storage.vectors import FactCheckPoint, VectorStore, VectorStoreError


def fc(claim: str, url: str = "https://factcheck.example/a", **kw) -> FactCheck:
    return FactCheck(claim=claim, url=url, verdict=Verdict.REFUTED, rating_text="False", **kw)


async def test_migrations_set_the_schema_version_and_reopen_cleanly(tmp_path):
    path = tmp_path / "t.sqlite3"
    db = await Database.open(path)
    await db.close()
    db = await Database.open(path)
    await db.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_newer_schema_is_refused_not_damaged(tmp_path):
    path = tmp_path / "t.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={len(MIGRATIONS) + 5}")
    with pytest.raises(Exception, match="newer than this tipline"):
        await Database.open(path)


async def test_factcheck_upsert_is_idempotent_and_urls_match_exactly(tmp_path):
    db = await Database.open(tmp_path / "t.sqlite3")
    a = fc("Claim A", appearances=["http://www.viral.example/post/1/"], published_at=date(2020, 4, 5))
    assert await db.upsert_factchecks([a]) == 1
    assert await db.upsert_factchecks([a]) == 0
    assert await db.count_factchecks() == 1
    found = await db.factchecks_by_urls(["https://viral.example/post/1#comments"])
    assert [f.claim for f in found] == ["Claim A"]
    assert found[0].published_at == date(2020, 4, 5)
    assert await db.factchecks_by_urls(["https://viral.example/post/2"]) == []
    await db.close()


def test_normalize_url():
    assert normalize_url(" HTTPS://www.Example.org/a/#x ") == "example.org/a"


async def test_failed_transaction_leaves_nothing(tmp_path):
    db = await Database.open(tmp_path / "t.sqlite3")
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO kv (key, value) VALUES ('k', 'v')")
            raise RuntimeError("boom")
    assert await db.get_kv("k") is None
    await db.close()


async def test_checks_round_trip(tmp_path):
    db = await Database.open(tmp_path / "t.sqlite3")
    r = Result(id="abc", text="t", verdict=Verdict.REFUTED, label="False", confidence=0.9, reasoning="r")
    await db.save_check(r)
    assert (await db.get_check("abc")) == r
    assert await db.get_check("nope") is None
    await db.close()


def _point(i: int, claim: str, vec: np.ndarray) -> FactCheckPoint:
    return FactCheckPoint(id=fc(claim, url=f"https://x/{i}").id, claim_vector=vec, title_vector=vec,
                          terms=document_vector(claim), payload={"claim": claim}, multi_vector=vec)


async def test_local_index_ranks_like_the_vectors_and_survives_reopen(tmp_path):
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    claims = [f"claim number {i} about topic{i % 7}" for i in range(50)]
    store = VectorStore.open(dim=8, path=tmp_path / "q")
    await store.ensure_factchecks("fc")
    await store.upsert_factchecks("fc", [_point(i, c, v) for i, (c, v) in enumerate(zip(claims, vecs))])
    hits = await store.search_factchecks("fc", vecs[3], query_vector("topic3"), limit=5)
    by_id = {h.id: h for h in hits}
    best_dense = min(hits, key=lambda h: h.ranks.get("claim", 99))
    assert best_dense.payload["claim"] == claims[3] and best_dense.scores["claim"] == pytest.approx(1.0, abs=1e-5)
    sparse_hits = [h for h in hits if "terms" in h.ranks]
    assert sparse_hits and all("topic3" in h.payload["claim"] for h in sparse_hits)
    store.close()

    reopened = VectorStore.open(dim=8, path=tmp_path / "q")
    await reopened.ensure_factchecks("fc")
    assert await reopened.count("fc") == 50
    again = await reopened.search_factchecks("fc", vecs[3], query_vector("topic3"), limit=5)
    # Equal sparse scores may break ties differently after a reload; the dense list is exact.
    assert {h.id for h in again if "claim" in h.ranks} == {h for h in by_id if "claim" in by_id[h].ranks}
    reopened.close()


async def test_second_process_on_the_same_path_gets_a_clear_error(tmp_path):
    store = VectorStore.open(dim=8, path=tmp_path / "q")
    try:
        with pytest.raises(VectorStoreError, match="another tipline process"):
            VectorStore.open(dim=8, path=tmp_path / "q")
    finally:
        store.close()


async def test_a_collection_from_other_models_is_not_current(tmp_path):
    # A model change is not an error: the knowledge base re-embeds into a new collection (test_knowledge).
    store = VectorStore.open(dim=8, path=tmp_path / "q")
    await store.ensure_factchecks("fc")
    assert await store.factchecks_current("fc")
    store.close()
    other = VectorStore.open(dim=16, path=tmp_path / "q")
    assert not await other.factchecks_current("fc")
    other.close()
    wider = VectorStore.open(dim=8, multi_dim=12, path=tmp_path / "q")
    assert not await wider.factchecks_current("fc")
    wider.close()
