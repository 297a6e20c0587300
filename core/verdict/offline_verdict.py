"""The offline verdict: what tipline may honestly say with no LLM and no web, from matches alone.

A verdict is only ever inherited from a previous fact-check that is, with high calibrated probability,
the same claim (tier "auto"); otherwise the answer is NOT_ENOUGH_EVIDENCE with what came closest (at or
above the measured floor for related fact-checks). Never a guessed verdict. The confidence is the
probability that the verdict shown is right (core/matching/confidence.py); Unverified carries none.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.matching.confidence import ConfidenceMap, default_map
from core.i18n import t
from schema.models import Citation, Match, Verdict


@dataclass(frozen=True)
class OfflineVerdict:
    verdict: Verdict
    confidence: float
    reasoning: str
    citations: list[Citation]
    matches: list[Match]
    notes: list[str]
    inherited_from: str | None = None  # the fact-check whose rating is the verdict, when one is


def _citation(n: int, m: Match, lang: str = "en") -> Citation:
    unrated = not m.rating_text and m.verdict == Verdict.NOT_ENOUGH_EVIDENCE
    return Citation(n=n, url=m.url, title=m.title or m.claim, publisher=m.publisher, published_at=m.published_at,
                    snippet=m.claim, rating="" if unrated else m.rating_text or t(f"label.{m.verdict.value}", lang))


def _when(m: Match, lang: str) -> str:
    return t("offline.when", lang, date=m.published_at.isoformat()) if m.published_at else ""


def _rating(m: Match, lang: str) -> str:
    return m.rating_text or t(f"label.{m.verdict.value}", lang)


def decide(text: str, matches: list[Match], closest: int = 3, language: str = "en",
           calibration: ConfidenceMap | None = None, disputed: bool = False) -> OfflineVerdict:
    """`language` is the reply language (the user's). `calibration` maps a match probability to the
    probability that the inherited verdict is right (core/matching/confidence.py; the shipped map by default).
    `disputed`: the message disputes the top `auto` match's claim (core/matching/denial.py decides)."""
    lang = language
    cal = calibration or default_map()
    auto = [m for m in matches if m.tier == "auto"]
    # Below the measured floor a "possibly related" fact-check is as likely noise as related: not listed.
    # The same-claim decision's `related` threshold is that floor already (method "decided").
    suggest = [m for m in matches if m.tier == "suggest"
               and (m.method == "decided" or m.similarity >= cal.floor_for(text, m.claim))]
    notes: list[str] = []

    if auto:
        top = auto[0]
        who = top.publisher or t("offline.a_factchecker", lang)
        # A message that disputes the checked claim ("5G does NOT cause COVID") matches it just as
        # closely as one repeating it; inheriting the rating would invert the answer, so it is shown, not applied.
        if top.method != "url" and disputed:
            notes.append(t("note.negated", lang))
            # One story: the fact-check is of this claim (listed as such), only its rating is withheld.
            reasoning = t("offline.negated", lang, who=who, when=_when(top, lang),
                          claim=top.claim, rating=_rating(top, lang))
            listed = [top] + suggest[:closest - 1]
            return OfflineVerdict(Verdict.NOT_ENOUGH_EVIDENCE, 0.0, reasoning,
                                  [_citation(i, m, lang) for i, m in enumerate(listed, start=1)], listed, notes)
        if not top.rating_text and top.verdict == Verdict.NOT_ENOUGH_EVIDENCE:
            # Stored unrated (a rating ingest could not read): the fact-check is this claim's, but there is
            # no rating to pass on, and "Unverified" must not read as one.
            reasoning = t("offline.unrated", lang, who=who, when=_when(top, lang), claim=top.claim)
            return OfflineVerdict(Verdict.NOT_ENOUGH_EVIDENCE, 0.0, reasoning, [_citation(1, top, lang)], matches,
                                  notes)
        agreeing = [m for m in auto if m.verdict == top.verdict]
        conflicting = [m for m in auto if m.verdict != top.verdict]
        cited = agreeing[:3] + conflicting[:2]
        citations = [_citation(i, m, lang) for i, m in enumerate(cited, start=1)]
        reasoning = t("offline.matched", lang, who=who, when=_when(top, lang), claim=top.claim,
                      rating=_rating(top, lang))
        # The probability that the verdict shown is right: the top match being the same claim, through
        # the calibration fitted for exactly that (before: min(p, 0.99), over-confident where a
        # message's own fact-check is missing). An exact link match is reported as such.
        confidence = (top.similarity if top.method == "url" else min(top.similarity, 0.99) if top.method == "decided"
                      else cal.inherited(top.similarity))
        if len(agreeing) > 1:
            refs = "".join(f"[{i}]" for i in range(2, len(agreeing[:3]) + 1))
            reasoning += t("offline.more_agree", lang, n=len(agreeing) - 1, refs=refs)
        if conflicting:
            first = len(agreeing[:3]) + 1
            other = conflicting[0]
            reasoning += t("offline.conflict", lang, n=first, rating=_rating(other, lang))
            confidence *= 0.7
            notes.append(t("note.disagree", lang))
        return OfflineVerdict(top.verdict, round(min(max(confidence, 0.0), 1.0), 3), reasoning, citations,
                              matches, notes, inherited_from=top.url)

    related = suggest[:closest]
    citations = [_citation(i, m, lang) for i, m in enumerate(related, start=1)]
    if related:
        reasoning = t("offline.closest", lang, items=" ".join(f"“{m.claim}” [{i}]." for i, m in enumerate(related, 1)))
    else:
        reasoning = t("offline.nothing", lang)
    notes.append(t("note.offline", lang))
    # No verdict, so no confidence in one: 0, and cards print none (bot/card_words.py).
    return OfflineVerdict(Verdict.NOT_ENOUGH_EVIDENCE, 0.0, reasoning, citations, related, notes)
