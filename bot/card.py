"""The verdict card's layout, written once for every platform.

`card(reply, markup)` decides what the card says and in which order (headline, the checked text,
reasoning, the claims, the sources, related fact-checks, "also reported by", notes, the check id); each
platform only supplies its `Markup` (escaping, bold, italic, link, code: Telegram HTML, Slack mrkdwn,
plain terminal text) and draws the sections it gets back (Telegram: lines of one message; Slack: Block
Kit sections and context blocks; the terminal: wrapped lines). The evidence view (bot/evidence.py) and
review notices (bot/notify.py) are written through the same primitives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from bot.render import Reply, Reporter
from core.verdict.adjudicate import MAX_CITATIONS
from bot.outside import LINKS, NAMES

if TYPE_CHECKING:
    from bot.requests import CheckRequest

QUOTE_CHARS = 160  # the checked text quoted under the headline


def _plain(value: object) -> str:
    return str(value)


def _same(marked: str) -> str:
    return marked


def _title_only(url: str, title: str) -> str:
    return title  # the terminal shows a source's URL on a line of its own


@dataclass(frozen=True)
class Markup:
    """A platform's primitives. `text` escapes user/web text; `bold`/`italic`/`code` wrap text that is
    already escaped; `link(url, title)` escapes the title itself and links only safe http(s) URLs;
    `reporter` names a chat in "Also reported by" (a link where the platform can make one).
    `claim_chars` clips a quoted sub-claim where the platform's blocks are small."""

    text: Callable[[object], str] = _plain
    bold: Callable[[str], str] = _same
    italic: Callable[[str], str] = _same
    link: Callable[[str, str], str] = _title_only
    code: Callable[[str], str] = _same
    reporter: Callable[[Reporter], str] | None = None
    claim_chars: int | None = None

    def name(self, r: Reporter) -> str:
        if self.reporter is not None:
            return self.reporter(r)
        return self.link(r.link, r.name) if r.link else self.text(r.name)


PLAIN = Markup()  # the terminal: nothing to escape, links are shown as their URL on a line of their own


@dataclass(frozen=True)
class Line:
    text: str  # in the platform's markup
    url: str = ""  # the line's source URL, for platforms that show it on its own line (the terminal)


SectionKind = Literal["headline", "quote", "body", "claims", "sources", "related", "reported", "aside", "notes",
                      "footer"]


@dataclass(frozen=True)
class Section:
    """One part of the card. `heading` (already bold) tops a list (claims, sources, related); `lines` are
    the rest."""

    kind: SectionKind
    lines: list[Line] = field(default_factory=list)
    heading: str = ""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def checked_line(request: CheckRequest, reply: Reply, m: Markup) -> str:
    """"Checked: “…” (forwarded from …)", the checked text quoted short."""
    line = reply.t("card.checked", text=m.text(clip(" ".join(request.text.split()), QUOTE_CHARS)))
    if request.forwarded_from:
        line += f" ({reply.t('card.forwarded_from', who=m.text(request.forwarded_from))})"
    return line


def image_line(reply: Reply, m: Markup) -> str:
    """"Text read from the image: “…”", what the OCR read, quoted short (a screenshot is often a page)."""
    return reply.t("card.image_text", text=m.text(clip(" ".join(reply.image_text.split()), QUOTE_CHARS)))


def mode_text(reply: Reply) -> str:
    """"offline mode" only when nothing left the machine; otherwise the services the check asked are named
    ("no language model · sent to GDELT")."""
    mode = "local" if reply.mode == "offline" and reply.outside else reply.mode
    text = reply.t("card.mode." + mode) if mode in ("offline", "llm", "local") else mode
    if reply.outside:
        names = [reply.t("card.linked_pages") if s == LINKS else NAMES.get(s, s) for s in reply.outside]
        text += " · " + reply.t("card.asked", names=", ".join(names))
    return text


def card(reply: Reply, m: Markup, request: CheckRequest | None = None) -> list[Section]:
    """The verdict card as sections in `m`'s markup; everything from users or the web goes through `m`."""
    out = [Section("headline", [Line(m.bold(m.text(reply.headline)))])]
    quote = [Line(checked_line(request, reply, m))] if request is not None and request.text.strip() else []
    if reply.image_text:
        quote.append(Line(image_line(reply, m)))
    if quote:
        out.append(Section("quote", quote))
    out.append(Section("body", [Line(m.text(reply.reasoning))] if reply.reasoning else []))
    if reply.claims:
        lines = []
        for i, item in enumerate(reply.claims, 1):
            refs = "".join(f"[{n}]" for n in item.refs)
            claim = clip(item.claim, m.claim_chars) if m.claim_chars else item.claim
            lines.append(Line(f"{i}. {m.text(item.emoji)} {m.text(item.label)} — “{m.text(claim)}”"
                              + (f" {refs}" if refs else "")))
        out.append(Section("claims", lines, m.bold(m.text(reply.t("card.claims")))))
    if reply.citations:
        lines = []
        for c in reply.citations[:MAX_CITATIONS]:
            meta = " — ".join(x for x in (m.text(c.publisher or ""),
                                          c.published_at.isoformat() if c.published_at else "") if x)
            rating = f" · {reply.t('card.rated', rating=m.text(c.rating))}" if c.rating else ""
            lines.append(Line(f"[{c.n}] {m.link(c.url, c.title)}" + (f" — {meta}" if meta else "") + rating,
                              url=c.url))
        out.append(Section("sources", lines, m.bold(m.text(reply.t("card.sources")))))
    if reply.related:
        lines = []
        for r in reply.related:
            who = f" — {m.text(r.publisher)}" if r.publisher else ""
            lines.append(Line(f"• {m.link(r.url, r.claim)} ({m.text(r.rating)}{who}, "
                              f"{reply.t('card.match', score=f'{r.similarity:.0%}')})"))
        out.append(Section("related", lines, m.bold(m.text(reply.related_heading))))
    if reply.also_reported is not None:
        out.append(Section("reported", [Line(reply.also_reported.text(name=m.name, outlet=m.text))]))
    if reply.repeat_note:
        out.append(Section("aside", [Line(m.text(reply.repeat_note))]))
    if reply.notes:
        out.append(Section("notes", [Line(reply.t("card.note", note=m.text(n))) for n in reply.notes]))
    out.append(Section("footer", [Line(f"{m.text(reply.t('card.check_id'))}: {m.code(m.text(reply.check_id))} · "
                                       f"{m.text(mode_text(reply))}")]))
    return out
