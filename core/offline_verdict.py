"""The offline verdict: what tipline may honestly say with no LLM and no web, from matches alone.

A verdict is only ever inherited from a previous fact-check that is, with high calibrated probability,
the same claim (tier "auto"); otherwise the answer is NOT_ENOUGH_EVIDENCE with what came closest.
Never a guessed verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.i18n import t
from schema.models import Citation, Match, Verdict
from core.negation import contradicts


@dataclass(frozen=True)
class OfflineVerdict:
    verdict: Verdict
    confidence: float
    reasoning: str
    citations: list[Citation]
    matches: list[Match]
    notes: list[str]


def _citation(n: int, m: Match, lang: str = "en") -> Citation:
    return Citation(n=n, url=m.url, title=m.title or m.claim, publisher=m.publisher, published_at=m.published_at,
                    snippet=m.claim, rating=m.rating_text or t(f"label.{m.verdict.value}", lang))


def _when(m: Match, lang: str) -> str:
    return t("offline.when", lang, date=m.published_at.isoformat()) if m.published_at else ""


def decide(text: str, matches: list[Match], closest: int = 3, language: str = "en") -> OfflineVerdict:
    """`language` is the reply language (the user's)."""
    lang = language
    auto = [m for m in matches if m.tier == "auto"]
    suggest = [m for m in matches if m.tier == "suggest"]
    notes: list[str] = []

    if auto:
        top = auto[0]
        # A message that negates the checked claim ("5G does NOT cause COVID") matches it just as
        # closely as one repeating it; inheriting the rating would invert the answer. Matching alone
        # cannot tell which side the user is on, so say so instead of guessing. Polarity is judged
        # against the claim (core/negation.py), not by counting negation words: "NASA never went to
        # the moon" agrees with "the moon landings were faked", "vaccines don't cause autism" with
        # "Vaccines do not cause autism".
        if top.method != "url" and contradicts(text, top.claim):
            notes.append(t("note.negated", lang))
            suggest = auto + suggest
            auto = []
        else:
            agreeing = [m for m in auto if m.verdict == top.verdict]
            conflicting = [m for m in auto if m.verdict != top.verdict]
            cited = agreeing[:3] + conflicting[:2]
            citations = [_citation(i, m, lang) for i, m in enumerate(cited, start=1)]
            reasoning = t("offline.matched", lang, who=top.publisher or t("offline.a_factchecker", lang),
                          when=_when(top, lang), claim=top.claim,
                          rating=top.rating_text or t(f"label.{top.verdict.value}", lang))
            # A match probability rounds to 1.0 for near-identical text, but no similarity makes a
            # verdict certain; only an exact link match (method "url") is reported as such.
            confidence = top.similarity if top.method == "url" else min(top.similarity, 0.99)
            if len(agreeing) > 1:
                refs = "".join(f"[{i}]" for i in range(2, len(agreeing[:3]) + 1))
                reasoning += t("offline.more_agree", lang, n=len(agreeing) - 1, refs=refs)
            if conflicting:
                first = len(agreeing[:3]) + 1
                other = conflicting[0]
                reasoning += t("offline.conflict", lang, n=first,
                               rating=other.rating_text or t(f"label.{other.verdict.value}", lang))
                confidence *= 0.7
                notes.append(t("note.disagree", lang))
            return OfflineVerdict(top.verdict, round(min(max(confidence, 0.0), 1.0), 3), reasoning, citations,
                                  matches, notes)

    related = suggest[:closest] or matches[:closest]
    citations = [_citation(i, m, lang) for i, m in enumerate(related, start=1)]
    if suggest:
        reasoning = t("offline.closest", lang, items=" ".join(f"“{m.claim}” [{i}]." for i, m in enumerate(related, 1)))
    else:
        reasoning = t("offline.nothing", lang)
        citations = []
        related = []
    top_p = matches[0].similarity if matches else 0.0
    notes.append(t("note.offline", lang))
    return OfflineVerdict(Verdict.NOT_ENOUGH_EVIDENCE, round(1.0 - top_p, 3), reasoning, citations,
                          related, notes)
