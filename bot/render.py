"""Result -> a platform-neutral Reply: what the verdict card says, decided once for every adapter.

Adapters only turn a Reply into their markup (Telegram HTML, Slack Block Kit, terminal text, JSON)
and escape what came from users and the web.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from bot.card_words import confidence_words, related_heading, related_matches, shown_confidence
from core.verdict.adjudicate import MAX_CITATIONS  # a card shows every citation a verdict may carry
from core.i18n import t
from bot.outside import outside_sources
from schema.models import AlsoReported, Citation, Match, ReportedBy, Result, Verdict

VERDICT_EMOJI: dict[Verdict, str] = {
    Verdict.SUPPORTED: "✅",
    Verdict.REFUTED: "❌",
    Verdict.MISLEADING: "⚠️",
    Verdict.MIXED: "🌓",
    Verdict.NOT_ENOUGH_EVIDENCE: "❔",
    Verdict.NOT_CHECKABLE: "💬",
}


@dataclass(frozen=True)
class RelatedItem:
    claim: str
    rating: str
    publisher: str
    url: str
    similarity: float
    tier: str


@dataclass(frozen=True)
class Reporter:
    """One name in the "Also reported by" line; adapters link it where their platform allows."""

    name: str
    link: str = ""
    platform: str = ""
    chat_id: str = ""


@dataclass(frozen=True)
class AlsoReportedLine:
    """`Also reported by: @chan1, @chan2, @chan3 (+N more) · first seen 3 h ago in @chan4`."""

    reporters: list[Reporter]  # top 3 by credibility, then earliest
    more: int  # other chats not named
    first_seen_ago: str = ""  # "3 h ago"
    first_seen_in: Reporter | None = None
    outlets: list[str] = field(default_factory=list)  # news domains: "reuters.com, bbc.com"
    tier: str = "low"
    note: str = ""

    def text(self, name=lambda r: r.name, outlet=lambda d: d) -> str:
        """The line with `name(reporter)` / `outlet(domain)` rendering each part (escaping is theirs)."""
        parts: list[str] = []
        if self.reporters:
            line = "Also reported by: " + ", ".join(name(r) for r in self.reporters)
            if self.more:
                line += f" (+{self.more} more)"
            if self.first_seen_in is not None and self.first_seen_ago:
                line += f" · first seen {self.first_seen_ago} in {name(self.first_seen_in)}"
            parts.append(line)
        if self.outlets:
            parts.append(("News: " if parts else "Also reported by: ") + ", ".join(outlet(d) for d in self.outlets))
        tier = f"Corroboration: {self.tier}" + (f" ({self.note})" if self.note else "")
        return " · ".join(parts + [tier])


def ago(then: datetime, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    s = max(0.0, (now - then).total_seconds())
    if s < 90:
        return "just now"
    if s < 3600:
        return f"{round(s / 60)} min ago"
    if s < 2 * 86400:
        return f"{round(s / 3600)} h ago"
    return f"{round(s / 86400)} d ago"


def _reporter(r: ReportedBy) -> Reporter:
    return Reporter(name=r.name, link=r.link, platform=r.platform, chat_id=r.chat_id)


def also_reported_line(a: AlsoReported | None, now: datetime | None = None) -> AlsoReportedLine | None:
    if a is None or (not a.items and not a.outlets):
        return None
    first = a.first_seen_in
    return AlsoReportedLine(
        reporters=[_reporter(r) for r in a.items[:3]], more=max(0, a.total - min(3, len(a.items))),
        first_seen_ago=ago(a.first_seen_at, now) if a.first_seen_at else "",
        first_seen_in=_reporter(first) if first is not None else None, outlets=list(a.outlets),
        tier=a.tier, note=a.note)


@dataclass(frozen=True)
class ClaimLine:
    """One sub-claim in the card's breakdown: `1. ❌ False — “claim” [1][2]`."""

    emoji: str
    label: str
    claim: str
    refs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Reply:
    check_id: str
    emoji: str
    label: str
    confidence_pct: int | None  # None: no verdict, so no percentage (bot/card_words.py)
    reasoning: str
    citations: list[Citation]
    related_heading: str
    related: list[RelatedItem]
    notes: list[str] = field(default_factory=list)
    mode: str = "offline"
    also_reported: AlsoReportedLine | None = None
    repeat_note: str = ""  # "Checked 14 times this week" when a stored verdict was reused
    lang: str = "en"  # the reply language: the checked message's
    claims: list[ClaimLine] = field(default_factory=list)  # the breakdown, when there are several claims
    image_text: str = ""  # what was read from an attached image, quoted short on the card
    outside: list[str] = field(default_factory=list)  # outside services the check asked (bot/outside.py)

    def t(self, key: str, **values: object) -> str:
        """The card's fixed words in the reply language (adapters escape what they interpolate)."""
        return t(key, self.lang, **values)

    @property
    def headline(self) -> str:
        return f"{self.emoji} {self.label} · {confidence_words(self.confidence_pct, self.lang)}"


def _related(m: Match) -> RelatedItem:
    return RelatedItem(claim=m.claim, rating=m.rating_text or m.verdict.label, publisher=m.publisher, url=m.url,
                       similarity=m.similarity, tier=m.tier)


def to_reply(result: Result) -> Reply:
    shown = related_matches(result.matches, result.text)
    lang = result.language
    heading = related_heading(shown, lang)
    return Reply(
        check_id=result.id, emoji=VERDICT_EMOJI[result.verdict], label=result.label,
        confidence_pct=shown_confidence(result.verdict, result.confidence), reasoning=result.reasoning,
        citations=result.citations[:MAX_CITATIONS], related_heading=heading,
        related=[_related(m) for m in shown[:3]], notes=list(result.notes), mode=result.mode,
        outside=outside_sources(result),
        also_reported=also_reported_line(result.also_reported),
        repeat_note=(f"Checked {result.repetition.times_this_week} times this week · verdict of check "
                     f"{result.repetition.first_check_id} reused" if result.repetition else ""),
        lang=lang,
        claims=[ClaimLine(emoji=VERDICT_EMOJI[c.verdict], label=c.label, claim=c.claim, refs=list(c.citations))
                for c in result.claims],
        image_text=result.image_text,
    )
