"""core.corroboration.story_model.pair_features: the one feature loop of StoryDetector and the live Corroborator,
and its fourth feature `shared`, the count of shared terms outside the common words of en/ru/uk."""

from __future__ import annotations

import numpy as np

from core.corroboration.story_model import (
    FEATURES,
    SHARED_CAP,
    common_terms,
    pair_features,
    story_terms,
    transliterate,
)
from evals.story_detector import StoryDetector
from tests.test_story_linking_cv import _stream, cv


def _terms(text: str) -> frozenset[int]:
    return story_terms(transliterate(text))


def test_the_common_words_are_ordinary_words_of_each_language() -> None:
    common = common_terms()
    assert len(common) > 50_000
    for word in ("power", "trains", "suspended", "morning", "электричество", "потяги"):
        assert _terms(word) <= common, word
    for name in ("przemysl", "zorblax"):  # (a Ukrainian city's name is a common word of Ukrainian)
        assert not _terms(name) & common, name


def test_shared_counts_uncommon_shared_terms_capped() -> None:
    common = common_terms()
    a = _terms("Train service between Lviv and Przemysl suspended after a power outage")
    b = _terms("Przemysl and Lviv trains suspended, power outage")
    one = pair_features(frozenset(), a, [(frozenset(), b)], np.array([0.5]), 10, {}, common)
    assert one.shape == (1, len(FEATURES))
    assert (a & b) - common == _terms("przemysl")  # not power, outage, train, lviv ("львів" is common)
    assert one[0, 3] == 1 / SHARED_CAP
    names = _terms("Przemysl zorblax quintrel vashtorn plimmery gruntok fezzwick")
    many = pair_features(frozenset(), names, [(frozenset(), names)], np.array([0.5]), 10, {}, common)
    assert many[0, 3] == 1.0  # seven uncommon words shared, counted as SHARED_CAP
    nothing = pair_features(frozenset(), a, [(frozenset(), b)], np.array([0.5]), 10, {}, common | a | b)
    assert nothing[0, 3] == 0.0 and np.array_equal(nothing[:, :3], one[:, :3])


def test_the_detector_reads_the_shipped_common_words_unless_given_others() -> None:
    msgs, vecs, _ = _stream(claims=4)
    shipped, none = StoryDetector(dim=vecs.shape[1]), StoryDetector(dim=vecs.shape[1], common=frozenset())
    for d in (shipped, none):
        for m, v in zip(msgs, vecs):
            d._store(m.id, m.account, m.time, m.text, v)
    cand = np.arange(3)  # 0-0, 0-1, 0-2: one story, sharing "story0" and "common0" with 0-2's text
    f, g = shipped.features(2, cand), none.features(2, cand)
    assert shipped.common is common_terms()
    assert np.array_equal(f[:, :3], g[:, :3]) and f[0, 3] == g[0, 3] == 2 / SHARED_CAP


def test_cross_validation_of_the_shipped_features_runs_the_real_detector() -> None:
    msgs, vecs, gold = _stream()
    s = cv.replay(msgs, vecs, gold)
    assert s.x.shape[1] == cv.ALL == len(FEATURES)
    variant = cv.VARIANTS["+ shared, weak links at 0.8 of the in-fold threshold (shipped)"]
    sparse, dense = cv.cross_validate(msgs, vecs, gold, variant, folds=3, repeats=1)
    p, r, f = sparse.prf()
    assert sparse.gold == dense.gold > 0 and 0.0 < f <= 1.0 and p > 0.5
