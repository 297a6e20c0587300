"""CSV / TSV / JSONL (and JSON arrays of flat objects) with a column mapping.

Spreadsheets of fact-checks name their columns every which way, so each FactCheck field has a list
of common names, matched ignoring case, spaces and underscores ("Claim Reviewed" == claimReviewed).
A `mapping` {field: column} overrides that per field; a mapped column missing from the CSV header is
a whole-file error because every row would be wrong. Line numbers are physical lines (header = 1), so
a quoted cell with embedded newlines still points the user at the line where the bad row starts.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from core.ingest import claimreview
from core.ingest.base import IngestFormatError, ParsedRow, RowError
from core.ingest.fields import build_factcheck
from schema.json_limits import JSONTooDeep, loads_bounded
from schema.models import FactCheck

# Claims and summaries can be long, and the csv module's 128 KiB default cell limit stopped a whole
# file; unbounded, one 50 MB cell went on for 180 s to 3.5 GB of memory. A cell
# over 1 MiB is not a claim: the reader stops there and says where. The csv module's limit is one
# global setting (the evaluation code raises it for CLEF's files), so each parse sets its own.
MAX_CELL_BYTES = 2**20

# field -> accepted column names (already in `_key` form), best guess first.
DEFAULT_COLUMNS: dict[str, tuple[str, ...]] = {
    "claim": ("claim", "claimreviewed", "text", "claimtext", "statement"),
    "title": ("title", "headline", "reviewtitle", "articletitle"),
    "url": ("url", "reviewurl", "claimreviewurl", "factcheckurl", "articleurl", "link"),
    "publisher": ("publisher", "publishername", "factchecker", "site", "organization", "source"),
    "published_at": ("date", "publishedat", "datepublished", "reviewdate", "published", "publicationdate",
                     "publishdate"),
    "rating_text": ("rating", "textualrating", "verdict", "label", "alternatename", "ratingtext", "ruling"),
    "rating_value": ("ratingvalue", "score"),
    "best_rating": ("bestrating",),
    "worst_rating": ("worstrating",),
    "language": ("language", "lang", "languagecode", "inlanguage", "locale"),
    "claimant": ("claimant", "speaker", "claimauthor"),
    "appearances": ("appearances", "appearance", "firstappearance", "claimurl", "sourceurl"),
    "source_id": ("id", "sourceid", "claimid", "reviewid"),
}
# Friendly names people put in a mapping instead of the model's field names.
_FIELD_SYNONYMS = {"date": "published_at", "rating": "rating_text", "claimreviewed": "claim",
                   "textualrating": "rating_text"}


def _key(name: str) -> str:
    return re.sub(r"[\W_]+", "", name.lower())


def _check_mapping(mapping: Mapping[str, str] | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for field, column in (mapping or {}).items():
        field = _FIELD_SYNONYMS.get(_key(field), field)
        if field not in DEFAULT_COLUMNS:
            raise IngestFormatError(
                f"The column mapping names an unknown field {field!r}; known fields are {', '.join(DEFAULT_COLUMNS)}.")
        checked[field] = column
    return checked


def _shown(columns: Iterable[str]) -> str:
    """Column names for a one-line error: a quoted header cell may hold line breaks."""
    return ", ".join(" ".join(str(c).split()) for c in columns)


def resolve_columns(columns: Iterable[str], mapping: Mapping[str, str] | None, *, strict: bool) -> dict[str, str]:
    """field -> actual column name. `strict`: a mapped column that is absent raises (CSV headers)."""
    columns = list(columns)
    by_key: dict[str, str] = {}
    for column in columns:
        by_key.setdefault(_key(column), column)
    checked = _check_mapping(mapping)
    resolved: dict[str, str] = {}
    for field, column in checked.items():
        actual = column if column in by_key.values() else by_key.get(_key(column))
        if actual is None:
            if strict:
                raise IngestFormatError(
                    f"The mapped column {column!r} (for {field}) is not in the header; columns are: {_shown(columns)}.")
            continue
        resolved[field] = actual
    for field, names in DEFAULT_COLUMNS.items():
        # A field the user mapped never falls back to a guess: absent means absent.
        if field not in checked:
            for name in names:
                if name in by_key:
                    resolved[field] = by_key[name]
                    break
    return resolved


def _record_to_factcheck(record: Mapping[str, Any], columns: Mapping[str, str],
                         notes: list[str] | None = None) -> FactCheck:
    values: dict[str, Any] = {}
    for field, column in columns.items():
        value = record.get(column)
        if isinstance(value, dict):
            raise RowError(f"column {column!r} holds an object, not a value")
        values[field] = value
    values.setdefault("claim", None)  # a JSONL record without the key: "missing claim text"
    return build_factcheck(**values, notes=notes)


def _row(line: int, where: str, build: Any, *args: Any) -> ParsedRow:
    """`build(*args, notes=[...])`'s FactCheck as a row at `line`; its note ("unknown rating 'Banana', stored
    as unrated") the row's warning, its RowError the row's error."""
    notes: list[str] = []
    try:
        factcheck = build(*args, notes=notes)
        return ParsedRow(line, factcheck, None, f"{where} {line}: {notes[0]}" if notes else None)
    except RowError as exc:
        return ParsedRow(line, None, f"{where} {line}: {exc}")
    except ValueError as exc:  # pydantic rejected a field type
        return ParsedRow(line, None, f"{where} {line}: invalid field ({exc.__class__.__name__})")


def sniff_delimiter(first_line: str) -> str:
    """Tab, semicolon (European Excel) or comma, whichever the header uses most."""
    counts = {d: first_line.count(d) for d in ("\t", ";", ",")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def parse_delimited(text: str, mapping: Mapping[str, str] | None = None, delimiter: str | None = None) -> Iterator[ParsedRow]:
    """CSV/TSV text (BOM already removed) -> rows; line numbers are physical lines, header = line 1."""
    previous = csv.field_size_limit(MAX_CELL_BYTES)
    try:
        yield from _parse_delimited(text, mapping, delimiter)
    finally:
        csv.field_size_limit(previous)


def _parse_delimited(text: str, mapping: Mapping[str, str] | None, delimiter: str | None) -> Iterator[ParsedRow]:
    text = text.removeprefix("\ufeff")
    if delimiter is None:
        delimiter = sniff_delimiter(text.split("\n", 1)[0])
    # newline="" keeps "\r\n" inside quoted cells intact, as the csv module requires.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] | None = None
    columns: dict[str, str] = {}
    previous_end = 0
    try:
        for row in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip() for cell in row]
                columns = resolve_columns(header, mapping, strict=True)
                if "claim" not in columns:
                    raise IngestFormatError(
                        f"No claim column found (expected claim, claimReviewed or text, or a mapping); "
                        f"columns are: {_shown(header)}.")
                continue
            if len(row) > len(header) and any(cell.strip() for cell in row[len(header):]):
                yield ParsedRow(start, None, f"line {start}: {len(row)} fields but the header has {len(header)}")
                continue
            yield _row(start, "line", _record_to_factcheck, dict(zip(header, row)), columns)
    except csv.Error as exc:
        # The csv module cannot resynchronise after a broken row; report where it stopped.
        why = (f"a cell is over the {MAX_CELL_BYTES // 2**20} MB limit" if "field limit" in str(exc)
               else f"unreadable CSV ({exc})")
        yield ParsedRow(previous_end + 1, None, f"line {previous_end + 1}: {why}; rest of file skipped")
    if header is None:
        raise IngestFormatError("The file has no header row.")


def _record_rows(numbered: Iterable[tuple[int, Any]], mapping: Mapping[str, str] | None,
                 where: str) -> Iterator[ParsedRow]:
    _check_mapping(mapping)  # fail fast on a bad mapping, before any row
    for line, record in numbered:
        if not isinstance(record, dict):
            yield ParsedRow(line, None, f"{where} {line}: not a JSON object")
        elif claimreview.is_claimreview(record) and isinstance(record.get("reviewRating"), (dict, list)):
            # Dumps of ClaimReview one per line: nested fields need the ClaimReview reader.
            yield _row(line, where, claimreview.parse_record, record)
        else:
            yield _row(line, where, _record_to_factcheck, record, resolve_columns(record, mapping, strict=False))


def parse_jsonl(text: str, mapping: Mapping[str, str] | None = None) -> Iterator[ParsedRow]:
    """One JSON object per line; blank lines are ignored; `line` is the physical line number."""
    numbered: list[tuple[int, Any]] = []
    bad: list[ParsedRow] = []
    # split("\n"), not splitlines(): U+2028 may legally sit unescaped inside a JSON string.
    for line, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            numbered.append((line, loads_bounded(raw)))
        except JSONTooDeep as exc:
            bad.append(ParsedRow(line, None, f"line {line}: {exc}"))
        except json.JSONDecodeError as exc:
            bad.append(ParsedRow(line, None, f"line {line}: invalid JSON ({exc.msg})"))
    if not numbered:
        raise IngestFormatError("No line of the file is valid JSON, so it is not JSONL.")
    rows = list(_record_rows(numbered, mapping, "line")) + bad
    yield from sorted(rows, key=lambda r: r.line or 0)


def parse_records(records: list[Any], mapping: Mapping[str, str] | None = None) -> Iterator[ParsedRow]:
    """A JSON array of flat objects; `line` is the 1-based index in the array."""
    yield from _record_rows(enumerate(records, start=1), mapping, "record")
