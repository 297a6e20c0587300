"""Judging one claim from its gathered evidence, and combining the claims of one message.

Public API (the engine calls these; everything else in core/ranking, stance, numeric, scoring and
adjudicate is theirs to use too, but these two are the contract):

    async def verify_claim(claim: ClaimQuery, evidence: list[Evidence], *, embedder: TextEmbedder,
                           llm: LLM | None = None, rules: DomainRules | None = None,
                           english: str | None = None, now: datetime | None = None) -> ClaimVerdict

    def aggregate(verdicts: Sequence[ClaimVerdict]) -> Aggregate

    def sufficient(verdict: ClaimVerdict) -> bool    # for the engine's search-more loop

`verify_claim`: rank (dedupe, listing-page filter, relevance with the real embedder, credibility with the
admins' rules, ≤ 2 per domain, recency) → stance per item (LLM batched, or offline; the LLM's call starts on
the model-free shortlist and runs while the evidence is embedded) → numeric/date check →
features, score and policy verdict (core/verdict/scoring.py) → adjudication (LLM with validation, or offline template).
Never raises for LLM trouble (each stage degrades and says so in `notes`). No usable evidence →
NOT_ENOUGH_EVIDENCE without asking the LLM for a verdict (a stance call already out for a shortlist that
the embedding step then found off-topic is cancelled). `english` is the claim's English translation from query planning
(core/evidence/queries.py), used for relevance so English evidence ranks for a non-English claim.

`aggregate` combines sub-claims of one message:
any REFUTED → REFUTED; else any MIXED or MISLEADING → MIXED; else all SUPPORTED → SUPPORTED;
else NOT_ENOUGH_EVIDENCE. One false sub-claim makes the message false as sent: a message is judged as a
whole, and "mostly right" messages are how false details spread. Confidence: REFUTED takes the strongest
refutation; SUPPORTED the weakest support (every part must hold); the others the lowest per-claim value.
Citations are merged, deduped by URL and renumbered 1..n; each claim's reasoning is rewritten to the new
numbers and kept in the per-claim breakdown.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from core.verdict.adjudicate import adjudicate
from core.evidence.credibility import DomainRules
from core.encoders.text_embedder import TextEmbedder
from core.evidence.base import ClaimQuery, Evidence
from core.llm.client import LLM
from schema.models import Citation, Verdict
from core.numeric import NumericCheck, compare
from core.evidence.ranking import rank_shortlist, shortlist
from core.verdict.scoring import Features, Judged, compute_features, decide
from core.verdict.stance import judge_stances, llm_stances, with_fallbacks


class EvidenceJudgement(BaseModel):
    """What the judge made of one ranked piece of evidence (for the trace and /evidence)."""

    url: str
    domain: str
    title: str = ""
    relevance: float
    credibility: float
    recency: float
    rank_score: float
    stance: Literal["supports", "refutes", "neutral"]
    supports: float
    refutes: float
    neutral: float
    stance_method: Literal["llm", "factcheck", "offline"]
    numeric: Literal["agree", "disagree", "n/a"]
    numeric_detail: str = ""
    note: str = ""


class ClaimVerdict(BaseModel):
    claim: str
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)
    score: int = Field(ge=0, le=100, description="The 0-100 truth score: high = supported, low = refuted.")
    reasoning: str
    citations: list[Citation] = Field(default_factory=list)
    features: Features
    stances: list[EvidenceJudgement] = Field(default_factory=list)
    policy_verdict: Verdict
    policy_rule: str = ""
    mode: Literal["llm", "offline"] = "offline"
    notes: list[str] = Field(default_factory=list, description="Trace: drops, fallbacks, guard decisions.")


class Aggregate(BaseModel):
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str
    citations: list[Citation] = Field(default_factory=list)
    claims: list[ClaimVerdict] = Field(default_factory=list, description="Per-claim, renumbered to `citations`.")
    rule: str = ""


async def verify_claim(claim: ClaimQuery, evidence: list[Evidence], *, embedder: TextEmbedder, llm: LLM | None = None,
                       rules: DomainRules | None = None, english: str | None = None,
                       now: datetime | None = None) -> ClaimVerdict:
    notes: list[str] = []
    texts = [claim.claim] + ([english] if english and english.strip() != claim.claim.strip() else [])
    short = shortlist(texts, evidence, rules=rules, now=now)
    # Stance is judged against the claim as the user wrote it (its errors are the point); the LLM reads
    # any language, and the offline fact-check match uses the best relevance over claim and translation.
    # The LLM's stance call needs no relevance: it starts on the shortlist now and the embedding step
    # runs during it, instead of before it. Items the embedding step then drops (off-topic, a rewrite
    # of another) were judged for nothing and are not used.
    shortlisted = [ev for ev, _, _ in short.items]
    early = asyncio.create_task(llm_stances(claim.claim, shortlisted, llm)) if llm is not None and shortlisted else None
    try:
        ranking = await rank_shortlist(texts, short, embedder=embedder, now=now)
    except BaseException:
        if early is not None:
            early.cancel()
        raise
    for url, reason in ranking.dropped:
        notes.append(f"dropped {url}: {reason}")
    items = ranking.items
    evs, rels = [r.evidence for r in items], [r.relevance for r in items]
    if early is not None and items:
        by_item = dict(zip(map(id, shortlisted), await early))
        stances = with_fallbacks(claim.claim, evs, rels, [by_item[id(ev)] for ev in evs])
    else:
        if early is not None:  # nothing usable: no verdict needs the LLM
            early.cancel()
            await asyncio.gather(early, return_exceptions=True)
        stances = await judge_stances(claim.claim, evs, rels)  # offline stances (none when nothing is usable)
    judged = [Judged(r, s, _numeric(claim.claim, r.evidence)) for r, s in zip(items, stances)]
    features = compute_features(judged)
    policy = decide(features)
    adj = await adjudicate(claim.claim, judged, features, policy, llm=llm if items else None,
                           language=claim.language)
    notes += [s.note for s in stances if s.note and s.method == "llm"] + adj.notes
    if any("LLM unavailable" in s.note for s in stances):
        notes.append("stance: LLM unavailable for some passages; offline stance used")
    mode: Literal["llm", "offline"] = "llm" if (adj.mode == "llm" or any(s.method == "llm" for s in stances)) else "offline"
    return ClaimVerdict(
        claim=claim.claim, verdict=adj.verdict, confidence=adj.confidence, score=policy.score,
        reasoning=adj.reasoning, citations=adj.citations, features=features,
        stances=[_judgement(j) for j in judged], policy_verdict=policy.verdict, policy_rule=policy.rule,
        mode=mode, notes=list(dict.fromkeys(notes)))


def _numeric(claim: str, ev: Evidence) -> NumericCheck:
    # A fact-check's snippet is the claim it checked, not a statement of fact: its numbers echo the
    # claim's and say nothing about the truth. Its rating speaks through the stance instead.
    if ev.source_type == "factcheck":
        return NumericCheck("n/a", "fact-check: its rating is the evidence")
    return compare(claim, f"{ev.title}. {ev.snippet}")


def _judgement(j: Judged) -> EvidenceJudgement:
    r, s = j.ranked, j.stance
    return EvidenceJudgement(
        url=r.evidence.url, domain=r.domain, title=r.evidence.title, relevance=round(r.relevance, 4),
        credibility=r.credibility, recency=round(r.recency, 4), rank_score=round(r.score, 4), stance=s.label,
        supports=s.supports, refutes=s.refutes, neutral=s.neutral, stance_method=s.method,
        numeric=j.numeric.result, numeric_detail=j.numeric.detail, note=s.note)


MIN_RELEVANT = 2  # the sufficiency rule: at least 2 relevant pieces


def sufficient(verdict: ClaimVerdict) -> bool:
    """Enough to stop searching: ≥ 2 relevant pieces of evidence and a settled, non-conflicting verdict.
    NOT_ENOUGH_EVIDENCE and MIXED (conflicting evidence) are worth another, wider search."""
    return len(verdict.stances) >= MIN_RELEVANT and verdict.verdict in (
        Verdict.SUPPORTED, Verdict.REFUTED, Verdict.MISLEADING)


_MARKER = re.compile(r"\[(\d+)\]")


def aggregate(verdicts: Sequence[ClaimVerdict]) -> Aggregate:
    """Combine sub-claim verdicts (rule in the module docstring)."""
    if not verdicts:
        return Aggregate(verdict=Verdict.NOT_ENOUGH_EVIDENCE, confidence=0.0, reasoning="No claims to check.",
                         rule="no claims")
    merged: list[Citation] = []
    index: dict[str, int] = {}
    renumbered: list[ClaimVerdict] = []
    for cv in verdicts:
        mapping: dict[int, int] = {}
        new_cits: list[Citation] = []
        for c in cv.citations:
            if c.url not in index:
                index[c.url] = len(merged) + 1
                merged.append(c.model_copy(update={"n": index[c.url]}))
            mapping[c.n] = index[c.url]
            new_cits.append(c.model_copy(update={"n": index[c.url]}))
        text = _MARKER.sub(lambda m: f"[{mapping[int(m.group(1))]}]" if int(m.group(1)) in mapping else "",
                           cv.reasoning)
        renumbered.append(cv.model_copy(update={"citations": new_cits, "reasoning": text}))

    vs = [cv.verdict for cv in verdicts]
    confs = [cv.confidence for cv in verdicts]
    if Verdict.REFUTED in vs:
        verdict, rule = Verdict.REFUTED, "a sub-claim is refuted"
        conf = max(cv.confidence for cv in verdicts if cv.verdict == Verdict.REFUTED)
    elif Verdict.MIXED in vs or Verdict.MISLEADING in vs:
        verdict, rule, conf = Verdict.MIXED, "a sub-claim is mixed or misleading", min(confs)
    elif all(v == Verdict.SUPPORTED for v in vs):
        verdict, rule, conf = Verdict.SUPPORTED, "every sub-claim is supported", min(confs)
    else:
        verdict, rule, conf = Verdict.NOT_ENOUGH_EVIDENCE, "some sub-claims could not be settled", min(confs)
    if len(verdicts) == 1:
        return Aggregate(verdict=verdicts[0].verdict, confidence=verdicts[0].confidence,
                         reasoning=renumbered[0].reasoning, citations=merged, claims=renumbered, rule="one claim")
    reasoning = " ".join(f"“{cv.claim}” — {cv.verdict.label}: {cv.reasoning}" for cv in renumbered)
    return Aggregate(verdict=verdict, confidence=round(conf, 3), reasoning=reasoning, citations=merged,
                     claims=renumbered, rule=rule)
