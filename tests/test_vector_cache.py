"""The vector cache of `tipline bench report` (evals/vector_cache.py) with the real models, SQLite and Qdrant
Edge: a second run reuses what the first computed, a changed model or a torn file never is, and fact-checks
stored from kept vectors are found exactly as when embedded on the way in."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evals.vector_cache import VectorCache, identity_of_embedder_sync, model_identity
from schema.models import FactCheck, Verdict

PER_MODEL = ["factchecks-english", "factchecks-multi", "factchecks-use"]
FCS = [
    FactCheck(id=f"vc{i}", claim=claim, title=title, url=f"https://factcheck.example/vc{i}", publisher="Example",
              rating_text="False", verdict=Verdict.REFUTED)
    for i, (claim, title) in enumerate([
        ("Drinking bleach cures the coronavirus.", "No, bleach does not cure COVID-19"),
        ("The Eiffel Tower was sold for scrap in 2019.", ""),
        ("Вышки 5G распространяют коронавирус.", "Нет, 5G не распространяет вирус"),
    ])
]


async def test_second_run_reuses_the_vectors_and_stores_the_same_index(app, tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vc")
    first, from_cache = await cache.factchecks(app.kb, FCS)
    assert not from_cache and cache.misses == PER_MODEL
    again = VectorCache(tmp_path / "vc")
    second, from_cache = await again.factchecks(app.kb, FCS)
    assert from_cache and again.hits == PER_MODEL
    for a, b in ((first.claim, second.claim), (first.title, second.title), (first.multi, second.multi)):
        np.testing.assert_array_equal(a, b)
    # No headline: the claim's vector stands in, as on the ingest path.
    np.testing.assert_array_equal(second.title[1], second.claim[1])

    await app.kb.add(FCS, vectors=second)
    matches = await app.matcher.by_text("Someone sold the Eiffel Tower for scrap metal in 2019")
    assert matches and matches[0].claim == FCS[1].claim


async def test_one_model_missing_is_the_only_one_embedded_again(app, tmp_path: Path) -> None:
    """A changed model (here: its kept vectors gone) re-embeds its own vectors only, and they are those of
    a run that kept nothing."""
    first, _ = await VectorCache(tmp_path / "vc").factchecks(app.kb, FCS)
    (use_file,) = (tmp_path / "vc").glob("factchecks-use-*.npz")
    use_file.unlink()
    again = VectorCache(tmp_path / "vc")
    second, from_cache = await again.factchecks(app.kb, FCS)
    assert not from_cache and again.hits == PER_MODEL[:2] and again.misses == ["factchecks-use"]
    for a, b in ((first.claim, second.claim), (first.title, second.title), (first.multi, second.multi)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(first.use, second.use, atol=1e-6)


async def test_other_texts_or_another_model_are_computed_again(app, tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vc")
    await cache.factchecks(app.kb, FCS)
    changed = [FCS[0].model_copy(update={"claim": "Drinking bleach cures the flu."}), *FCS[1:]]
    _, from_cache = await cache.factchecks(app.kb, changed)
    assert not from_cache

    texts = ["one sentence", "another one"]
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return app.embedder.embed_sync(texts)

    model = identity_of_embedder_sync(app.embedder.embed_sync, app.embedder.model_name)
    cache.vectors_sync("t", model, texts, compute)
    cache.vectors_sync("t", model, texts, compute)
    assert len(calls) == 1
    # Same name, different weights (another probe vector): never the old vectors.
    other = model_identity(app.embedder.model_name, np.ones(app.embedder.dim, np.float32))
    cache.vectors_sync("t", other, texts, compute)
    assert len(calls) == 2


def test_a_torn_file_is_computed_again_and_off_keeps_nothing(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vc")
    v = cache.vectors_sync("t", "m#1", ["a", "b"], lambda: np.eye(2, dtype=np.float32))
    (path,) = (tmp_path / "vc").glob("t-*.npz")
    path.write_bytes(path.read_bytes()[:40])
    again = cache.vectors_sync("t", "m#1", ["a", "b"], lambda: 2 * np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(again, 2 * v)

    off = VectorCache(None)
    off.vectors_sync("t", "m#1", ["a", "b"], lambda: np.eye(2, dtype=np.float32))
    assert off.misses == ["t"] and len(list((tmp_path / "vc").iterdir())) == 1


async def test_precomputed_vectors_must_line_up(app) -> None:
    vectors, _ = await VectorCache(None).factchecks(app.kb, FCS)
    try:
        await app.kb.add(FCS[:2], vectors=vectors)
    except ValueError as exc:
        assert "one row per fact-check" in str(exc)
    else:
        raise AssertionError("misaligned vectors were stored")


def _stream(tmp_path: Path) -> tuple[Path, Path, Path]:
    msgs, ru, qrels = tmp_path / "m.tsv", tmp_path / "ru.tsv", tmp_path / "q.qrels"
    msgs.write_text("tweet_id\ttweet_content\n"
                    "1\tDam destroyed near Kherson — A (@a) March 1, 2022\n"
                    "2\tKherson dam destroyed overnight — B (@b) March 2, 2022\n"
                    "3\tA cat video — C (@c) March 2, 2022\n", encoding="utf-8")
    ru.write_text("tweet_id\ttweet_content\n"
                  "1\tПлотина под Херсоном разрушена — A (@a) 1 марта 2022\n"
                  "3\tВидео с котом — C (@c) 2 марта 2022\n", encoding="utf-8")
    qrels.write_text("1\t0\tv1\t1\n2\t0\tv1\t1\n3\t0\tv2\t1\n", encoding="utf-8")
    return msgs, ru, qrels


async def test_same_story_eval_from_kept_vectors_scores_as_computed(app, tmp_path: Path) -> None:
    """`tipline bench report` keeps the same-story eval's vectors (~170 of its ~180 CPU-seconds): the
    figures from kept vectors are those computed on the spot, and a second run computes nothing."""
    import asyncio

    from evals.corroboration_eval import run_corroboration_eval, run_translated_eval

    msgs, ru, qrels = _stream(tmp_path)

    def both(cache: VectorCache | None) -> tuple[dict, dict]:
        app.clear_embedding_caches()
        return (run_corroboration_eval(msgs, tmp_path / "out.tsv", qrels, embedder=app.embedder, quiet=True,
                                       multilingual=app.kb.multilingual, cache=cache),
                run_translated_eval(msgs, ru, qrels, app.embedder, app.kb.multilingual, cache=cache))

    plain = await asyncio.to_thread(both, None)
    first = VectorCache(tmp_path / "vc")
    assert await asyncio.to_thread(both, first) == plain
    assert first.misses == ["corroboration-eval"] * 4 and not first.hits
    again = VectorCache(tmp_path / "vc")
    assert await asyncio.to_thread(both, again) == plain
    assert again.hits == ["corroboration-eval"] * 4 and not again.misses
    assert plain[0]["messages"] == 3 and plain[1]["messages"] == 5
