"""Terminal adapter: renders a Reply as the plain-text verdict card and a Result as JSON."""

from __future__ import annotations

import textwrap

from bot.card import PLAIN, card
from bot.render import Reply
from schema.models import Result

WIDTH = 88


def _wrap(text: str, indent: str = "", hang: str | None = None) -> str:
    if not text:
        return ""
    return textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent if hang is None else hang)


# (indent, hang) of each list's lines: the hang lines a wrapped item up under its text.
_HANG = {"claims": ("  ", "     "), "sources": ("  ", "      "), "related": ("  ", "    ")}
_UNWRAPPED = {"aside", "footer"}


def render_card(reply: Reply) -> str:
    """The verdict card (bot/card.py) as wrapped terminal text; a source's URL goes on a line of its own."""
    out: list[str] = []
    for section in card(reply, PLAIN):
        if section.kind == "headline":
            out += [line.text for line in section.lines]
            continue
        if section.kind == "body":
            out += ["", _wrap(section.lines[0].text if section.lines else "")]
            continue
        out.append("")
        if section.kind in _HANG:
            out.append(section.heading)
        indent, hang = _HANG.get(section.kind, ("", ""))
        for line in section.lines:
            out.append(line.text if section.kind in _UNWRAPPED else _wrap(line.text, indent, hang))
            if line.url:
                out.append(f"      {line.url}")
    return "\n".join(out)


def render_json(result: Result) -> str:
    return result.model_dump_json(indent=2)
