"""Fuzzing the parsers and the terminal card: whatever bytes arrive, a parser returns rows or raises
IngestFormatError with a sentence, and nothing else (issue: hostile input, point 7). Seeded by hypothesis;
~150 examples each keeps the file to seconds."""

from __future__ import annotations

import csv
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.terminal_card import render_card
from core.evidence.html_extract import best_passage, extract_page
from core.ingest import IngestFormatError, parse_bytes
from schema.json_limits import JSONTooDeep, loads_bounded
from tests.test_fuzz import hostile, replies

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = st.sampled_from(["f.csv", "f.tsv", "f.jsonl", "f.json", "f.xml", "f.html", "f.txt", "f"])

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), hostile),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(
        st.sampled_from(["claim", "rating", "url", "claimReviewed", "reviewRating", "@type", "itemReviewed",
                         "author", "datePublished", "claims", "text", "claimReview", "alternateName", "@graph"]),
        inner, max_size=6)),
    max_leaves=30)


def _parse(name: str, data: bytes) -> None:
    try:
        rows = parse_bytes(name, data)
    except IngestFormatError as exc:
        assert str(exc) and "\n" not in str(exc).strip()
        return
    for row in rows:
        assert row.factcheck is not None or row.error


def test_a_header_cell_with_a_line_break_is_named_on_one_line():
    # Found by test_any_json: a quoted header cell holding a line break was quoted as is in the error.
    for data in (b'[";"]\nnull', b'"a\nb",c\nx,y\n'):
        _parse("f.csv", data)
    try:
        parse_bytes("f.csv", b'"first\nsecond",other\n1,2\n', {"claim": "missing"})
    except IngestFormatError as exc:
        assert "columns are: first second, other." in str(exc)
    else:
        raise AssertionError("a mapped column that is absent must be refused")


@FUZZ
@given(name=NAMES, data=st.binary(max_size=3000))
def test_any_bytes(name, data):
    _parse(name, data)


@FUZZ
@given(name=NAMES, doc=json_values)
def test_any_json(name, doc):
    _parse(name, json.dumps(doc).encode())
    _parse(name, "\n".join(json.dumps(d) for d in (doc if isinstance(doc, list) else [doc])).encode())


@FUZZ
@given(rows=st.lists(st.lists(hostile, min_size=1, max_size=5), max_size=8), delimiter=st.sampled_from([",", "\t", ";"]))
def test_any_table(rows, delimiter):
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(["claim", "rating", "url", "date", "publisher"][:max(1, max((len(r) for r in rows), default=1))])
    writer.writerows(rows)
    _parse("f.csv" if delimiter != "\t" else "f.tsv", out.getvalue().encode("utf-8", "replace"))


@FUZZ
@given(title=hostile, link=hostile, category=hostile, extra=hostile)
def test_any_feed(title, link, category, extra):
    feed = (f'<?xml version="1.0"?><rss version="2.0"><channel><title>{extra}</title><item><title>{title}</title>'
            f"<link>{link}</link><category>{category}</category><description>{extra}</description></item>"
            "</channel></rss>")
    _parse("f.xml", feed.encode("utf-8", "replace"))


@FUZZ
@given(body=hostile, doc=json_values)
def test_any_page(body, doc):
    page = (f"<html><head><title>{body}</title><script type=\"application/ld+json\">{json.dumps(doc)}</script>"
            f"</head><body><p>{body}</p><p>{body[::-1]}</p></body></html>")
    info = extract_page(page, "https://example.org/a")
    best_passage(info.text, body)
    _parse("f.html", page.encode("utf-8", "replace"))


@FUZZ
@given(text=st.text(alphabet="[]{}\",:0123456789 ", max_size=400))
def test_json_reader_raises_only_what_it_says(text):
    try:
        loads_bounded(text)
    except (json.JSONDecodeError, JSONTooDeep):
        pass


@FUZZ
@given(reply=replies())
def test_terminal_card(reply):
    out = render_card(reply)
    assert isinstance(out, str) and out.strip()
