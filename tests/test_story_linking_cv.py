"""evals/story_linking_cv.py: claim-grouped folds, the dense (touching) count, and a whole
cross-validation run through the real StoryDetector on a small synthetic stream."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from evals import fit_story_models as fsm
from evals import story_linking_cv as cv
from evals.corroboration_eval import Message

T0 = datetime(2021, 5, 1)


def _stream(claims: int = 12, per: int = 3, dim: int = 16) -> tuple[list[Message], np.ndarray, dict[str, set[str]]]:
    """`claims` stories of `per` tweets from different accounts, a day apart within a story; a story's
    vectors close to its own direction, its words shared with no other story."""
    rng = np.random.default_rng(0)
    msgs, vecs, gold = [], [], {}
    for c in range(claims):
        axis = rng.normal(size=dim)
        for k in range(per):
            mid = f"{c}-{k}"
            text = f"story{c} word{c}x{k} common{c}"
            msgs.append(Message(mid, f"@acct{c}{k}", T0 + timedelta(days=3 * c + k), text, text))
            v = axis + 0.35 * rng.normal(size=dim)
            vecs.append(v / np.linalg.norm(v))
            gold[mid] = {f"claim{c}"}
    gold["0-0"] = {"claim0", "claim1"}  # a tweet of two claims: claims 0 and 1 stay in one fold
    return msgs, np.asarray(vecs, np.float32), gold


def test_folds_never_split_a_claim() -> None:
    msgs, _, gold = _stream()
    groups = cv.claim_groups([m.id for m in msgs], gold)
    assert {"0-0", "0-1", "1-0", "1-2"} <= next(g for g in groups if "0-0" in g)
    folds = cv.split_folds(groups, 3, np.random.default_rng(1))
    assert sum(len(f) for f in folds) == len(msgs)
    for g in groups:
        assert sum(bool(g & f) for f in folds) == 1


def test_touching_counts_pairs_with_a_held_out_side() -> None:
    gold = {"a": {"x"}, "b": {"x"}, "c": {"y"}, "d": {"y"}}
    clusters = {"a": "a", "b": "a", "c": "a", "d": "d"}  # c wrongly in a's story
    true, pred, n_gold = cv.touching(clusters, gold, held={"c"})
    assert (true, pred, n_gold) == (0, 2, 1)  # (a,c) (b,c) predicted, both wrong; (c,d) missed


def test_cross_validation_runs_the_real_detector() -> None:
    msgs, vecs, gold = _stream()
    before, after = cv.VARIANTS["threshold 0.5667, no weak links (before)"], cv.VARIANTS[
        "threshold 0.5667, weak links at 0.40 (shipped before `shared`)"]
    for variant in (before, after):
        sparse, dense = cv.cross_validate(msgs, vecs, gold, variant, folds=3, repeats=1)
        p, r, f = sparse.prf()
        assert sparse.gold == dense.gold > 0 and 0.0 < f <= 1.0 and p > 0.5


def test_weak_links_on_the_other_routes_cross_validate_on_a_translated_stream(capsys) -> None:
    """evals/fit_story_models.py --weak-cv on a small stream of tweets and Cyrillic "translations"."""
    msgs, vecs, gold = _stream()
    ru = [Message(f"ru{m.id}", f"@ru_{m.account.lstrip('@')}", m.time, "", f"история{m.id[0]} слово{m.id}")
          for m in msgs]
    rng = np.random.default_rng(1)
    ru_vecs = vecs + 0.05 * rng.normal(size=vecs.shape).astype(np.float32)
    allv = np.vstack([vecs, ru_vecs / np.linalg.norm(ru_vecs, axis=1, keepdims=True)])
    gold = gold | {f"ru{k}": v for k, v in gold.items()}
    fsm.weak_routes_cv((msgs + ru, allv, allv, gold), 3, fracs=(None, 0.5))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("CV (3 folds by claim)")]
    assert len(lines) == 2
    for ln in lines:
        f1 = float(ln.split("sparse ")[1].split("F1 ")[1].split(",")[0])
        assert 0.0 < f1 <= 1.0
