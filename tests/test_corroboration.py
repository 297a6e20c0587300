"""Same-story detection (core/corroboration/story_model.py) and its CLEF evaluation (evals/corroboration_eval.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from core.corroboration.story_model import StoryModel, story_entities, transliterate
from evals.story_detector import StoryDetector, UnionFind, pair_score, pairwise_scores, parse_signature

T0 = datetime(2022, 3, 1)


def _vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_parse_signature() -> None:
    s = parse_signature("Big news here. — Ilhan Omar (@IlhanMN) January 6, 2020")
    assert s is not None and s.handle == "ilhanmn" and s.name == "Ilhan Omar"
    assert s.time == datetime(2020, 1, 6)
    no_date = parse_signature("Text — Someone (@some_one)")
    assert no_date is not None and no_date.handle == "some_one" and no_date.time is None
    assert parse_signature("A plain message without a signature.") is None


def test_union_find_transitive() -> None:
    uf = UnionFind()
    for _ in range(4):
        uf.make()
    uf.union(0, 1)
    uf.union(2, 1)
    assert uf.find(0) == uf.find(1) == uf.find(2) == 0
    assert uf.find(3) == 3


# The window and the other-account rule, without the strict links that may cross them
# (tests/test_corroboration_strict.py).
INSIDE_ONLY = StoryModel(strict_threshold=None)


def test_stream_chain_window_and_accounts() -> None:
    v = _vec(1)
    d = StoryDetector(model=INSIDE_ONLY, dim=8)
    text = "Kyiv mayor Klitschko says bridge reopened after repairs"
    assert d.add("a", "@one", T0, text, v) == "a"
    # same account, identical text: not linked
    assert d.add("b", "@one", T0 + timedelta(days=1), text, v) == "b"
    # another account within the window links to both: A~C~B is one story
    assert d.add("c", "@two", T0 + timedelta(days=2), text, v) == "a"
    assert d.cluster_of("b") == "a"
    assert set(d.same_story("c")) == {"a", "b"}


def test_window_respected() -> None:
    v = _vec(2)
    d = StoryDetector(model=INSIDE_ONLY, dim=8)
    d.add("a", "@one", T0, "Same text about the dam", v)
    assert d.add("b", "@two", T0 + timedelta(days=10), "Same text about the dam", v) == "b"
    # untimed messages are treated as inside the window
    assert d.add("c", "@three", None, "Same text about the dam", v) == "a"
    assert set(d.same_story("a")) == {"b", "c"}  # transitive through c


def test_same_account_not_linked() -> None:
    v = _vec(3)
    d = StoryDetector(model=INSIDE_ONLY, dim=8)
    d.add("a", "@one", T0, "Identical message", v)
    assert d.add("b", "@one", T0, "Identical message", v) == "b"


def test_aliases_raise_score(model_dir: Path) -> None:
    from core.encoders.embeddings import Embedder

    emb = Embedder(model_dir=model_dir)
    assert "kyiv" in story_entities("Explosions reported in Kiev tonight")
    assert "moscow" in story_entities("Протест в Москва")  # Cyrillic transliterated, then aliased
    assert transliterate("Київ") == "Kiyiv" and "kyiv" in story_entities("Вибухи у Київ")
    a = "Explosions reported in Kyiv tonight, says Zelensky"
    b_alias = "Explosions reported in Kiev tonight, says Zelenskiy"
    va, vb = emb.embed_sync([a, b_alias])
    with_alias = pair_score(a, va, b_alias, vb)
    # the same pair with the alias table disabled (entities/terms compared verbatim)
    import core.corroboration.story_model as c

    saved = dict(c.ALIASES)
    try:
        c.ALIASES.clear()
        without = pair_score(a, va, b_alias, vb)
    finally:
        c.ALIASES.update(saved)
    assert with_alias > without


def test_pairwise_metric() -> None:
    gold = {"1": {"x"}, "2": {"x"}, "3": {"x"}, "4": {"y"}, "5": {"z"}}
    clusters = {"1": "1", "2": "1", "3": "3", "4": "3", "5": "5", "6": "1"}  # 6 has no gold: ignored
    s = pairwise_scores(clusters, gold)
    # gold pairs: 12 13 23; predicted: 12, 34 -> 1 true of 2 predicted, of 3 gold
    assert (s.gold_pairs, s.predicted_pairs, s.true_pairs) == (3, 2, 1)
    assert s.precision == pytest.approx(0.5) and s.recall == pytest.approx(1 / 3)
    assert s.f1 == pytest.approx(0.4)


def test_eval_end_to_end(tmp_path: Path, settings) -> None:
    from bot.app import load_embedder
    from evals.corroboration_eval import run_corroboration_eval

    msgs = tmp_path / "m.tsv"
    msgs.write_text(
        "tweet_id\ttweet_content\n"
        "1\tDam destroyed near Kherson — A (@a) March 1, 2022\n"
        "2\tKherson dam destroyed — B (@b) March 2, 2022\n"
        "3\tA cat video — C (@c) March 2, 2022\n",
        encoding="utf-8",
    )
    qrels = tmp_path / "q.qrels"
    qrels.write_text("1\t0\tv1\t1\n2\t0\tv1\t1\n3\t0\tv2\t1\n", encoding="utf-8")

    out = tmp_path / "out.tsv"  # the real model: the two dam tweets are one story, the cat another
    r = run_corroboration_eval(msgs, out, qrels, embedder=load_embedder(settings), quiet=True,
                               model=StoryModel(), window_days=7)
    rows = dict(line.split("\t") for line in out.read_text().splitlines())
    assert rows["1"] == rows["2"] != rows["3"]
    assert r["f1"] == pytest.approx(1.0)
