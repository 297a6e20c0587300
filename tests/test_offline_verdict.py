"""The offline verdict's wording for what a fact-check carries: a rating, or none (stored unrated)."""

from __future__ import annotations

import pytest

from core.i18n import t
from core.verdict.offline_verdict import decide
from schema.models import Match, Verdict


def _match(rating_text: str, verdict: Verdict) -> Match:
    return Match(factcheck_id="fc1", claim="Bananas cure the flu.", url="https://checks.example/bananas",
                 publisher="Example Checks", rating_text=rating_text, verdict=verdict, similarity=0.97,
                 method="decided", tier="auto")


@pytest.mark.parametrize("lang", ["en", "ru", "uk"])
def test_an_unrated_fact_check_is_cited_without_a_rating_it_never_had(lang: str):
    v = decide("Bananas cure the flu", [_match("", Verdict.NOT_ENOUGH_EVIDENCE)], language=lang)
    assert v.verdict == Verdict.NOT_ENOUGH_EVIDENCE and v.confidence == 0.0
    unverified = t("label.NOT_ENOUGH_EVIDENCE", lang)
    assert unverified not in v.reasoning and "Bananas cure the flu." in v.reasoning
    assert v.citations[0].url == "https://checks.example/bananas" and v.citations[0].rating == ""
    assert v.inherited_from is None


def test_a_fact_check_rated_no_evidence_passes_its_rating_on():
    v = decide("Bananas cure the flu", [_match("No evidence", Verdict.NOT_ENOUGH_EVIDENCE)])
    assert v.verdict == Verdict.NOT_ENOUGH_EVIDENCE and "No evidence" in v.reasoning
    assert v.inherited_from == "https://checks.example/bananas" and v.confidence > 0
