"""`/evidence <check id>` and the buttons under a verdict card (Sources, 👍, 👎), platform-neutral.

The adapters decide how to send; this module decides what the evidence view says (given the
platform's escaping and link functions), how button payloads look and what a vote answers.
"""

from __future__ import annotations

import re

from bot.card import Markup
from bot.card_words import confidence_words, shown_confidence
from schema.models import Result
from storage.feedback import FeedbackStore
from storage.sqlite import Database

EVIDENCE_USAGE = ("Send /evidence followed by a check id, e.g. /evidence 3f2a9c1b7d "
                  "(the id is at the bottom of every verdict card).")
UNKNOWN_CHECK = "I have no check with that id: copy the id from the bottom of a verdict card."
FEEDBACK_THANKS = "Thanks for the feedback"

_CHECK_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def evidence_arg(args: str) -> str:
    """The check id in the text after `/evidence` (first word, backticks/quotes stripped)."""
    words = args.split()
    return words[0].strip("`'\"“”<>") if words else ""


async def load_check(db: Database, check_id: str) -> Result | None:
    if not _CHECK_ID.match(check_id or ""):
        return None
    return await db.get_check(check_id)


# --- button payloads (Telegram callback_data, at most 64 bytes; Slack uses action_id + value) ---

def callback_data(kind: str, check_id: str) -> str:
    return {"sources": f"src:{check_id}", "up": f"fb:up:{check_id}", "down": f"fb:down:{check_id}"}[kind]


def parse_callback(data: str | None) -> tuple[str, str] | None:
    """("sources" | "up" | "down", check id) or None for data that isn't ours."""
    data = data or ""
    for prefix, kind in (("src:", "sources"), ("fb:up:", "up"), ("fb:down:", "down")):
        if data.startswith(prefix) and _CHECK_ID.match(data[len(prefix):]):
            return kind, data[len(prefix):]
    return None


async def give_feedback(db: Database, check_id: str, platform: str, user_id: object, vote: int) -> str:
    """Store a vote; the short answer for the user."""
    if not _CHECK_ID.match(check_id or ""):
        return UNKNOWN_CHECK
    try:
        await FeedbackStore(db).record(check_id, platform, user_id, vote)
    except KeyError:
        return UNKNOWN_CHECK
    return FEEDBACK_THANKS


# --- the evidence view ---------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def evidence_lines(result: Result, markup: Markup) -> list[str]:
    """The full evidence list and trace of a stored check, one display line per entry, in the platform's
    markup (bot/card.py: `text` escapes user/web text, `link` makes a safe link or only the escaped
    title, `bold`/`code` wrap already-escaped text)."""
    esc, link, bold, code = markup.text, markup.link, markup.bold, markup.code
    out = [bold(f"Evidence for check {code(esc(result.id))}"),
           f"Checked: “{esc(_clip(result.text, 300))}”",
           f"Verdict: {esc(result.label)} · "
           f"{esc(confidence_words(shown_confidence(result.verdict, result.confidence), 'en'))} · "
           f"{esc(result.mode)} mode · {esc(result.created_at.strftime('%Y-%m-%d %H:%M UTC'))}"]
    if result.reasoning:
        out.append(esc(result.reasoning))
    out += ["", bold(f"Citations ({len(result.citations)})")]
    if not result.citations:
        out.append("none")
    for c in result.citations:
        meta = " — ".join(x for x in (esc(c.publisher), c.published_at.isoformat() if c.published_at else "") if x)
        rating = f" · rated “{esc(c.rating)}”" if c.rating else ""
        out.append(f"[{c.n}] {link(c.url, c.title or c.url)}" + (f" — {meta}" if meta else "") + rating)
        if c.url:
            out.append(f"    {link(c.url, c.url)}")
        if c.snippet:
            out.append(f"    “{esc(_clip(c.snippet, 400))}”")
    if result.claims:
        out += ["", bold(f"Claims ({len(result.claims)})")]
        for i, outcome in enumerate(result.claims, 1):
            refs = "".join(f"[{n}]" for n in outcome.citations)
            out.append(f"{i}. “{esc(_clip(outcome.claim, 200))}” — {esc(outcome.label)} · confidence "
                       f"{round(outcome.confidence * 100)}%"
                       + (f" · score {outcome.score}/100" if outcome.score is not None else "")
                       + (f" · {refs}" if refs else ""))
    if result.evidence:
        out += ["", bold(f"Evidence judged ({len(result.evidence)})")]
        for i, e in enumerate(result.evidence, 1):
            scores = " · ".join(x for x in (
                f"relevance {e.relevance:.2f}" if e.relevance is not None else "",
                f"credibility {e.credibility:.2f}" if e.credibility is not None else "") if x)
            out.append(f"{i}. {link(e.url, e.title or e.url)} — {esc(e.stance)}"
                       + (f" · {scores}" if scores else "") + (f" · {esc(e.domain)}" if e.domain else ""))
    if result.sources:
        out += ["", bold(f"Sources searched ({len(result.sources)})")]
        for tr in result.sources:
            state = f"{tr.found} found" if tr.ok else f"failed: {esc(_clip(tr.error, 160))}"
            out.append(f"• {esc(tr.source)} — {tr.ms:.0f} ms — {state}")
    if result.usage is not None and result.usage.calls:
        u = result.usage
        out += ["", f"LLM: {u.calls} call(s), {u.prompt_tokens + u.completion_tokens} tokens, ≈ ${u.usd:.4f}"]
    out += ["", bold(f"Matched fact-checks ({len(result.matches)})")]
    if not result.matches:
        out.append("none")
    for i, m in enumerate(result.matches, 1):
        who = f" by {esc(m.publisher)}" if m.publisher else ""
        out.append(f"{i}. {link(m.url, m.claim)} — rated “{esc(m.rating_text or m.verdict.label)}”{who} · "
                   f"similarity {m.similarity:.2f} · tier {esc(m.tier)} · via {esc(m.method)}")
        if m.url:
            out.append(f"    {link(m.url, m.url)}")
    out += ["", bold(f"Trace ({len(result.steps)} steps)")]
    if not result.steps:
        out.append("none")
    for s in result.steps:
        out.append(f"• {esc(s.name)} — {s.ms:.1f} ms" + (f" — {esc(s.detail)}" if s.detail else ""))
    if result.notes:
        out += ["", bold("Notes")] + [f"• {esc(n)}" for n in result.notes]
    return out
