"""A fact-check's claim read by e5 as a query, as a message is (core/matching/same_claim.py compares the two): its vector
and token states, stored at ingest beside the passage's token states without touching them, computed at a match for a
fact-check stored without them. Real e5 graph, real SQLite and Qdrant Edge, the seed knowledge base."""

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
    claim_states = np.full((2, PROJECTION_DIM), 0.5, dtype=np.float16)
    await db.put_claim_states("m", {"x": claim_states})
    assert np.array_equal((await db.claim_states(["x", "y"], "m", PROJECTION_DIM))["x"], claim_states)
    assert np.array_equal((await db.factcheck_states(["x"], "m", PROJECTION_DIM))["x"], states)  # untouched
    assert await db.claim_states(["x"], "other", PROJECTION_DIM) == {}
    await db.close()


async def test_seeded_claims_have_their_query_vectors_and_a_missing_one_is_computed_once(tmp_path, model_dir):
    settings = isolated_settings(tmp_path / "data", model_dir)
    async with build_app(settings) as app:
        seed = load_seed_factchecks()
        ids = [fc.id for fc in seed]
        model, states_model = app.kb.multilingual.model_name, app.kb.multilingual.states_model
        stored = await app.db.claim_queries(ids, model)
        assert set(stored) == set(ids)
        assert set(await app.db.claim_states(ids, states_model, PROJECTION_DIM)) == set(ids)
        fc = next(f for f in seed if "5G" in f.claim)
        (expected,), (expected_states,) = await app.kb.multilingual.queries_with_states([clean_query(fc.claim)])
        assert float(stored[fc.id].astype(np.float32) @ expected) > 0.999
        # A data dir from before they were stored: the match computes the missing ones and keeps them.
        async with app.db.transaction() as conn:
            await conn.execute("DELETE FROM factcheck_claim_queries WHERE id = ?", (fc.id,))
            await conn.execute("DELETE FROM factcheck_claim_states WHERE id = ?", (fc.id,))
        matches = await app.engine.matcher.by_text("Вышки 5G распространяют коронавирус.")
        assert matches and matches[0].factcheck_id == fc.id
        kept = await app.db.claim_queries([fc.id], model)
        assert float(kept[fc.id].astype(np.float32) @ expected) > 0.999
        kept_states = (await app.db.claim_states([fc.id], states_model, PROJECTION_DIM))[fc.id]
        assert kept_states.shape == expected_states.shape
        assert np.allclose(kept_states.astype(np.float32), expected_states.astype(np.float32), atol=2e-3)


def test_the_seed_ships_its_claims_query_vectors_and_states(model_dir):
    """training/seed_vectors.py writes them, so a new data dir does not run e5 over the seed's claims again."""
    from bot.app import multilingual_engine
    from core.encoders.multilingual import SEED_VECTORS, seed_queries, seed_query_states

    encoder = multilingual_engine(isolated_settings(model_dir / "unused", model_dir))
    table = seed_queries(SEED_VECTORS, encoder.model_name)
    states = seed_query_states(SEED_VECTORS, encoder.states_model)
    claims = [clean_query(fc.claim) for fc in load_seed_factchecks()]
    assert table is not None and states is not None and set(claims) <= set(table) & set(states), \
        "run python -m training.seed_vectors"
    sample = claims[::20]
    fresh, fresh_states = encoder.queries_with_states_sync(sample)
    assert all(float(table[c] @ f) > 0.999 for c, f in zip(sample, fresh))
    assert all(states[c].shape == s.shape and np.allclose(states[c].astype(np.float32), s.astype(np.float32), atol=2e-3)
               for c, s in zip(sample, fresh_states))
