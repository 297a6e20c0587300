"""Field cleaning shared by every format: text, dates, languages, numbers, and building the FactCheck.

Keeping this in one place means a CSV row and a ClaimReview with the same content produce the same
FactCheck (and therefore the same id, so re-ingesting from another format updates, not duplicates).
"""

from __future__ import annotations

import html
import math
import re
from datetime import date, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from core.ingest.base import RowError
from schema.models import FactCheck, Verdict
from core.ingest.ratings import match_rating, verdict_from_score

_SCRIPT_STYLE = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
# Zero-width characters survive copy-paste from CMSs and break exact matching and dedup.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)


def clean_text(value: Any) -> str:
    """Plain text: no tags, entities decoded, whitespace (incl. NBSP and newlines) collapsed."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value if v is not None)
    text = str(value)
    if "<" in text:
        text = _TAG.sub(" ", _SCRIPT_STYLE.sub(" ", text))
    # Feeds double-escape ("&amp;quot;"); two rounds decode those without harming normal text.
    text = html.unescape(html.unescape(text)) if "&" in text else text
    return " ".join(text.translate(_INVISIBLE).split())


_MONTHS = {
    name: i
    for i, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
         ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
         ("oct", "october"), ("nov", "november"), ("dec", "december")],
        start=1,
    )
    for name in names
}
_MONTH_DAY_YEAR = re.compile(r"^([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_DAY_MONTH_YEAR = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\.?\s+([a-z]+)\.?,?\s+(\d{4})$")
_YMD = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", re.IGNORECASE)
_DMY_DOTS = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$")  # 03.03.2020: day first everywhere dots are used


def parse_date(value: Any) -> date | None:
    """A calendar date from the forms fact-check data actually uses; None for empty; RowError if unreadable.

    Datetimes keep the date as written, in the publisher's own time zone: converting to UTC would
    move evening articles to the next day. Slash forms like 03/04/2020 are refused as ambiguous
    (US vs the rest of the world) rather than guessed.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = clean_text(value)
    if not text:
        return None
    for reader in (_iso, _numeric, _worded, _rfc822):
        try:
            found = reader(text)
        except (ValueError, TypeError, IndexError, OverflowError):
            continue
        if found is not None:
            return found
    raise RowError(f"unreadable date {text!r}")


def _iso(text: str) -> date | None:
    # "2020-03-01T10:00:00Z", "2020-03-01 10:00", "...+02:00", "...T10:00:00.123Z".
    if _ISO_DATETIME.match(text):
        return datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", text)).date()
    return None


def _numeric(text: str) -> date | None:
    if m := _YMD.match(text):
        return date(int(m[1]), int(m[2]), int(m[3]))
    if m := _DMY_DOTS.match(text):
        return date(int(m[3]), int(m[2]), int(m[1]))
    return None


def _worded(text: str) -> date | None:
    lowered = text.lower()
    if (m := _MONTH_DAY_YEAR.match(lowered)) and m[1] in _MONTHS:
        return date(int(m[3]), _MONTHS[m[1]], int(m[2]))
    if (m := _DAY_MONTH_YEAR.match(lowered)) and m[2] in _MONTHS:
        return date(int(m[3]), _MONTHS[m[2]], int(m[1]))
    return None


def _rfc822(text: str) -> date | None:
    # As in RSS: "Tue, 03 Mar 2020 18:30:00 GMT" (also without the weekday).
    return parsedate_to_datetime(text).date()


_LANGUAGE_NAMES = {
    "english": "en", "russian": "ru", "spanish": "es", "portuguese": "pt", "french": "fr",
    "german": "de", "italian": "it", "ukrainian": "uk", "arabic": "ar", "hindi": "hi",
    "русский": "ru", "español": "es", "português": "pt", "français": "fr", "deutsch": "de",
    "italiano": "it", "українська": "uk",
}
_LANG_CODE = re.compile(r"^([a-z]{2,3})(?:[-_][a-z0-9]{2,8})*$")


def language_code(value: Any) -> str | None:
    """The primary language subtag ("pt-BR" -> "pt"), a few names ("English" -> "en"), or None.

    Only the primary subtag: search filters by language, and a Brazilian claim should match a
    Portuguese fact-check.
    """
    if isinstance(value, dict):  # schema.org Language objects: {"@type": "Language", "name": ...}
        value = value.get("alternateName") or value.get("name")
    if isinstance(value, list):
        value = value[0] if value else None
    text = clean_text(value).lower()
    if not text:
        return None
    if m := _LANG_CODE.match(text):
        return m[1]
    return _LANGUAGE_NAMES.get(text)


def as_float(value: Any) -> float | None:
    """A number from JSON or CSV ("4", "4.0", 4), or None: a bad number must not sink the row."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip().replace(",", "."))
    except ValueError:
        return None
    return None if math.isnan(number) else number


def split_urls(value: Any) -> list[str]:
    """Appearance URLs from a list or a string separated by spaces, commas, semicolons or pipes."""
    items = value if isinstance(value, list) else re.split(r"[\s,;|]+", str(value or ""))
    urls: list[str] = []
    for item in items:
        url = clean_text(item)
        if url and url not in urls:
            urls.append(url)
    return urls


NO_RATING = "no rating"
# A claim is a sentence or two (CLEF's 10,375: at most ~1,000 characters); a longer "claim" is a page
# pasted into the wrong column, and would be embedded and stored whole.
MAX_CLAIM_CHARS = 5_000
NO_URL = "rating without a source URL"
UNRATED = "stored as unrated"
_SHOWN_RATING_CHARS = 60


def rating_of(rating: str, value: float | None, best: float | None, worst: float | None) -> Verdict | None:
    """The verdict of a fact-checker's rating: its words if we know them (core/ingest/ratings.py), else its number
    on its scale, else None: we do not know what the fact-checker said."""
    verdict = match_rating(rating) if rating else None
    return verdict if verdict is not None else verdict_from_score(value, best, worst)


def _unrated_note(rating: str, value: Any) -> str:
    """Why a record is stored unrated: "unknown rating 'Banana', stored as unrated"."""
    if rating:
        shown = rating if len(rating) <= _SHOWN_RATING_CHARS else rating[:_SHOWN_RATING_CHARS - 1] + "…"
        return f"unknown rating {shown!r}, {UNRATED}"
    return f"rating value {clean_text(value)!r} is not on its scale, {UNRATED}"


def build_factcheck(
    *,
    claim: Any,
    title: Any = "",
    url: Any = "",
    publisher: Any = "",
    published_at: Any = None,
    rating_text: Any = "",
    rating_value: Any = None,
    best_rating: Any = None,
    worst_rating: Any = None,
    language: Any = None,
    claimant: Any = "",
    appearances: Any = None,
    source_id: Any = "",
    notes: list[str] | None = None,
) -> FactCheck:
    """The one place raw field values become a FactCheck; raises RowError for an unusable record.

    A rating we cannot read (words not in core/ingest/ratings.py and no usable number: "Banana") is stored as
    unrated: the verdict NOT_ENOUGH_EVIDENCE and no rating words, so a card never inherits or quotes it
    (it used to say `Unverified … rated "Banana"`); the sentence saying so is appended to `notes`, for the
    parser to report with the row's position."""
    claim_text = clean_text(claim)
    if not claim_text:
        raise RowError("missing claim text")
    if len(claim_text) > MAX_CLAIM_CHARS:
        raise RowError(f"claim over {MAX_CLAIM_CHARS:,} characters")
    rating = clean_text(rating_text)
    # A fact-check is a claim, a verdict and the article that gives it. Without the verdict there is
    # nothing to inherit, and a verdict without its article cannot be cited: stored, either one came
    # back as "❌ False · 99 %" citing no link. Such half-facts are refused, with the reason.
    if not rating and as_float(rating_value) is None:
        raise RowError(NO_RATING)
    source_url = clean_text(url)
    if not source_url:
        raise RowError(NO_URL)
    verdict = rating_of(rating, as_float(rating_value), as_float(best_rating), as_float(worst_rating))
    if verdict is None:
        if notes is not None:
            notes.append(_unrated_note(rating, rating_value))
        rating, verdict = "", Verdict.NOT_ENOUGH_EVIDENCE
    fields: dict[str, Any] = dict(
        claim=claim_text,
        title=clean_text(title),
        url=source_url,
        publisher=clean_text(publisher),
        published_at=parse_date(published_at),
        rating_text=rating,
        verdict=verdict,
        claimant=clean_text(claimant),
        appearances=split_urls(appearances) if appearances else [],
        source_id=clean_text(source_id),
    )
    lang = language_code(language)
    if lang:  # otherwise the model's default applies
        fields["language"] = lang
    return FactCheck(**fields)
