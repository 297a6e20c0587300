"""The evidence features, the truth score and the verdict policy, over the ranked and judged evidence.

Features (on the ranked top items, best first):
- e_max: max entailment (supports) probability; e_mean3: mean entailment of the top-3 ranked passages;
- c_max: max contradiction (refutes) probability;
- agree_dom: unique domains with supports ≥ 0.6 and refutes < 0.5; refute_dom: the mirror image
  (refutes ≥ 0.6 and supports < 0.5), so a refutation also needs ≥ 2 independent domains;
- rel_avg: mean source credibility ("reliability") over the top 3; rec_max: max recency weight;
- num_ok: 1 when some passage's numbers/dates agree with the claim's and none disagree (a small bonus);
  num_bad is its mirror, reported but not scored;
- fc_*: whether a fact-check that matches the claim rated it true/false/misleading.

raw = 0.40·e_max + 0.20·e_mean3 + 0.15·min(agree_dom/3, 1) + 0.15·rel_avg + 0.10·rec_max − 0.25·c_max
      + 0.05·num_ok
score = round(100·sigmoid((raw − 0.5)/0.15))
(where each weight and threshold comes from: docs/decisions/2026-11-29-notes-from-code.md)

Verdict policy (first rule that applies):
1. no usable evidence → NOT_ENOUGH_EVIDENCE;
2. contested: e_max ≥ 0.70 and c_max ≥ 0.50, or c_max ≥ 0.70 and e_max ≥ 0.50 → MIXED (symmetric,
   so strong refutation with real support is contested too);
3. SUPPORTED: e_max ≥ 0.70 and c_max < 0.40 and (agree_dom ≥ 2 or a matching fact-check rated it true);
4. REFUTED: c_max ≥ 0.70 and (refute_dom ≥ 2 or a matching fact-check rated it false) — the independence
   requirement means one page cannot refute alone;
5. a matching fact-check rated it misleading / mixed → MISLEADING / MIXED;
6. otherwise NOT_ENOUGH_EVIDENCE.

Confidence follows the score: SUPPORTED → score/100, REFUTED → 1 − score/100 (a low truth score is a
confident refutation), each capped by the strongest evidence for it (e_max, c_max), MIXED → min(e_max, c_max) (how strongly both sides are present), MISLEADING →
the fact-check's match strength, NOT_ENOUGH_EVIDENCE → 1 − max(e_max, c_max) (sure only that nothing
decisive was found). `confidence_cap` is the same bound applied to an LLM's stated confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from schema.models import Verdict
from core.numeric import NumericCheck
from core.evidence.ranking import Ranked
from core.verdict.stance import Stance

AGREE_ENTAIL, AGREE_CONTRA = 0.6, 0.5
SUPPORT_E, SUPPORT_C = 0.70, 0.40
REFUTE_C = 0.70
CONTESTED_HIGH, CONTESTED_LOW = 0.70, 0.50
MIN_DOMAINS = 2  # SUPPORTED/REFUTED need >= 2 independent domains or a matching fact-check: one page is not enough
NUM_OK_BONUS = 0.05


@dataclass
class Judged:
    """One ranked piece of evidence with its stance and numeric check."""

    ranked: Ranked
    stance: Stance
    numeric: NumericCheck


class Features(BaseModel):
    e_max: float = 0.0
    e_mean3: float = 0.0
    c_max: float = 0.0
    agree_dom: int = 0
    refute_dom: int = 0
    rel_avg: float = 0.0
    rec_max: float = 0.0
    num_ok: int = 0
    num_bad: int = 0
    n_evidence: int = 0
    fc_supported: bool = False
    fc_refuted: bool = False
    fc_misleading: bool = False
    fc_mixed: bool = False
    fc_strength: float = 0.0


class Policy(BaseModel):
    verdict: Verdict
    score: int
    confidence: float
    rule: str


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def compute_features(judged: Sequence[Judged]) -> Features:
    if not judged:
        return Features()
    st = [j.stance for j in judged]
    top3 = judged[:3]
    agree = {j.ranked.domain for j in judged if j.stance.supports >= AGREE_ENTAIL and j.stance.refutes < AGREE_CONTRA}
    refute = {j.ranked.domain for j in judged if j.stance.refutes >= AGREE_ENTAIL and j.stance.supports < AGREE_CONTRA}
    numerics = [j.numeric.result for j in judged]
    fc = [j.stance for j in judged if j.stance.method == "factcheck" or
          (j.stance.factcheck_verdict is not None and j.stance.label != "neutral")]

    def fc_has(v: Verdict, side: str | None) -> bool:
        return any(s.factcheck_verdict == v and (side is None or getattr(s, side) >= SUPPORT_E) for s in fc)

    return Features(
        e_max=round(max(s.supports for s in st), 4),
        e_mean3=round(sum(j.stance.supports for j in top3) / len(top3), 4),
        c_max=round(max(s.refutes for s in st), 4),
        agree_dom=len(agree),
        refute_dom=len(refute),
        rel_avg=round(sum(j.ranked.credibility for j in top3) / len(top3), 4),
        rec_max=round(max(j.ranked.recency for j in judged), 4),
        num_ok=int("agree" in numerics and "disagree" not in numerics),
        num_bad=int("disagree" in numerics and "agree" not in numerics),
        n_evidence=len(judged),
        fc_supported=fc_has(Verdict.SUPPORTED, "supports"),
        fc_refuted=fc_has(Verdict.REFUTED, "refutes"),
        fc_misleading=any(s.factcheck_verdict == Verdict.MISLEADING and s.method == "factcheck" for s in fc),
        fc_mixed=any(s.factcheck_verdict == Verdict.MIXED and s.method == "factcheck" for s in fc),
        fc_strength=round(max((s.confidence for s in fc if s.method == "factcheck"), default=0.0), 4),
    )


def raw_score(f: Features) -> float:
    return (0.40 * f.e_max + 0.20 * f.e_mean3 + 0.15 * min(f.agree_dom / 3, 1.0) + 0.15 * f.rel_avg
            + 0.10 * f.rec_max - 0.25 * f.c_max + NUM_OK_BONUS * f.num_ok)


def score(f: Features) -> int:
    return round(100 * sigmoid((raw_score(f) - 0.5) / 0.15))


def independent_support(f: Features) -> bool:
    return f.agree_dom >= MIN_DOMAINS or f.fc_supported


def independent_refutation(f: Features) -> bool:
    return f.refute_dom >= MIN_DOMAINS or f.fc_refuted


def has_evidence(f: Features) -> bool:
    return f.n_evidence > 0


def confidence_cap(verdict: Verdict, f: Features, s: int) -> float:
    # Never surer than the strongest single piece of evidence for the verdict: a score built on one
    # fact-check match is as reliable as that match.
    if verdict == Verdict.SUPPORTED:
        c = min(s / 100, f.e_max)
    elif verdict == Verdict.REFUTED:
        c = min(1 - s / 100, f.c_max)
    elif verdict == Verdict.MIXED:
        c = min(f.e_max, f.c_max) if (f.e_max and f.c_max) else max(f.fc_strength, 0.5 * max(f.e_max, f.c_max))
    elif verdict == Verdict.MISLEADING:
        c = max(f.fc_strength, min(f.e_max, 1 - f.c_max) * 0.8, 0.3)
    else:
        c = 1 - max(f.e_max, f.c_max)
    return round(min(max(c, 0.0), 1.0), 3)


def decide(f: Features) -> Policy:
    s = score(f)

    def out(v: Verdict, rule: str) -> Policy:
        return Policy(verdict=v, score=s, confidence=confidence_cap(v, f, s), rule=rule)

    if not has_evidence(f):
        return out(Verdict.NOT_ENOUGH_EVIDENCE, "no usable evidence")
    if (f.e_max >= CONTESTED_HIGH and f.c_max >= CONTESTED_LOW) or (f.c_max >= CONTESTED_HIGH and f.e_max >= CONTESTED_LOW):
        return out(Verdict.MIXED, f"contested: e_max {f.e_max:.2f}, c_max {f.c_max:.2f}")
    if f.e_max >= SUPPORT_E and f.c_max < SUPPORT_C and independent_support(f):
        return out(Verdict.SUPPORTED, f"supported: e_max {f.e_max:.2f}, {f.agree_dom} agreeing domain(s)"
                   + (", matching fact-check" if f.fc_supported else ""))
    if f.c_max >= REFUTE_C and independent_refutation(f):
        return out(Verdict.REFUTED, f"refuted: c_max {f.c_max:.2f}, {f.refute_dom} refuting domain(s)"
                   + (", matching fact-check" if f.fc_refuted else ""))
    if f.fc_misleading:
        return out(Verdict.MISLEADING, "a matching fact-check rated it misleading")
    if f.fc_mixed:
        return out(Verdict.MIXED, "a matching fact-check rated it mixed")
    why = "no strong stance"
    if f.e_max >= SUPPORT_E:
        why = f"support from only {f.agree_dom} domain(s)"
    elif f.c_max >= REFUTE_C:
        why = f"refutation from only {f.refute_dom} domain(s)"
    return out(Verdict.NOT_ENOUGH_EVIDENCE, why)
