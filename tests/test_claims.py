"""core.intake.claims: the LLM path over the fake OpenAI server, the fallback, and the offline heuristic."""

from __future__ import annotations

import pytest

from core.intake.claims import MAX_CLAIMS, SYSTEM_PROMPT, extract_claims, offline_extract, split_sentences
from tests.llm_fixtures import fake, llm  # noqa: F401  (fixtures)


def claim(text, entities=(), when=None, where=None):
    return {"text": text, "entities": list(entities), "when": when, "where": where}


async def test_llm_path_splits_composite_input_and_preserves_errors(fake, llm):
    text = "Water boils at 50C and Paris is the capital of Germany since 1990."
    fake.reply_json({"kind": "FACTUAL", "reason": "two factual claims", "claims": [
        claim("Water boils at 50C", ["water"]),
        claim("Paris has been the capital of Germany since 1990", ["Paris", "Germany"], "since 1990", "Germany"),
    ]})
    out = await extract_claims(text, "en", llm)
    assert out.mode == "llm" and out.kind == "FACTUAL"
    assert [c.text for c in out.claims] == ["Water boils at 50C", "Paris has been the capital of Germany since 1990"]
    assert out.claims[1].when == "since 1990" and out.claims[1].entities == ["Paris", "Germany"]
    req = fake.requests[0]
    system, user = req["messages"]
    assert "50C" in system["content"] and "Preserve the user's errors" in system["content"]
    assert f"<message>\n{text}\n</message>" in user["content"]
    schema = req["response_format"]["json_schema"]
    assert schema["name"] == "claim_extraction" and schema["strict"] is True
    assert set(schema["schema"]["properties"]["kind"]["enum"]) == {"FACTUAL", "OPINION", "MIXED", "AMBIGUOUS", "NONE"}


async def test_llm_path_enforces_max_and_drops_empty_claims(fake, llm):
    fake.reply_json({"kind": "FACTUAL", "reason": "many", "claims": [claim("  ")] + [
        claim(f"Claim number {i} about Mars") for i in range(8)] + [claim("")]})
    out = await extract_claims("lots of claims", "en", llm)
    assert len(out.claims) == MAX_CLAIMS
    assert [c.text for c in out.claims] == [f"Claim number {i} about Mars" for i in range(MAX_CLAIMS)]


async def test_llm_opinion_has_no_claims_and_factual_without_claims_is_ambiguous(fake, llm):
    fake.reply_json({"kind": "OPINION", "reason": "taste", "claims": [claim("Pizza is better")]})
    fake.reply_json({"kind": "FACTUAL", "reason": "?", "claims": [claim(" ")]})
    opinion = await extract_claims("Pizza tastes better than burgers", "en", llm)
    assert opinion.kind == "OPINION" and opinion.claims == []
    empty = await extract_claims("It's true", "en", llm)
    assert empty.kind == "AMBIGUOUS" and empty.claims == []


async def test_llm_failure_falls_back_to_offline_with_reason(fake, llm):
    fake.reply_status(500)
    out = await extract_claims("The WHO said 5G caused 3 million deaths in 2020.", "en", llm)
    assert out.mode == "offline"
    assert out.reason.startswith("LLM unavailable: LLM HTTP 500")
    assert [c.text for c in out.claims] == ["The WHO said 5G caused 3 million deaths in 2020."]


async def test_malformed_llm_twice_falls_back(fake, llm):
    fake.reply_raw("{oops")
    fake.reply_json({"kind": "FACTUAL"})
    out = await extract_claims("Pizza is the best food", "en", llm)
    assert out.mode == "offline" and out.kind == "OPINION"
    assert "LLM unavailable: malformed" in out.reason


async def test_no_llm_uses_offline():
    out = await extract_claims("Water boils at 50C", "en", None)
    assert out.mode == "offline" and [c.text for c in out.claims] == ["Water boils at 50C"]


def test_system_prompt_mentions_every_kind():
    for kind in ("FACTUAL", "OPINION", "MIXED", "AMBIGUOUS", "NONE"):
        assert kind in SYSTEM_PROMPT


@pytest.mark.parametrize("text, sentences", [
    ("Dr. Smith said the U.S. banned 5G. Is it safe? Yes!", ["Dr. Smith said the U.S. banned 5G.", "Is it safe?", "Yes!"]),
    ("Prices rose 3.5% in 2023… Really?", ["Prices rose 3.5% in 2023…", "Really?"]),
    ("first line\nsecond line", ["first line", "second line"]),
    ("Д-р Иванов, т.е. врач, заявил. Это правда?", ["Д-р Иванов, т.е. врач, заявил.", "Это правда?"]),
])
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


@pytest.mark.parametrize("text, kind, claims", [
    ("Water boils at 50C", "FACTUAL", ["Water boils at 50C"]),
    ("The Earth is flat", "FACTUAL", ["The Earth is flat"]),
    ("Vaccines cause autism", "FACTUAL", ["Vaccines cause autism"]),
    ("Is it true that Bill Gates owns 50% of the WHO?", "FACTUAL", ["Bill Gates owns 50% of the WHO"]),
    ("Who is the president? What time is it?", "NONE", []),
    ("hello there", "NONE", []),
    ("It's true", "NONE", []),
    ("Minecraft is the best game", "OPINION", []),
    ("I think pizza is beautiful.", "OPINION", []),
    ("I think pizza is great. NASA said the Moon landing happened in 1969.", "MIXED",
     ["NASA said the Moon landing happened in 1969."]),
    ("Я думаю, это лучший фильм.", "OPINION", []),
    ("В 2021 году в Москве запретили 5G. Кто виноват?", "FACTUAL", ["В 2021 году в Москве запретили 5G."]),
    ("Прививка вызывает бесплодие.", "FACTUAL", ["Прививка вызывает бесплодие."]),
])
def test_offline_heuristic_table(text, kind, claims):
    out = offline_extract(text)
    assert out.kind == kind, out.reason
    assert [c.text for c in out.claims] == claims


def test_offline_keeps_at_most_five_most_check_worthy_first():
    text = " ".join([
        "The sky was nice.",
        "Apple earned 5 billion dollars in March 2020 in California.",
        "Tesla is in Texas.",
    ] + [f"Company {i} has {i} offices." for i in range(1, 7)])
    out = offline_extract(text)
    assert len(out.claims) == 5
    assert out.claims[0].text == "Apple earned 5 billion dollars in March 2020 in California."
    assert out.claims[0].when and "2020" in out.claims[0].when and out.claims[0].where == "California"
    assert "The sky was nice." not in [c.text for c in out.claims]
    assert "dropped" in out.reason


def test_offline_entities():
    out = offline_extract("Dr. Smith said the U.S. banned 5G in 2020.")
    assert out.claims[0].entities == ["Dr. Smith", "U.S."]
    assert out.claims[0].when == "2020"
