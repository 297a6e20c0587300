"""Google Fact Check Tools `claims:search` responses (saved to disk, or pages concatenated in a list).

Shape: {"claims": [{"text", "claimant", "claimDate", "claimReview": [{"publisher": {"name", "site"},
"url", "title", "reviewDate", "textualRating", "languageCode"}]}], "nextPageToken"}; past the last page the API
answers `{}`. Pages come as one response, a JSON list of them, or JSON lines (one response per line).
One claim reviewed by three publishers gives three FactChecks: each review is its own verdict and
its own article to cite. `line` is the 1-based index of the claim across all pages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from core.ingest.base import IngestFormatError, ParsedRow, RowError
from core.ingest.fields import build_factcheck
from schema.json_limits import JSONTooDeep, loads_bounded


def _is_page(page: Any) -> bool:
    """A response page: its "claims", or the `{}` the API answers past the last page."""
    return isinstance(page, dict) and (isinstance(page.get("claims"), list) or not set(page) - {"nextPageToken"})


def is_api_response(doc: Any) -> bool:
    pages = doc if isinstance(doc, list) else [doc]
    return all(_is_page(p) for p in pages) and any(isinstance(p.get("claims"), list) for p in pages)


def is_api_line(line: str) -> bool:
    """A JSON-lines file whose first line is a response page: one saved response per line."""
    try:
        doc = loads_bounded(line)
    except (JSONTooDeep, json.JSONDecodeError):
        return False
    return is_api_response(doc)


def _rows_for_claim(index: int, claim: Any) -> Iterator[ParsedRow]:
    if not isinstance(claim, dict):
        yield ParsedRow(index, None, f"claim #{index}: not an object")
        return
    reviews = claim.get("claimReview")
    if not isinstance(reviews, list) or not reviews:
        yield ParsedRow(index, None, f"claim #{index}: no claimReview")
        return
    for n, review in enumerate(reviews, start=1):
        where = f"claim #{index}, review {n}"
        if not isinstance(review, dict):
            yield ParsedRow(index, None, f"{where}: not an object")
            continue
        raw_publisher = review.get("publisher")
        publisher: dict[str, Any] = raw_publisher if isinstance(raw_publisher, dict) else {}
        notes: list[str] = []
        try:
            factcheck = build_factcheck(
                claim=claim.get("text"),
                title=review.get("title", ""),
                url=review.get("url", ""),
                # "site" (a bare domain) stands in when a publisher has no display name.
                publisher=publisher.get("name") or publisher.get("site") or "",
                published_at=review.get("reviewDate"),
                rating_text=review.get("textualRating", ""),
                language=review.get("languageCode"),
                claimant=claim.get("claimant", ""),
                notes=notes,
            )
        except RowError as exc:
            yield ParsedRow(index, None, f"{where}: {exc}")
        except ValueError as exc:
            yield ParsedRow(index, None, f"{where}: invalid field ({exc.__class__.__name__})")
        else:
            yield ParsedRow(index, factcheck, None, f"{where}: {notes[0]}" if notes else None)


def parse_document(doc: Any) -> Iterator[ParsedRow]:
    if not is_api_response(doc):
        raise IngestFormatError('The JSON is not a Fact Check Tools response (no "claims" list).')
    index = 0
    for page in doc if isinstance(doc, list) else [doc]:
        for claim in page.get("claims", []):
            index += 1
            yield from _rows_for_claim(index, claim)


def parse_text(text: str) -> Iterator[ParsedRow]:
    try:
        doc = loads_bounded(text)
    except JSONTooDeep as exc:
        raise IngestFormatError(f"The file cannot be read: {exc}.") from exc
    except json.JSONDecodeError as exc:
        raise IngestFormatError(f"The file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from exc
    yield from parse_document(doc)
