"""schema.org ClaimReview, as fact-checkers publish it: JSON, JSON-LD, HTML pages, DataFeed dumps.

Publishers wrap ClaimReview in many ways (a bare object, a list, `@graph`, the DataFeed dump that
Google and the Duke Reporters' Lab distribute, `<script type="application/ld+json">` in the article
page). Rather than special-casing each, we walk the whole document and take every object that is a
ClaimReview, so new wrappers keep working. Field shapes vary too (author as string, object or list),
hence the small `_first_*` helpers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from core.ingest.base import IngestFormatError, ParsedRow, RowError
from core.ingest.fields import build_factcheck
from schema.json_limits import JSONTooDeep, loads_bounded
from schema.models import FactCheck

_LD_JSON_BLOCK = re.compile(
    r"<script\b[^>]*\btype\s*=\s*[\"']?application/ld\+json[\"']?[^>]*>(.*?)</script\s*>",
    re.IGNORECASE | re.DOTALL,
)


def is_claimreview(obj: Any) -> bool:
    """A ClaimReview by @type (any schema.org prefix), or an untyped object with claimReviewed."""
    if not isinstance(obj, dict):
        return False
    types = obj.get("@type") or obj.get("type") or []
    for t in types if isinstance(types, list) else [types]:
        if isinstance(t, str) and t.rsplit("/", 1)[-1].rsplit(":", 1)[-1] == "ClaimReview":
            return True
    return "@type" not in obj and "claimReviewed" in obj


def find_claimreviews(doc: Any) -> Iterator[dict]:
    """Every ClaimReview in document order, however deeply wrapped (lists, @graph, DataFeed items)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if is_claimreview(node):
            yield node
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else (None if isinstance(value, list) else value)


def _name(value: Any) -> str:
    """Name of a Person/Organization given as a string, an object or a list of either."""
    value = _first(value)
    if isinstance(value, dict):
        return str(value.get("name") or value.get("alternateName") or "")
    return "" if value is None else str(value)


def _url_of(value: Any) -> str:
    value = _first(value)
    if isinstance(value, dict):
        return str(value.get("url") or value.get("@id") or "")
    return "" if value is None else str(value)


def _urls(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [u for u in (_url_of(item) for item in items) if u]


def _host(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")


def parse_record(obj: dict, notes: list[str] | None = None) -> FactCheck:
    """One ClaimReview object -> FactCheck; RowError when it lacks the claim. `notes` gets what the importer
    should hear of a stored record (a rating we cannot read: build_factcheck)."""
    item = _first(obj.get("itemReviewed"))
    item = item if isinstance(item, dict) else {}
    rating = _first(obj.get("reviewRating"))
    rating = rating if isinstance(rating, dict) else {}
    author = obj.get("author") or obj.get("publisher")

    # A claim reviewed via the older "CreativeWork" form carries its URL on itemReviewed itself.
    appearances = _urls(item.get("firstAppearance")) + _urls(item.get("appearance"))
    if not appearances and item.get("url"):
        appearances = _urls(item.get("url"))
    url = _url_of(obj.get("url")) or (obj.get("@id") if str(obj.get("@id", "")).startswith("http") else "")
    # The fact-checker's name; without one, its site's host is still a recognisable label.
    publisher = _name(author) or _name(obj.get("publisher")) or _host(_url_of(author)) or _host(str(url))

    return build_factcheck(
        claim=obj.get("claimReviewed") or item.get("name") or item.get("text"),
        title=obj.get("name") or obj.get("headline") or "",
        url=url,
        publisher=publisher,
        published_at=obj.get("datePublished") or obj.get("dateCreated"),
        rating_text=rating.get("alternateName") or rating.get("name") or "",
        rating_value=rating.get("ratingValue"),
        best_rating=rating.get("bestRating"),
        worst_rating=rating.get("worstRating"),
        language=obj.get("inLanguage") or item.get("inLanguage"),
        claimant=_name(item.get("author")),
        appearances=list(dict.fromkeys(appearances)),
        source_id=obj.get("@id") if not str(obj.get("@id", "")).startswith("_:") else "",
        notes=notes,
    )


def parse_document(doc: Any) -> Iterator[ParsedRow]:
    """Rows for every ClaimReview in an already-decoded JSON document; `line` is the 1-based record index."""
    found = False
    for index, obj in enumerate(find_claimreviews(doc), start=1):
        found = True
        notes: list[str] = []
        try:
            factcheck = parse_record(obj, notes)
            yield ParsedRow(index, factcheck, None, f"ClaimReview #{index}: {notes[0]}" if notes else None)
        except RowError as exc:
            yield ParsedRow(index, None, f"ClaimReview #{index}: {exc}")
        except ValueError as exc:  # pydantic validation of odd field types
            yield ParsedRow(index, None, f"ClaimReview #{index}: invalid field ({exc.__class__.__name__})")
    if not found:
        raise IngestFormatError("The file contains no ClaimReview records.")


def ld_json_blocks(page: str) -> list[Any]:
    """Decoded JSON of every ld+json script in an HTML page; unparseable blocks are skipped."""
    blocks = []
    for raw in _LD_JSON_BLOCK.findall(page):
        # Some CMSs wrap the JSON in CDATA or HTML comments to keep old parsers quiet.
        raw = re.sub(r"^\s*(?:<!--|//\s*<!\[CDATA\[|<!\[CDATA\[)|(?:-->|//\s*\]\]>|\]\]>)\s*$", "", raw.strip())
        try:
            blocks.append(loads_bounded(raw))
        except (json.JSONDecodeError, JSONTooDeep):
            continue
    return blocks


def parse_text(text: str) -> Iterator[ParsedRow]:
    """JSON / JSON-LD text, or an HTML page carrying ld+json blocks."""
    stripped = text.lstrip()
    if stripped.startswith("<"):
        blocks = ld_json_blocks(text)
        if not blocks:
            raise IngestFormatError("The HTML page has no readable <script type=\"application/ld+json\"> block.")
        yield from parse_document(blocks)
        return
    try:
        doc = loads_bounded(text)
    except JSONTooDeep as exc:
        raise IngestFormatError(f"The file cannot be read: {exc}.") from exc
    except json.JSONDecodeError as exc:
        raise IngestFormatError(f"The file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from exc
    yield from parse_document(doc)
