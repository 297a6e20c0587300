"""RSS/Atom feeds of fact-checkers, parsed with feedparser from bytes (never fetched here).

Feeds carry no structured rating, so the verdict is read only from places where fact-checkers put
one explicitly, in this order: a title prefix ("FALSE: ...", "[Misleading] ..."), a category/tag
that is exactly a rating word, a "Rating: ..." / "Verdict: ..." phrase in the summary. Free prose is
never scanned: a summary saying "it is true that the video exists" must not make the claim true.
Dates are lenient here (an odd date leaves `published_at` empty) because feed dates are machine
written and losing a whole fact-check over one is worse than storing it undated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from core.ingest.base import IngestFormatError, ParsedRow, RowError
from core.ingest.fields import build_factcheck, clean_text, parse_date
from schema.models import Verdict
from core.ingest.ratings import match_rating, rating_key

# Labels that announce a fact-check without rating it; dropped from the claim.
_LABELS = frozenset(rating_key(s) for s in (
    "fact check", "factcheck", "fact checking", "fact checked", "faktencheck", "faktenfuchs", "verificamos",
    "verificacion", "verificação", "verification", "verifica", "vérification", "проверка", "фактчек",
    "перевірка", "debunk", "claim", "viral claim",
))
# "LABEL: rest", "LABEL - rest", "LABEL | rest" with a short label (a rating or a fact-check tag).
_PREFIX = re.compile(r"^\s*(?P<head>[^:|\u2013\u2014]{1,40}?)\s*(?::|\s[|\u2013\u2014-]\s)\s*(?P<rest>.+)$", re.DOTALL)
_BRACKET = re.compile(r"^\s*[\[(](?P<head>[^\])]{1,40})[\])]\s*[:\-\u2013\u2014]?\s*(?P<rest>.+)$", re.DOTALL)
_SUMMARY_RATING = re.compile(
    r"(?:our\s+rating|rating|verdict|ruling|conclusion|вердикт|оценка|вывод|veredicto|calificación"
    r"|calificacion|veredito|classificação|verdetto|urteil|bewertung)\s*[:\-\u2013\u2014]\s*(?P<rating>[^.;\n<]{1,60})",
    re.IGNORECASE,
)


def split_title(title: str, lookup: Callable[[str], Verdict | None] | None = None) -> tuple[str, Verdict | None, str]:
    """(claim, verdict from a prefix or None, rating words) with label/rating prefixes removed. `lookup` reads
    a prefix's words (a publisher's own table, core/watch/recommended_feeds.py); by default the shared one.

    Loops because publishers stack them: "Fact Check: FALSE: ...".
    """
    claim, verdict, rating_words = title, None, ""
    for _ in range(3):
        m = _BRACKET.match(claim) or _PREFIX.match(claim)
        if not m or not m["rest"].strip():
            break
        head = m["head"].strip()
        found = lookup(head) if lookup is not None else match_rating(head, exact=True)
        if found is not None and verdict is None:
            verdict, rating_words = found, head
        elif rating_key(head) not in _LABELS:
            break
        claim = m["rest"].strip()
    return claim, verdict, rating_words


def _entry_rating(entry: Any, title_verdict: Verdict | None, title_words: str) -> tuple[str, Verdict]:
    if title_verdict is not None:
        return title_words, title_verdict
    for tag in entry.get("tags") or []:
        term = clean_text(tag.get("term") or tag.get("label"))
        found = match_rating(term, exact=True)
        if found is not None:
            return term, found
    summary = clean_text(entry.get("summary"))
    for m in _SUMMARY_RATING.finditer(summary):
        words = m["rating"].strip()
        found = match_rating(words)  # the phrase after "Rating:" may run on: "False, because ..."
        if found is not None:
            return words, found
    return "", Verdict.NOT_ENOUGH_EVIDENCE


def entry_date(entry: Any) -> date | None:
    """An entry's date (published, else updated, else created), or None."""
    # dict.get: FeedParserDict.get aliases updated<->published with a DeprecationWarning.
    for key in ("published", "updated", "created"):
        if raw := dict.get(entry, key):
            try:
                return parse_date(raw)  # keeps the publisher's local date
            except RowError:
                pass
        parsed = dict.get(entry, f"{key}_parsed")
        if parsed:
            return date(parsed.tm_year, parsed.tm_mon, parsed.tm_mday)
    return None


_ENTITY_DECLARATION = re.compile(rb"<!ENTITY", re.IGNORECASE)
_PROLOG_BYTES = 64 * 1024  # a DOCTYPE comes before the root element


def parse_feed(data: bytes) -> Any:
    """feedparser's reading of an RSS/Atom document (`.feed`, `.entries`); IngestFormatError when it is none."""
    if _ENTITY_DECLARATION.search(data[:_PROLOG_BYTES]):
        # feedparser does not expand them, but a declared entity's name then became a fact-check's
        # claim ("&lol9;" from a billion-laughs file). A feed has no use for them.
        raise IngestFormatError("The feed declares XML entities (<!ENTITY …>), which tipline does not read; "
                                "remove its DOCTYPE and try again.")
    # Imported here: `tipline check` imports core.ingest for its error type, and feedparser costs ~0.03 s
    # of its CPU.
    import feedparser

    parsed = feedparser.parse(data)
    version = parsed.get("version") or ""
    if not parsed.entries and (parsed.bozo or not version):
        reason = parsed.get("bozo_exception")
        raise IngestFormatError(f"The file is not a readable RSS or Atom feed ({reason or 'no feed element'}).")
    return parsed


def parse_bytes(data: bytes) -> Iterator[ParsedRow]:
    """Rows for each entry; `line` is the 1-based entry index."""
    parsed = parse_feed(data)
    feed = parsed.feed
    publisher = clean_text(feed.get("title"))
    feed_language = feed.get("language")
    for index, entry in enumerate(parsed.entries, start=1):
        title = clean_text(entry.get("title"))
        if not title:
            yield ParsedRow(index, None, f"entry #{index}: no title")
            continue
        claim, title_verdict, title_words = split_title(title)
        rating_text, verdict = _entry_rating(entry, title_verdict, title_words)
        title_detail = entry.get("title_detail") or {}
        try:
            factcheck = build_factcheck(
                claim=claim,
                title=title,
                url=entry.get("link", ""),
                publisher=publisher,
                published_at=entry_date(entry),
                rating_text=rating_text,
                language=title_detail.get("language") or feed_language,
                source_id=entry.get("id", ""),
            )
        except (RowError, ValueError) as exc:
            yield ParsedRow(index, None, f"entry #{index}: {exc}")
            continue
        # The verdict came from a trusted place (prefix/tag/"Rating:"), not from re-reading rating_text.
        yield ParsedRow(index, factcheck.model_copy(update={"verdict": verdict}), None)
