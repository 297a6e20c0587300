"""core.verdict.scoring: the evidence features, truth score and verdict policy."""

from __future__ import annotations

import math

from schema.models import Verdict
from core.verdict.scoring import Features, compute_features, confidence_cap, decide, score
from tests.judging_support import judged


def test_seed_004_example_is_supported_with_a_high_score():
    # The seed's worked example: entail_max .95, mean3 .88, contradict .12, 4 agreeing domains, rel .85, rec 1.
    f = Features(e_max=0.95, e_mean3=0.88, c_max=0.12, agree_dom=4, rel_avg=0.85, rec_max=1.0, n_evidence=4)
    raw = 0.40 * 0.95 + 0.20 * 0.88 + 0.15 * 1 + 0.15 * 0.85 + 0.10 * 1.0 - 0.25 * 0.12
    assert score(f) == round(100 / (1 + math.exp(-(raw - 0.5) / 0.15)))
    assert score(f) >= 90
    p = decide(f)
    assert p.verdict == Verdict.SUPPORTED and p.confidence == min(score(f) / 100, f.e_max)


def test_features_from_judged_evidence():
    items = [
        judged("a.org", 0.9, 0.05, credibility=0.9, recency=0.8),
        judged("a.org", 0.8, 0.1, credibility=0.9),  # same site: one agreeing domain
        judged("b.com", 0.65, 0.45, credibility=0.5),  # entail ≥ .6 and contradict < .5: agrees
        judged("c.net", 0.6, 0.5, credibility=0.2, recency=0.9),  # contradict not < .5: doesn't
    ]
    f = compute_features(items)
    assert f.e_max == 0.9 and f.c_max == 0.5
    assert f.e_mean3 == round((0.9 + 0.8 + 0.65) / 3, 4)
    assert f.rel_avg == round((0.9 + 0.9 + 0.5) / 3, 4)
    assert f.agree_dom == 2 and f.refute_dom == 0 and f.rec_max == 0.9 and f.n_evidence == 4


def test_num_ok_is_a_small_bonus_and_needs_no_disagreement():
    base = [judged("a.org", 0.8, 0.0, numeric="agree"), judged("b.org", 0.8, 0.0)]
    f = compute_features(base)
    assert f.num_ok == 1
    assert score(f) > score(f.model_copy(update={"num_ok": 0}))
    g = compute_features(base + [judged("c.org", 0.0, 0.0, numeric="disagree")])
    assert g.num_ok == 0 and g.num_bad == 0  # both seen: can't tell
    h = compute_features([judged("c.org", 0.0, 0.0, numeric="disagree")])
    assert h.num_bad == 1


def test_no_evidence_is_not_enough_evidence():
    p = decide(compute_features([]))
    assert p.verdict == Verdict.NOT_ENOUGH_EVIDENCE and p.rule == "no usable evidence"


def test_support_needs_two_independent_domains():
    one = compute_features([judged("a.org", 0.95, 0.0), judged("a.org", 0.9, 0.0)])
    assert decide(one).verdict == Verdict.NOT_ENOUGH_EVIDENCE
    assert "only 1 domain" in decide(one).rule
    two = compute_features([judged("a.org", 0.95, 0.0), judged("b.org", 0.9, 0.0)])
    assert decide(two).verdict == Verdict.SUPPORTED


def test_refutation_needs_two_domains_or_a_matching_fact_check():
    one = compute_features([judged("a.org", 0.0, 0.95), judged("b.org", 0.1, 0.1)])
    assert decide(one).verdict == Verdict.NOT_ENOUGH_EVIDENCE
    two = compute_features([judged("a.org", 0.0, 0.95), judged("b.org", 0.1, 0.8)])
    p = decide(two)
    assert p.verdict == Verdict.REFUTED and p.confidence == round(min(1 - p.score / 100, 0.95), 3) > 0.9
    fc = compute_features([judged("snopes.com", 0.0, 0.9, method="factcheck", fc=Verdict.REFUTED)])
    assert fc.fc_refuted and decide(fc).verdict == Verdict.REFUTED


def test_contested_evidence_is_mixed():
    f = compute_features([judged("a.org", 0.9, 0.0), judged("b.org", 0.85, 0.0), judged("c.org", 0.0, 0.6)])
    assert decide(f).verdict == Verdict.MIXED
    g = compute_features([judged("a.org", 0.55, 0.0), judged("c.org", 0.0, 0.9), judged("d.org", 0.0, 0.8)])
    assert decide(g).verdict == Verdict.MIXED  # strong refutation against real support: contested too
    assert decide(g).confidence == 0.55


def test_support_with_moderate_contradiction_is_not_supported():
    f = compute_features([judged("a.org", 0.9, 0.0), judged("b.org", 0.85, 0.0), judged("c.org", 0.0, 0.45)])
    assert decide(f).verdict == Verdict.NOT_ENOUGH_EVIDENCE  # c_max ≥ .40 blocks SUPPORTED, < .50 isn't contested


def test_matching_misleading_fact_check():
    f = compute_features([judged("politifact.com", 0.4, 0.4, method="factcheck", fc=Verdict.MISLEADING)])
    assert decide(f).verdict == Verdict.MISLEADING


def test_confidence_caps():
    f = Features(e_max=0.3, c_max=0.1, n_evidence=2)
    assert confidence_cap(Verdict.NOT_ENOUGH_EVIDENCE, f, 40) == 0.7
    assert confidence_cap(Verdict.SUPPORTED, f, 40) == 0.3  # capped by e_max
    assert confidence_cap(Verdict.REFUTED, f, 40) == 0.1  # capped by c_max
    g = Features(e_max=0.9, c_max=0.9, n_evidence=2)
    assert confidence_cap(Verdict.SUPPORTED, g, 40) == 0.4 and confidence_cap(Verdict.REFUTED, g, 40) == 0.6
