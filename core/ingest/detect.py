"""Pick the parser for an uploaded file from its name and its first bytes; reject what is not text.

Extensions are trusted only where content cannot tell (CSV vs TSV vs JSONL); JSON, HTML and XML are
recognised by content because people save everything as ".json" or ".txt". Whole-file problems raise
IngestFormatError with one sentence naming the file, so the CLI/upload can show it as is.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from core.ingest import claimreview, factcheck_api, feeds, tabular
from core.ingest.base import IngestFormatError, ParsedRow
from schema.json_limits import JSONTooDeep, loads_bounded

MAX_BYTES = 200 * 1024 * 1024

FORMATS = ("claimreview", "factcheck_api", "feed", "csv", "tsv", "jsonl", "json_rows")

_XML_ENCODING = re.compile(rb"^\s*<\?xml[^>]*encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")


def _check_bytes(name: str, data: bytes, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise IngestFormatError(f"{name} is {len(data) / 2**20:.1f} MB, over the {max_bytes / 2**20:.0f} MB limit; split it into smaller files.")
    if not data.strip():
        raise IngestFormatError(f"{name} is empty.")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise IngestFormatError(f"{name} is UTF-16 text; save it as UTF-8 and try again.")
    if b"\x00" in data:
        raise IngestFormatError(f"{name} looks like a binary file, not text (it contains NUL bytes).")


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")  # -sig: Excel and Notepad put a BOM in front of UTF-8
    except UnicodeDecodeError as exc:
        # An XML feed may legitimately declare another encoding; anything else must be UTF-8.
        declared = _XML_ENCODING.match(data)
        if declared:
            try:
                return data.decode(declared[1].decode("ascii"))
            except (LookupError, UnicodeDecodeError):
                pass
        line = data.count(b"\n", 0, exc.start) + 1
        raise IngestFormatError(
            f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02X} on line {line}); save it as UTF-8 and try again."
        ) from exc


def _sniff_json(name: str, text: str) -> tuple[str, Any]:
    try:
        doc = loads_bounded(text)
    except JSONTooDeep as exc:
        raise IngestFormatError(f"{name} cannot be read: {exc}.") from exc
    except json.JSONDecodeError as exc:
        first = text.strip().split("\n", 1)[0]
        try:
            json.loads(first)
            if "\n" in text.strip():
                return "jsonl", None  # several JSON values, one per line
        except json.JSONDecodeError:
            pass
        raise IngestFormatError(f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from exc
    if factcheck_api.is_api_response(doc):
        return "factcheck_api", doc
    if next(claimreview.find_claimreviews(doc), None) is not None:
        return "claimreview", doc
    if isinstance(doc, list) and doc and all(isinstance(r, dict) for r in doc):
        return "json_rows", doc
    raise IngestFormatError(f"{name} is JSON but holds no ClaimReview, no Fact Check Tools \"claims\" and no records.")


def _sniff(name: str, text: str) -> tuple[str, Any]:
    """(format, already-decoded JSON or None) so JSON is parsed once."""
    fmt, doc = _sniff_kind(name, text)
    if fmt == "jsonl" and factcheck_api.is_api_line(text.lstrip().split("\n", 1)[0]):
        return "factcheck_api", _json_lines(name, text)
    return fmt, doc


def _json_lines(name: str, text: str) -> list[Any]:
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append(loads_bounded(line))
            except (JSONTooDeep, json.JSONDecodeError) as exc:
                raise IngestFormatError(f"{name}, line {n}, is not a JSON value ({exc}).") from exc
    return out


def _sniff_kind(name: str, text: str) -> tuple[str, Any]:
    ext = PurePath(name).suffix.lower()
    if ext == ".csv":
        return "csv", None
    if ext in (".tsv", ".tab"):
        return "tsv", None
    if ext in (".jsonl", ".ndjson"):
        return "jsonl", None
    head = text.lstrip()[:4096]
    if head[:1] in "{[":
        return _sniff_json(name, text)
    if head.startswith("<"):
        lowered = head.lower()
        if ext in (".rss", ".atom") or any(tag in lowered for tag in ("<rss", "<feed", "<rdf:rdf")):
            return "feed", None
        if "application/ld+json" in text[:5_000_000].lower():
            return "claimreview", None
        if "<html" in lowered or "<!doctype html" in lowered:
            raise IngestFormatError(f"{name} is an HTML page without a <script type=\"application/ld+json\"> block.")
        raise IngestFormatError(f"{name} is XML but not an RSS or Atom feed.")
    first_line = head.split("\n", 1)[0]
    if "\t" in first_line:
        return "tsv", None
    if "," in first_line or ";" in first_line:
        return "csv", None
    raise IngestFormatError(f"{name} is not in a recognised format (ClaimReview JSON/HTML, Fact Check Tools JSON, RSS/Atom, CSV, TSV or JSONL).")


def detect_format(name: str, data: bytes, *, max_bytes: int = MAX_BYTES) -> str:
    """One of FORMATS; raises IngestFormatError for binary, non-UTF-8, empty, oversized or unknown files."""
    _check_bytes(name, data, max_bytes)
    return _sniff(name, _decode(name, data))[0]


def parse_bytes(name: str, data: bytes, mapping: dict[str, str] | None = None, *,
                max_bytes: int = MAX_BYTES) -> list[ParsedRow]:
    """Every row of the file, good and bad, in file order; `mapping` applies to CSV/TSV/JSONL/JSON records."""
    _check_bytes(name, data, max_bytes)
    text = _decode(name, data)
    fmt, doc = _sniff(name, text)
    if fmt == "feed":
        rows = feeds.parse_bytes(data)  # raw bytes: feedparser honours the XML encoding declaration
    elif fmt == "factcheck_api":
        rows = factcheck_api.parse_document(doc)
    elif fmt == "claimreview":
        rows = claimreview.parse_document(doc) if doc is not None else claimreview.parse_text(text)
    elif fmt == "json_rows":
        rows = tabular.parse_records(doc, mapping)
    elif fmt == "jsonl":
        rows = tabular.parse_jsonl(text, mapping)
    else:
        rows = tabular.parse_delimited(text, mapping, "\t" if fmt == "tsv" else None)
    return list(rows)
