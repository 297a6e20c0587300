import sqlite3
from datetime import date

import numpy as np
import pytest

from schema.models import FactCheck, Result, Verdict
from core.encoders.sparse import document_vector, query_vector
from storage.edge_store import EdgeVectorStore
from storage.sqlite import MIGRATIONS, Database, normalize_url
from storage.vectors import FactCheckPoint, VectorStoreError


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
                          terms=document_vector(claim), payload={"claim": claim}, multi_vector=vec, use_vector=vec)


async def test_edge_store_ranks_like_the_vectors_and_survives_reopen(tmp_path):
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    claims = [f"claim number {i} about topic{i % 7}" for i in range(50)]
    store = await EdgeVectorStore.open(tmp_path / "q", dim=8)
    await store.ensure_factchecks("fc")
    await store.upsert_factchecks("fc", [_point(i, c, v) for i, (c, v) in enumerate(zip(claims, vecs))])
    hits = await store.search_factchecks("fc", vecs[3], query_vector("topic3"), limit=5)
    best_dense = min(hits, key=lambda h: h.ranks.get("claim", 99))
    assert best_dense.payload["claim"] == claims[3] and best_dense.scores["claim"] == pytest.approx(1.0, abs=1e-5)
    expected = [claims[i] for i in np.argsort(-(vecs @ vecs[3]))[:5]]
    assert [h.payload["claim"] for h in sorted((h for h in hits if "claim" in h.ranks),
                                               key=lambda h: h.ranks["claim"])] == expected
    sparse_hits = [h for h in hits if "terms" in h.ranks]
    assert sparse_hits and all("topic3" in h.payload["claim"] for h in sparse_hits)
    await store.aclose()

    reopened = await EdgeVectorStore.open(tmp_path / "q", dim=8)
    await reopened.ensure_factchecks("fc")
    assert await reopened.count("fc") == 50
    again = await reopened.search_factchecks("fc", vecs[3], query_vector("topic3"), limit=5)
    assert [h.id for h in again] == [h.id for h in hits]
    await reopened.aclose()


async def test_second_process_on_the_same_path_gets_a_clear_error(tmp_path):
    store = await EdgeVectorStore.open(tmp_path / "q", dim=8)
    try:
        with pytest.raises(VectorStoreError, match="another tipline process"):
            await EdgeVectorStore.open(tmp_path / "q", dim=8)
    finally:
        await store.aclose()
    await (await EdgeVectorStore.open(tmp_path / "q", dim=8)).aclose()  # free again once closed


async def test_a_collection_from_other_models_is_not_current(tmp_path):
    # A model change is not an error: the knowledge base re-embeds into a new collection (test_knowledge).
    store = await EdgeVectorStore.open(tmp_path / "q", dim=8)
    await store.ensure_factchecks("fc")
    assert await store.factchecks_current("fc")
    await store.aclose()
    other = await EdgeVectorStore.open(tmp_path / "q", dim=16)
    assert not await other.factchecks_current("fc")
    await other.aclose()
    wider = await EdgeVectorStore.open(tmp_path / "q", dim=8, multi_dim=12)
    assert not await wider.factchecks_current("fc")
    await wider.aclose()


def _legacy_dir(path, n: int = 30) -> np.ndarray:
    """A data dir as the previous version wrote it: qdrant-client's local mode, a fact-check collection
    behind an alias, a half-built orphan, a messages collection."""
    from qdrant_client import QdrantClient, models

    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    client = QdrantClient(path=str(path))
    for name in ("fc__1", "fc__orphan"):
        client.create_collection(name, vectors_config={
            f: models.VectorParams(size=8, distance=models.Distance.COSINE) for f in ("claim", "title", "multi", "use")},
            sparse_vectors_config={"terms": models.SparseVectorParams(modifier=models.Modifier.IDF)})
    client.update_collection_aliases(change_aliases_operations=[models.CreateAliasOperation(
        create_alias=models.CreateAlias(collection_name="fc__1", alias_name="fc"))])
    client.upsert("fc__1", points=[models.PointStruct(
        id=fc(f"claim {i}", url=f"https://x/{i}").id, payload={"claim": f"claim {i}"},
        vector={"claim": vecs[i].tolist(), "title": vecs[i].tolist(), "multi": vecs[i].tolist(), "use": vecs[i].tolist(),
                "terms": models.SparseVector(indices=[i, 1000], values=[1.0, 0.5])}) for i in range(n)])
    client.create_collection("messages", vectors_config={"text": models.VectorParams(
        size=8, distance=models.Distance.COSINE)})
    client.upsert("messages", points=[models.PointStruct(id=fc(f"m{i}").id, payload={"key": f"m{i}", "ts": 1.0},
                                                         vector={"text": vecs[i].tolist()}) for i in range(5)])
    client.close()
    return vecs


async def test_an_old_data_dir_moves_into_edge_once_and_an_interruption_loses_nothing(tmp_path):
    from storage.vector_migration import migrate_legacy_dir

    legacy = tmp_path / "qdrant"
    vecs = _legacy_dir(legacy)
    store = await EdgeVectorStore.open(tmp_path / "qdrant-edge", dim=8)
    # An earlier attempt that stopped half-way: a partial copy, the old directory still in place.
    await store.ensure_factchecks("fc__1")
    await store.upsert_factchecks("fc__1", [_point(99, "stray", vecs[0])])
    assert await migrate_legacy_dir(legacy, store) == {"fc__1": 30, "messages": 5}
    assert not legacy.exists() and (tmp_path / "qdrant.pre-edge" / "meta.json").exists()
    assert await store.collection_names() == ["fc__1", "messages"]  # the orphan is not carried over
    assert await store.physical_name("fc") == "fc__1" and await store.count("fc") == 30
    assert await store.factchecks_current("fc")
    hits = await store.search_factchecks("fc", vecs[4], query_vector("x"), limit=3)
    assert hits[0].payload["claim"] == "claim 4"
    assert await migrate_legacy_dir(legacy, store) == {}  # once
    await store.aclose()


async def test_a_data_dir_moves_onto_a_server_whole(tmp_path):
    from qdrant_client import AsyncQdrantClient

    from storage.qdrant_remote import RemoteVectorStore
    from storage.vector_migration import copy_store

    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(20, 8)).astype(np.float32)
    local = await EdgeVectorStore.open(tmp_path / "q", dim=8)
    await local.ensure_factchecks("fc__a")
    await local.upsert_factchecks("fc__a", [_point(i, f"claim {i} topic", v) for i, v in enumerate(vecs)])
    await local.swap_alias("fc", "fc__a")
    server = RemoteVectorStore(AsyncQdrantClient(location=":memory:"), 8, payload_indexes=False)
    assert await copy_store(local, server) == {"fc__a": 20}
    with pytest.raises(VectorStoreError, match="already has fc__a"):
        await copy_store(local, server)
    assert await server.physical_name("fc") == "fc__a" and await server.count("fc") == 20
    a = await local.search_factchecks("fc", vecs[2], query_vector("topic"), 5)
    b = await server.search_factchecks("fc", vecs[2], query_vector("topic"), 5)
    assert [h.id for h in a if "claim" in h.ranks] == [h.id for h in b if "claim" in h.ranks]
    await local.aclose()
    await server.aclose()
