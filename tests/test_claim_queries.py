"""A fact-check's claim read by e5 as a query, as a message is (core/matching/same_claim.py compares the two): stored at
ingest beside the token states without touching them, computed at a match for a fact-check stored without one.
Real e5 graph, real SQLite and Qdrant Edge, the seed knowledge base."""

from __future__ import annotations

import numpy as np

from bot.app import build_app
from core.encoders.token_align import PROJECTION_DIM
from core.matching.knowledge_base import load_seed_factchecks
from core.textclean import clean_query
from storage.sqlite import Database
from tests.conftest import isolated_settings


async def test_sqlite_keeps_claim_queries_per_model_apart_from_token_states(tmp_path):
    db = await Database.open(tmp_path / "t.sqlite3")
    states = np.ones((3, PROJECTION_DIM), dtype=np.float16)
    await db.put_factcheck_states("m", {"x": states})
    v = np.random.default_rng(0).standard_normal(384).astype(np.float16)
    await db.put_claim_queries("e5", {"x": v})
    assert np.array_equal((await db.claim_queries(["x", "y"], "e5"))["x"], v)
    assert await db.claim_queries(["x"], "other") == {}  # another model's are not read
    assert np.array_equal((await db.factcheck_states(["x"], "m", PROJECTION_DIM))["x"], states)
    await db.close()


async def test_seeded_claims_have_their_query_vectors_and_a_missing_one_is_computed_once(tmp_path, model_dir):
    settings = isolated_settings(tmp_path / "data", model_dir)
    async with build_app(settings) as app:
        seed = load_seed_factchecks()
        ids = [fc.id for fc in seed]
        stored = await app.db.claim_queries(ids, app.kb.multilingual.model_name)
        assert set(stored) == set(ids)
        fc = next(f for f in seed if "5G" in f.claim)
        expected = (await app.kb.multilingual.queries([clean_query(fc.claim)]))[0]
        assert float(stored[fc.id].astype(np.float32) @ expected) > 0.999
        # A data dir from before the vectors were stored: the match computes the missing one and keeps it.
        async with app.db.transaction() as conn:
            await conn.execute("DELETE FROM factcheck_claim_queries WHERE id = ?", (fc.id,))
        matches = await app.engine.matcher.by_text("Вышки 5G распространяют коронавирус.")
        assert matches and matches[0].factcheck_id == fc.id
        kept = await app.db.claim_queries([fc.id], app.kb.multilingual.model_name)
        assert float(kept[fc.id].astype(np.float32) @ expected) > 0.999


def test_the_seed_ships_its_claims_query_vectors(model_dir):
    """training/seed_vectors.py writes them, so a new data dir does not run e5 over the seed's claims again."""
    from bot.app import multilingual_engine
    from core.encoders.multilingual import SEED_VECTORS, seed_queries

    encoder = multilingual_engine(isolated_settings(model_dir / "unused", model_dir))
    table = seed_queries(SEED_VECTORS, encoder.model_name)
    claims = [clean_query(fc.claim) for fc in load_seed_factchecks()]
    assert table is not None and set(claims) <= set(table), "run python -m training.seed_vectors"
    sample = claims[::20]
    fresh = encoder.queries_sync(sample)
    assert all(float(table[c] @ f) > 0.999 for c, f in zip(sample, fresh))
