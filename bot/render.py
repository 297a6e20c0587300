"""Result -> a platform-neutral Reply: what the verdict card says, decided once for every adapter.

Adapters only turn a Reply into their markup (Telegram HTML, Slack Block Kit, terminal text, JSON)
and escape what came from users and the web.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.models import Citation, Match, Result, Verdict

VERDICT_EMOJI: dict[Verdict, str] = {
    Verdict.SUPPORTED: "✅",
    Verdict.REFUTED: "❌",
    Verdict.MISLEADING: "⚠️",
    Verdict.MIXED: "🌓",
    Verdict.NOT_ENOUGH_EVIDENCE: "❔",
    Verdict.NOT_CHECKABLE: "💬",
}

MAX_CITATIONS = 5


@dataclass(frozen=True)
class RelatedItem:
    claim: str
    rating: str
    publisher: str
    url: str
    similarity: float
    tier: str


@dataclass(frozen=True)
class Reply:
    check_id: str
    emoji: str
    label: str
    confidence_pct: int
    reasoning: str
    citations: list[Citation]
    related_heading: str
    related: list[RelatedItem]
    notes: list[str] = field(default_factory=list)
    mode: str = "offline"

    @property
    def headline(self) -> str:
        return f"{self.emoji} {self.label} · confidence {self.confidence_pct}%"


def _related(m: Match) -> RelatedItem:
    return RelatedItem(claim=m.claim, rating=m.rating_text or m.verdict.label, publisher=m.publisher, url=m.url,
                       similarity=m.similarity, tier=m.tier)


def to_reply(result: Result) -> Reply:
    shown = [m for m in result.matches if m.tier in ("auto", "suggest")] or result.matches
    if any(m.tier == "auto" for m in shown):
        heading = "Previously fact-checked"
    elif any(m.tier == "suggest" for m in shown):
        heading = "Possibly related fact-checks"
    else:
        heading = "Closest fact-checks (not the same claim)"
    return Reply(
        check_id=result.id, emoji=VERDICT_EMOJI[result.verdict], label=result.label,
        confidence_pct=round(result.confidence * 100), reasoning=result.reasoning,
        citations=result.citations[:MAX_CITATIONS], related_heading=heading,
        related=[_related(m) for m in shown[:3]], notes=list(result.notes), mode=result.mode,
    )
