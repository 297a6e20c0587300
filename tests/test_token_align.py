"""e5's token states (core/encoders/token_align.py): computed with the vectors by one model call, shipped for the seed,
kept in SQLite per fact-check, read for a Cyrillic message's candidates. Real e5 graph, real SQLite and Qdrant
Edge, the seed knowledge base."""

from __future__ import annotations

import numpy as np
import pytest

from bot.app import build_app, load_multilingual, multilingual_engine
from core.matching.knowledge_base import load_seed_factchecks
from core.matching.features import FEATURE_NAMES, doc_text
from core.encoders.multilingual import SEED_VECTORS, seed_states
from core.encoders.token_align import PROJECTION_DIM, alignment_f, alignment_rp
from storage.sqlite import Database
from tests.conftest import isolated_settings


@pytest.fixture(scope="module")
def encoder(model_dir):
    return multilingual_engine(isolated_settings(model_dir / "unused", model_dir))


async def test_states_come_with_the_vectors_from_one_call(encoder):
    texts = ["Прививки вызывают у детей аутизм.", "Vaccines cause autism in children.",
             "The moon landing was filmed in a studio."]
    vecs, states = await encoder.queries_with_states(texts[:1])
    assert np.allclose(vecs, encoder.queries_sync(texts[:1]), atol=1e-6)  # the same vector as queries()
    (m,) = states
    assert m.dtype == np.float16 and m.shape[1] == PROJECTION_DIM
    assert np.allclose(np.linalg.norm(m.astype(np.float32), axis=1), 1, atol=1e-2)
    # The prefix, <s> and </s> are not among the states: one state per content token.
    assert len(m) == encoder.token_count(texts[0], True) - 2 - 3
    pvecs, pstates = encoder.passages_with_states_sync(texts[1:])
    assert np.allclose(pvecs, encoder.passages_sync(texts[1:]), atol=1e-6)
    f = alignment_f(m, pstates)
    assert f[0] > f[1] + 0.05, f  # the Russian message aligns with the claim it retells


def test_alignment_f_of_a_candidate_without_states_is_zero():
    m = np.eye(4, PROJECTION_DIM, dtype=np.float16)
    f = alignment_f(m, [m, None, m[:0], m[:2]])
    assert f[0] == pytest.approx(1.0, abs=1e-3) and f[1] == f[2] == 0.0
    assert 0 < f[3] < 1  # recall 0.5, precision 1: F 2/3
    assert f[3] == pytest.approx(2 / 3, abs=1e-3)


def test_p_low_is_the_mean_of_the_worst_met_third_of_each_docs_tokens():
    """Each doc token's best cosine with the message; P averages them all, P_low the lowest third (at least one):
    the fact-check's point a near miss leaves out, where the shared names lift P."""
    e = np.eye(4, dtype=np.float32)
    message = e[[0, 1]]
    docs = [e[[0, 1, 2]], e[[0, 1, 2, 3, 0, 1]], e[[1]], None]
    rp = alignment_rp(message, docs)
    assert rp[:, 1].tolist() == pytest.approx([2 / 3, 4 / 6, 1.0, 0.0])
    assert rp[:, 2].tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0])  # thirds of 1, 2 and 1 tokens
    docs[1] = e[[0, 1, 2, 0, 1, 0]]
    assert alignment_rp(message, docs)[1, 2] == pytest.approx(0.5)  # the worst two: 0 and 1


def test_the_seed_ships_its_states(encoder, model_dir):
    """training/seed_vectors.py writes the states beside the vectors; the default engine serves them."""
    table = seed_states(SEED_VECTORS, encoder.states_model)
    assert table is not None, "run python -m training.seed_vectors: the seed's states are another model's"
    texts = [doc_text(fc.claim, fc.title) for fc in load_seed_factchecks()]
    assert set(texts) <= set(table)
    served = load_multilingual(isolated_settings(model_dir / "unused", model_dir))
    _, shipped = served.passages_with_states_sync(texts[:3])
    _, fresh = encoder.passages_with_states_sync(texts[:3])
    for a, b in zip(shipped, fresh):
        assert a.shape == b.shape
        cos = np.sum(a.astype(np.float32) * b.astype(np.float32), axis=1)
        assert (cos > 0.99).all()


async def test_sqlite_keeps_states_per_model(tmp_path):
    db = await Database.open(tmp_path / "t.sqlite3")
    a = np.random.default_rng(0).standard_normal((5, PROJECTION_DIM)).astype(np.float16)
    await db.put_factcheck_states("m1", {"x": a, "y": a[:2]})
    got = await db.factcheck_states(["x", "y", "z"], "m1", PROJECTION_DIM)
    assert set(got) == {"x", "y"} and np.array_equal(got["x"], a) and got["y"].shape == (2, PROJECTION_DIM)
    assert await db.factcheck_states(["x"], "m2", PROJECTION_DIM) == {}  # another model's are not read
    await db.put_factcheck_states("m2", {"x": a[:1]})  # replaced
    assert (await db.factcheck_states(["x"], "m2", PROJECTION_DIM))["x"].shape == (1, PROJECTION_DIM)
    await db.close()


async def test_the_knowledge_base_stores_states_and_a_cyrillic_match_reads_them(tmp_path, model_dir):
    settings = isolated_settings(tmp_path / "data", model_dir)
    async with build_app(settings) as app:
        ids = [fc.id for fc in load_seed_factchecks()]
        stored = await app.kb.token_states(ids)
        assert set(stored) == set(ids)
        assert '"states"' in app.kb.models()  # a change of states re-embeds the data dir
        # What the matcher computes for a Russian message: tok_f is read, and highest for the fact-check
        # it retells.
        text = "В шприцах с вакциной для людей нашли электронные чипы для слежки."
        _, (qstates,) = await app.kb.multilingual.queries_with_states([text])
        f = alignment_f(qstates, [stored[i] for i in ids])
        best = ids[int(np.argmax(f))]
        assert "чип" in (await app.db.get_factchecks([best]))[best].claim
        matches = await app.engine.matcher.by_text(text)
        assert matches and matches[0].factcheck_id == best and matches[0].tier == "auto"
    assert "tok_f" in FEATURE_NAMES


def test_the_shipped_projection_is_the_tools_fit_of_the_seed(tmp_path):
    """training/token_projection.py fits core/data/e5_token_projection.npy on the seed's states: rerun after the
    seed file changes (the states' model name carries the file's digest, so data dirs follow)."""
    import subprocess
    import sys
    from pathlib import Path

    from core.encoders.token_align import PROJECTION

    out = tmp_path / "p.npy"
    subprocess.run([sys.executable, "-m", "training.token_projection", "--out", str(out)], check=True,
                   capture_output=True, timeout=600, cwd=Path(__file__).resolve().parents[1])
    fresh, shipped = np.load(out), np.load(PROJECTION)
    assert fresh.shape == shipped.shape == (384, PROJECTION_DIM)
    # Each direction up to its sign (an SVD's choice), column by column.
    assert np.allclose(np.abs(np.sum(fresh * shipped, axis=0)), 1.0, atol=1e-3)
