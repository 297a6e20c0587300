"""Terminal adapter: renders a Reply as the plain-text verdict card and a Result as JSON."""

from __future__ import annotations

import textwrap

from bot.render import Reply
from core.models import Result

WIDTH = 88


def _wrap(text: str, indent: str = "", hang: str | None = None) -> str:
    if not text:
        return ""
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent if hang is None else hang)


def render_card(reply: Reply) -> str:
    out = [reply.headline, "", _wrap(reply.reasoning)]
    if reply.claims:
        out += ["", reply.t("card.claims")]
        for i, c in enumerate(reply.claims, 1):
            refs = "".join(f"[{n}]" for n in c.refs)
            out.append(_wrap(f"{i}. {c.emoji} {c.label} — “{c.claim}”" + (f" {refs}" if refs else ""), "  ", "     "))
    if reply.citations:
        out += ["", reply.t("card.sources")]
        for c in reply.citations:
            meta = " — ".join(x for x in (c.publisher, c.published_at.isoformat() if c.published_at else "") if x)
            rating = f" · {reply.t('card.rated', rating=c.rating)}" if c.rating else ""
            out.append(_wrap(f"[{c.n}] {c.title}" + (f" — {meta}" if meta else "") + rating, "  ", "      "))
            if c.url:
                out.append(f"      {c.url}")
    if reply.related:
        out += ["", reply.related_heading]
        for r in reply.related:
            who = f" — {r.publisher}" if r.publisher else ""
            out.append(_wrap(f"• {r.claim} ({r.rating}{who}, {reply.t('card.match', score=f'{r.similarity:.2f}')})",
                             "  ", "    "))
    if reply.also_reported is not None:
        out += ["", _wrap(reply.also_reported.text())]
    if reply.repeat_note:
        out += ["", reply.repeat_note]
    if reply.notes:
        out += [""] + [_wrap(reply.t("card.note", note=n)) for n in reply.notes]
    mode = reply.t("card.mode." + reply.mode) if reply.mode in ("offline", "llm") else reply.mode
    out += ["", f"{reply.t('card.check_id')}: {reply.check_id} · {mode}"]
    return "\n".join(out)


def render_json(result: Result) -> str:
    return result.model_dump_json(indent=2)
