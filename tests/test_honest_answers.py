"""Honest answers, through the real engine, model, SQLite, embedded Qdrant and seed knowledge base:
a confidence that is the probability the verdict shown is right, no percentage on an Unverified card,
no unrelated fact-checks listed, one story per card, and long repetitive messages reduced before any cut."""

from __future__ import annotations

import pytest

from bot.render import to_reply
from core.matching.confidence import ConfidenceMap, default_map, expected_calibration_error, reliability_table
from core.i18n import t
from schema.models import Verdict
from tests.conftest import isolated_settings

from bot.app import build_app


@pytest.fixture(scope="module")
async def shared(tmp_path_factory, model_dir, seeded):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("honest") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


async def test_an_inherited_verdict_shows_its_calibrated_probability(shared):
    result = await shared.engine.check("5G towers spread the coronavirus")
    top = result.matches[0]
    assert result.verdict == Verdict.REFUTED and top.tier == "auto"
    assert result.confidence == round(default_map().inherited(top.similarity), 3) < 1.0
    reply = to_reply(result)
    assert reply.headline.endswith(t("card.confidence", "en", pct=round(result.confidence * 100)))
    assert reply.related_heading == t("related.auto", "en")


async def test_an_unverified_card_prints_no_percentage_and_says_why(shared):
    result = await shared.engine.check("The town council of Bexley voted to close the central library in 2019")
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE and result.confidence == 0.0
    reply = to_reply(result)
    assert "%" not in reply.headline and reply.headline.endswith(t("card.no_verdict", "en"))
    assert "no verdict" in reply.reasoning
    floor = default_map().related_floor
    assert all(m.tier == "suggest" and m.similarity >= floor for m in result.matches)  # nothing unrelated listed
    assert default_map().floor_for(result.text, "An English fact-check") == floor
    cross = default_map().cross_script_floor
    assert cross is not None and default_map().floor_for("Вышки 5G распространяют коронавирус", "5G spreads COVID") == cross
    assert default_map().floor_for("Вышки 5G распространяют коронавирус", "Вышки 5G снесли") == 0.0  # unmeasured
    assert all(r.similarity >= floor and r.tier != "none" for r in reply.related)


async def test_a_negated_claim_tells_one_story(shared):
    """The fact-check of the claim is listed as previously fact-checked, and the reasoning says so: it never
    says that no fact-check matches beside a match it lists."""
    result = await shared.engine.check("5G networks did not cause the coronavirus outbreak")
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE
    reply = to_reply(result)
    assert reply.related and reply.related[0].tier == "auto"
    assert reply.related_heading == t("related.auto", "en")
    assert "fact-checked by" in reply.reasoning and "opposite" in reply.reasoning
    assert "No previous fact-check" not in reply.reasoning
    assert result.citations and result.citations[0].url == reply.related[0].url


async def test_a_long_repetition_gets_the_verdict_of_its_sentence(shared):
    alone = await shared.engine.check("Vaccines cause autism in children.")
    repeated = await shared.engine.check("Vaccines cause autism in children. " * 3000)  # ~105 KB
    assert repeated.verdict == alone.verdict == Verdict.REFUTED
    assert repeated.matches[0].factcheck_id == alone.matches[0].factcheck_id
    assert any("distinct sentence" in n for n in repeated.notes)


def test_the_shipped_calibration_is_calibrated_on_dev():
    cal = ConfidenceMap.load()
    dev = cal.provenance["dev"]
    assert dev["ece_calibrated"] <= 0.05 and dev["inherited"] >= 100
    assert 0.0 < cal.related_floor < 1.0
    assert cal.inherited(0.999) <= 0.99 and cal.inherited(0.5) < cal.inherited(0.9)


def test_the_shipped_calibration_holds_across_scripts():
    """Russian messages against English fact-checks (our translations of the CLEF dev tweets), through the
    map cards use for them (the English one): ECE within 0.05, and the cross-script floor
    cuts the "possibly related" Sources shown for messages whose fact-check is missing."""
    cal = ConfidenceMap.load()
    cross = cal.provenance["cross_script"]
    dev = cross["dev_ru_with_the_english_map"]
    assert dev["ece_calibrated"] <= 0.05 and dev["inherited"] >= 100
    assert cal.cross_script_floor == pytest.approx(cross["related_dev_ru"]["floor"], abs=1e-4)
    at_floor, at_suggest = cross["related_dev_ru"], cross["related_dev_ru_at_suggest"]
    assert at_floor["no_fact_check_queries_showing_a_source"] < at_suggest["no_fact_check_queries_showing_a_source"] / 3
    assert at_floor["shown_same_claim"] > at_suggest["shown_same_claim"]


def test_reliability_and_ece():
    p = [0.95, 0.95, 0.95, 0.95, 0.15, 0.15]
    y = [1, 1, 1, 0, 0, 0]
    rows = reliability_table(p, y)
    assert [(r["bin"], r["n"], r["observed"]) for r in rows] == [("0.1-0.2", 2, 0.0), ("0.9-1.0", 4, 0.75)]
    assert expected_calibration_error(p, y) == pytest.approx((4 * 0.2 + 2 * 0.15) / 6)
