import json

import numpy as np
import pytest

from core.matching.features import BASE_FEATURES, FEATURE_NAMES, LISTS, N_FEATURES, CorpusStats, TermStats, candidate_features, prepare_query
from core.matching.reranker import DEFAULT_PATH, Reranker
from core.encoders.sparse import term_id, terms

CLAIMS = ["Drinking bleach cures the coronavirus.", "Bill Gates wants to microchip everyone with vaccines.",
          "The Eiffel Tower was sold twice in 1925.", "A shark was photographed swimming on a flooded highway."]
TITLES = ["Does Bleach Cure COVID-19?", "Bill Gates Microchip Vaccine Plot", "Eiffel Tower Sale", "Hurricane Shark"]


def _unit(rng, n, d=8):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def setup():
    stats = CorpusStats()
    for c, t in zip(CLAIMS, TITLES):
        stats.add(c, t)
    rng = np.random.default_rng(0)
    cv, tv = _unit(rng, 4), _unit(rng, 4)
    q = cv[1] + 0.3 * tv[1]
    q /= np.linalg.norm(q)
    raw = "Bill Gates is putting a microchip in the #COVID19 vaccines! https://t.co/x — A B (@ab) May 1, 2020"
    pq = prepare_query(raw, "Bill Gates is putting a microchip in the #COVID19 vaccines!", q, stats)
    ranks = {"dense_claim": [2, 1, 0, 3], "dense_title": [0, 1, 2, 0], "sparse": [0, 1, 0, 0]}
    return stats, pq, cv, tv, ranks


def test_feature_matrix_shape_and_finite(setup):
    stats, pq, cv, tv, ranks = setup
    X = candidate_features(pq, CLAIMS, TITLES, cv, tv, ranks, stats)
    assert X.shape == (4, N_FEATURES) == (4, len(FEATURE_NAMES))
    assert np.isfinite(X).all()
    # the Bill Gates candidate shares the most terms and entities with the query
    for name in ("bm25_doc", "jaccard", "entity_cover", "rrf"):
        assert int(np.argmax(X[:, FEATURE_NAMES.index(name)])) == 1, name
    assert X[1, FEATURE_NAMES.index("rr_sparse")] == 1.0 and X[0, FEATURE_NAMES.index("rr_sparse")] == 0.0


def test_empty_candidates_and_empty_query(setup):
    stats, pq, cv, tv, ranks = setup
    assert candidate_features(pq, [], [], np.zeros((0, 8)), np.zeros((0, 8)), {}, stats).shape == (0, N_FEATURES)
    empty = prepare_query("", "", np.zeros(8, dtype=np.float32), stats)
    X = candidate_features(empty, CLAIMS, TITLES, cv, tv, {}, stats)
    assert np.isfinite(X).all()


def test_term_stats_incremental_and_json():
    s = TermStats()
    s.add("vaccines contain microchips")
    s.add("microchips in vaccines again")
    tid = term_id(terms("microchips")[0])
    assert s.n_docs == 2 and s.df[tid] == 2
    idf_two = s.idf(tid)
    s.remove("microchips in vaccines again")
    assert s.n_docs == 1 and s.df[tid] == 1
    back = TermStats.from_json(s.to_json())
    assert back == s and back.idf(tid) == s.idf(tid) and idf_two < s.idf(term_id("unseen"))
    c = CorpusStats()
    c.add(CLAIMS[0], TITLES[0])
    assert CorpusStats.from_json(c.to_json()) == c


def test_remembered_document_weights_follow_the_statistics():
    # A document's term weights (cover features) and term groups' IDFs are remembered across queries,
    # and must be worked out again once a fact-check is added or removed.
    s = TermStats()
    s.add("vaccines contain microchips")
    doc = tuple(term_id(t) for t in terms("microchips in vaccines"))
    group = tuple(sorted(set(doc)))
    w, total = s.weights(doc)
    assert set(w) == set(doc) and total == pytest.approx(sum(s.idf(t) for t in set(doc)))
    s.group_idfs()[group] = 1.0  # as a QueryScorer fills it
    for change in (lambda: s.add("microchips everywhere"), lambda: s.remove("microchips everywhere")):
        before = dict(w)
        change()
        assert not s.group_idfs()
        w, total = s.weights(doc)
        assert w != before and w == {t: s.idf(t) for t in set(doc)}


def test_weights_file_loads_and_thresholds_ordered():
    data = json.loads(DEFAULT_PATH.read_text())
    assert data["feature_names"] == list(BASE_FEATURES)  # the gloss columns are the Cyrillic model's only
    model = Reranker.load_default()
    assert 0.0 < model.suggest_threshold < model.auto_threshold < 1.0
    assert model.provenance["data"].startswith("CLEF-2020")
    assert model.decision(1.0) == "auto" and model.decision(0.0) == "none"


def test_probability_monotonic_in_dense_similarity(setup):
    model = Reranker.load_default()
    stats, pq, cv, tv, ranks = setup
    X = candidate_features(pq, CLAIMS, TITLES, cv, tv, ranks, stats)
    base = np.repeat(X[1:2], 21, axis=0)
    sims = np.linspace(0.2, 0.9, 21)
    for name in ("cos_claim", "cos_doc"):
        base[:, FEATURE_NAMES.index(name)] = sims
    p = model.score(base)
    assert ((p > 0) & (p < 1)).all()
    assert (np.diff(p) > 0).all()


def test_score_rejects_wrong_width():
    model = Reranker.load_default()
    with pytest.raises(ValueError):
        model.score(np.zeros((2, N_FEATURES + 1)))
    assert set(LISTS) == {"dense_claim", "dense_title", "sparse", "dense_multi"}


def test_multilingual_weights_load_and_its_probability_rises_with_multilingual_similarity(setup):
    from core.matching.features import without_english_model
    from core.matching.reranker import MULTILINGUAL_PATH

    model = Reranker.load_multilingual()
    assert json.loads(MULTILINGUAL_PATH.read_text())["feature_names"] == list(BASE_FEATURES)
    assert 0.0 < model.suggest_threshold < model.auto_threshold < 1.0
    assert model.auto_floor_feature == "cos_multi"
    stats, pq, cv, tv, ranks = setup
    X = candidate_features(pq, CLAIMS, TITLES, cv, tv, ranks, stats)
    base = without_english_model(np.repeat(X[1:2], 21, axis=0))
    base[:, FEATURE_NAMES.index("cos_multi")] = np.linspace(0.7, 0.95, 21)
    # e5 puts any two texts at cosine ~0.7-0.85, so a candidate's mean similarity to the others sits there too
    # (0 would be a candidate unlike every other, which the model never saw).
    base[:, FEATURE_NAMES.index("multi_hub")] = 0.8
    assert (np.diff(model.score(base)) > 0).all()
