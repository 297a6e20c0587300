"""Checks on the shipped seed knowledge base (core/data/seed_factchecks.jsonl).

The seed file is hand-written: every claim and title is in our own words, and every URL points at a
real fact-check article. These tests keep it well-formed as it grows.
"""

from __future__ import annotations

import json
import re
from datetime import date
from itertools import combinations
from pathlib import Path
from urllib.parse import urlparse

import pytest

from schema.models import FactCheck

SEED_PATH = Path(__file__).resolve().parents[1] / "core" / "data" / "seed_factchecks.jsonl"

REQUIRED_KEYS = {
    "claim",
    "title",
    "url",
    "publisher",
    "published_at",
    "rating_text",
    "language",
    "claimant",
    "appearances",
}

# Rating words that mean the claim was judged false. Anything else (True, Misleading, Missing
# context, Partly false, No evidence, ...) counts as a "non-false" rating.
FALSE_RATINGS = {"false", "pants on fire", "fake", "incorrect", "фейк", "ложь", "неправда"}

TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def _load_raw() -> list[dict]:
    rows = []
    with SEED_PATH.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - message only
                pytest.fail(f"line {lineno} is not valid JSON: {exc}")
    return rows


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    return _load_raw()


@pytest.fixture(scope="module")
def factchecks(raw: list[dict]) -> list[FactCheck]:
    return [FactCheck(**obj) for obj in raw]


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in TOKEN_RE.findall(text)}


def test_file_exists_and_has_no_blank_lines():
    assert SEED_PATH.is_file(), f"missing {SEED_PATH}"
    lines = SEED_PATH.read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines), "blank lines in the seed file"


def test_every_line_has_exactly_the_expected_keys(raw):
    for i, obj in enumerate(raw, start=1):
        assert set(obj) == REQUIRED_KEYS, f"entry {i} keys: {sorted(obj)}"


def test_every_line_parses_into_factcheck(raw, factchecks):
    assert len(factchecks) == len(raw)
    for fc in factchecks:
        assert isinstance(fc, FactCheck)
        assert fc.claim.strip() and fc.title.strip() and fc.publisher.strip() and fc.rating_text.strip()
        assert isinstance(fc.appearances, list)


def test_at_least_sixty_entries(factchecks):
    assert len(factchecks) >= 60


def test_urls_are_https_and_unique(factchecks):
    urls = [fc.url for fc in factchecks]
    for url in urls:
        parsed = urlparse(url)
        assert parsed.scheme == "https", url
        assert parsed.netloc, url
        assert " " not in url, url
    dupes = {u for u in urls if urls.count(u) > 1}
    assert not dupes, f"duplicate URLs: {dupes}"


def test_claims_are_unique(factchecks):
    norm = [" ".join(fc.claim.lower().split()) for fc in factchecks]
    dupes = {c for c in norm if norm.count(c) > 1}
    assert not dupes, f"duplicate claims: {dupes}"


def test_claims_are_single_sentences_of_reasonable_length(factchecks):
    for fc in factchecks:
        assert 15 <= len(fc.claim) <= 300, fc.claim
        assert "\n" not in fc.claim, fc.claim


def test_dates_are_plausible(factchecks):
    today = date.today()
    for fc in factchecks:
        assert fc.published_at is not None, fc.url
        assert 1990 <= fc.published_at.year <= 2026, (fc.url, fc.published_at)
        assert fc.published_at <= today, (fc.url, fc.published_at)


def test_languages(factchecks):
    langs = {fc.language for fc in factchecks}
    assert langs <= {"en", "ru"}, langs
    ru = [fc for fc in factchecks if fc.language == "ru"]
    assert len(ru) >= 45
    cyrillic = re.compile(r"[А-Яа-яЁё]")
    for fc in ru:
        assert cyrillic.search(fc.claim), fc.claim
        assert cyrillic.search(fc.title), fc.title
    for fc in factchecks:
        if fc.language == "en":
            assert not cyrillic.search(fc.claim), fc.claim


def test_some_ratings_are_not_false(factchecks):
    non_false = [fc for fc in factchecks if fc.rating_text.strip().lower() not in FALSE_RATINGS]
    assert len(non_false) >= 5, [fc.rating_text for fc in non_false]
    assert any(fc.rating_text.strip().lower() == "true" for fc in factchecks)


def test_no_two_claims_nearly_identical(factchecks):
    toks = [(fc.claim, _tokens(fc.claim)) for fc in factchecks]
    for (a, ta), (b, tb) in combinations(toks, 2):
        jaccard = len(ta & tb) / len(ta | tb)
        assert jaccard < 0.8, f"near-duplicate claims ({jaccard:.2f}):\n  {a}\n  {b}"


def test_ids_are_unique(factchecks):
    ids = [fc.id for fc in factchecks]
    assert len(ids) == len(set(ids))
