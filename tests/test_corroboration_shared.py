"""core.corroboration.pair_features: the one feature loop of StoryDetector and the live Corroborator,
and the evaluated (not shipped) fourth feature, the shared rare-term count (RARE_DF)."""

from __future__ import annotations

import numpy as np

from core.corroboration import (
    FEATURES,
    RARE_CAP,
    RARE_DF,
    RARE_PER,
    StoryDetector,
    pair_features,
    rare_cutoff,
    story_terms,
)
from tests.test_story_linking_cv import _stream, cv


def test_the_cutoff_is_three_of_800_and_grows_with_the_store() -> None:
    assert rare_cutoff(10) == rare_cutoff(RARE_PER) == RARE_DF
    assert rare_cutoff(20_000) == 75.0


def test_the_count_counts_only_rare_shared_terms_and_is_capped() -> None:
    a = story_terms("kharkiv przemysl lviv odesa dnipro mykolaiv power")
    b = story_terms("kharkiv przemysl lviv odesa dnipro mykolaiv power station")
    common = next(iter(story_terms("power")))
    df = {t: 1 for t in a | b} | {t: 2 for t in a & b}
    df[common] = 50  # in 50 of the 100 messages seen: not rare
    three = pair_features(frozenset(), a, [(frozenset(), b)], np.array([0.5]), 100, df)
    four = pair_features(frozenset(), a, [(frozenset(), b)], np.array([0.5]), 100, df, shared_rare=True)
    assert three.shape == (1, len(FEATURES)) and four.shape == (1, len(FEATURES) + 1)
    assert np.array_equal(four[:, :3], three)  # the shipped three are untouched by the fourth
    assert four[0, 3] == 1.0  # six rare shared names, capped at RARE_CAP
    df.update({t: 50 for t in list(a & b)[:len(a & b) - 2]})  # all but two shared terms common now
    rare = sum(1 for t in a & b if df[t] <= RARE_DF)
    few = pair_features(frozenset(), a, [(frozenset(), b)], np.array([0.5]), 100, df, shared_rare=True)
    assert 0 < rare < RARE_CAP and few[0, 3] == rare / RARE_CAP


def test_the_detector_adds_the_fourth_column_only_when_asked() -> None:
    msgs, vecs, gold = _stream(claims=4)
    plain, shared = StoryDetector(dim=vecs.shape[1]), StoryDetector(dim=vecs.shape[1], shared_rare=True)
    for d in (plain, shared):
        for m, v in zip(msgs, vecs):
            d._store(m.id, m.account, m.time, m.text, v)
    cand = np.arange(5)
    f3, f4 = plain.features(5, cand), shared.features(5, cand)
    assert f3.shape == (5, 3) and f4.shape == (5, 4) and np.array_equal(f4[:, :3], f3)


def test_cross_validation_of_the_fourth_feature_runs_the_real_detector() -> None:
    msgs, vecs, gold = _stream()
    s = cv.replay(msgs, vecs, gold)
    assert s.x.shape[1] == cv.ALL
    sparse, dense = cv.cross_validate(msgs, vecs, gold, cv.VARIANTS["+ shared, in-fold threshold, weak links at 0.40"],
                                      folds=3, repeats=1)
    p, r, f = sparse.prf()
    assert sparse.gold == dense.gold > 0 and 0.0 < f <= 1.0 and p > 0.5
