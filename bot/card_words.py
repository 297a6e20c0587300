"""One story per card: what a verdict card may say about its confidence and its related fact-checks,
decided once for every platform (bot/render.py asks; the adapters only draw).

- The percentage is the probability that the verdict shown is right (core/matching/confidence.py). An
  Unverified card has no verdict, so it prints no percentage: "no verdict", and its reasoning says why.
- Related fact-checks follow their tier: `auto` ones are "Previously fact-checked", `suggest` ones
  "Possibly related" and only at or above the measured floor; tier `none` is never listed (three
  unrelated fact-checks at match 0.05 / 0.02 / 0.01 used to be shown as Sources of "Pineapple on pizza
  is disgusting").
"""

from __future__ import annotations

from core.matching.confidence import default_map
from core.i18n import t
from schema.models import Match, Verdict


def shown_confidence(verdict: Verdict, confidence: float) -> int | None:
    """The percentage a card prints, or None when there is no verdict to be confident in."""
    if verdict == Verdict.NOT_ENOUGH_EVIDENCE:
        return None
    return round(confidence * 100)


def confidence_words(pct: int | None, language: str) -> str:
    """The headline's second half: "confidence 93%", or "no verdict" for an Unverified card."""
    return t("card.no_verdict", language) if pct is None else t("card.confidence", language, pct=pct)


def related_matches(matches: list[Match], message: str) -> list[Match]:
    """The fact-checks a card lists: every `auto` match, then `suggest` ones at or above the floor."""
    cal = default_map()
    return [m for m in matches
            if m.tier == "auto" or (m.tier == "suggest" and m.similarity >= cal.floor_for(message, m.claim))]


def related_heading(listed: list[Match], language: str) -> str:
    """The heading over the listed fact-checks, from the best tier among them."""
    return t("related.auto" if any(m.tier == "auto" for m in listed) else "related.suggest", language)
