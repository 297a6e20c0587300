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
    if reply.citations:
        out += ["", "Sources"]
        for c in reply.citations:
            meta = " — ".join(x for x in (c.publisher, c.published_at.isoformat() if c.published_at else "") if x)
            rating = f" · rated “{c.rating}”" if c.rating else ""
            out.append(_wrap(f"[{c.n}] {c.title}" + (f" — {meta}" if meta else "") + rating, "  ", "      "))
            if c.url:
                out.append(f"      {c.url}")
    if reply.related:
        out += ["", reply.related_heading]
        for r in reply.related:
            who = f" — {r.publisher}" if r.publisher else ""
            out.append(_wrap(f"• {r.claim} ({r.rating}{who}, match {r.similarity:.2f})", "  ", "    "))
    if reply.notes:
        out += [""] + [_wrap(f"Note: {n}") for n in reply.notes]
    out += ["", f"Check id: {reply.check_id} · {reply.mode} mode"]
    return "\n".join(out)


def render_json(result: Result) -> str:
    return result.model_dump_json(indent=2)
