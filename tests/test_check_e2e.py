"""Whole checks through the real engine: real model, real embedded Qdrant, real SQLite, the seed KB."""

import pytest

from bot.app import build_app

from adapters.terminal_card import render_card
from bot.check_service import CheckService
from bot.render import to_reply
from core.intake.message import EmptyInput
from schema.models import Result, Verdict
from tests.conftest import isolated_settings


@pytest.fixture(scope="module")
async def shared(tmp_path_factory, model_dir, seeded):
    """One app for the read-only checks of this module (building one takes seconds); tests that change
    settings use the function-scoped `app`."""
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("e2e") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


async def test_seed_is_loaded_once(shared):
    n = await shared.kb.count()
    assert n >= 60
    assert await shared.kb.ensure_seed() == 0
    assert await shared.kb.count() == n


@pytest.mark.parametrize("text", [
    "The 5G rollout caused the coronavirus outbreak",
    "Vaccines cause autism in children",
    "The moon landings were faked in a studio",
])
async def test_classic_false_claims_inherit_the_fact_check_rating(shared, text):
    result = await shared.engine.check(text)
    assert result.mode == "offline"
    assert result.verdict == Verdict.REFUTED, result.reasoning
    assert result.label == "False"
    top = result.matches[0]
    assert top.tier == "auto" and top.similarity >= shared.matcher.thresholds.auto
    assert result.citations and result.citations[0].url == top.url
    assert "[1]" in result.reasoning
    # the gate is asked after the match (its vector is the match's) and lets an `auto` match through unless sure
    assert [s.name for s in result.steps] == ["intake", "match", "checkability", "evidence", "verdict"]


async def test_an_unrelated_message_gets_no_verdict(shared):
    # A checkable claim no fact-check covers (a personal anecdote is now "not checkable": tests/test_checkability.py)
    result = await shared.engine.check("The town council of Bexley voted to close the central library in 2019.")
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE
    assert result.label == "Unverified"
    assert not [m for m in result.matches if m.tier == "auto"]
    assert any("Offline mode" in n for n in result.notes)


async def test_a_negated_claim_does_not_inherit_the_rating(shared):
    result = await shared.engine.check("5G networks did not cause the coronavirus outbreak")
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE


async def test_exact_url_match_wins(shared):
    seed = (await shared.kb.db.factchecks_by_urls(["https://www.logically.ai/factchecks/library/b1f4b613"]))
    assert seed, "seed entry missing"
    result = await shared.engine.check("look at this https://www.logically.ai/factchecks/library/b1f4b613 !!")
    assert result.matches[0].method == "url" and result.matches[0].similarity == 1.0
    assert result.verdict == seed[0].verdict


async def test_results_are_stored_and_valid_json(shared):
    result = await CheckService(shared.engine).check("Drinking bleach cures COVID-19")  # checked and stored
    stored = await shared.db.get_check(result.id)
    assert stored == result
    assert Result.model_validate_json(result.model_dump_json()) == result
    card = render_card(to_reply(result))
    assert result.id in card and result.label in card


async def test_empty_input_is_refused(shared):
    with pytest.raises(EmptyInput):
        await shared.engine.check("  \x00 ")


async def test_long_input_is_truncated_with_a_note(shared):
    result = await shared.engine.check("The Earth is flat. " * 400)
    assert len(result.text) <= 4096
    assert any("longer than 4096" in n for n in result.notes)


async def test_russian_matches_are_decided_by_the_multilingual_model(shared):
    # Until the multilingual model, a Russian message could never inherit a verdict: the English model
    # scores any two Cyrillic texts alike. Now the multilingual re-ranker decides (tests/test_multilingual.py).
    result = await shared.engine.check("Вышки 5G распространяют коронавирус")
    assert result.language == "ru"
    # The English 5G fact-check is found; our Russian fact-check of a Kyrgyz 5G-tower demolition (same
    # script, more likely to e5) must never decide it: the same-script guard keeps it "possibly related".
    english = "5G mobile networks are what spread the coronavirus around the world."
    assert english in [m.claim for m in result.matches[:3]]
    assert all(m.claim == english for m in result.matches if m.tier == "auto")
    assert result.verdict in (Verdict.REFUTED, Verdict.NOT_ENOUGH_EVIDENCE)


@pytest.mark.parametrize("text", ["Paris is the capital of France",
                                  "Bill Gates owns most of the farmland in America"])
async def test_sharing_a_name_with_a_fact_check_is_not_a_match(shared, text):
    result = await shared.engine.check(text)
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE, result.matches[0]


async def test_denied_domains_are_never_cited_and_scopes_are_separate(app):
    from storage.domains import DomainStore

    text = "The 5G rollout caused the coronavirus outbreak"
    before = await app.engine.check(text)
    assert "logically.ai" in before.matches[0].url
    await DomainStore(app.db).set_rule("telegram:42", "logically.ai", "deny", added_by="test")
    in_chat = await app.engine.check(text, scope="telegram:42")
    assert all("logically.ai" not in m.url for m in in_chat.matches)
    assert all("logically.ai" not in c.url for c in in_chat.citations)
    assert any("denied" in n for n in in_chat.notes)
    elsewhere = await app.engine.check(text, scope="telegram:7")
    assert "logically.ai" in elsewhere.matches[0].url and elsewhere.verdict == before.verdict
