"""core.evidence.queries: offline plans and the LLM path through the real client against the fake OpenAI server."""

from __future__ import annotations

import pytest

from core.evidence.base import ClaimQuery
from core.evidence.queries import MAX_QUERIES, offline_queries, plan_queries
from tests.fakes.openai_api import user_text
from tests.llm_fixtures import fake, llm  # noqa: F401  (fixtures)


def test_offline_queries_are_distinct_and_framed():
    qs = offline_queries("The official number of active spacecraft orbiting Earth, as of the beginning of 2024, "
                         "exceeded 9,000.")
    assert 2 <= len(qs) <= MAX_QUERIES
    assert len({q.casefold() for q in qs}) == len(qs)
    assert any(q.endswith("fact check") for q in qs)
    assert any("9,000" in q and "2024" in q and "Earth" in q for q in qs[1:])  # entity + date + number


def test_offline_keeps_the_users_error_and_language():
    qs = offline_queries("Water boils at 50C")
    assert all("50C" in q for q in qs)
    ru = offline_queries("Путин подписал закон о запрете TikTok в 2024 году", "ru")
    assert any("фейк" in q for q in ru) and not any("fact check" in q for q in ru)


async def test_no_llm_plan_is_offline_and_says_so_for_other_languages():
    plan = await plan_queries("Путин подписал закон о запрете TikTok в 2024 году", "ru")
    assert plan.mode == "offline" and plan.english is None and "own language" in plan.note
    cq = plan.claim_query("Путин подписал закон о запрете TikTok в 2024 году", "ru", urls=["https://x.example/a"])
    assert isinstance(cq, ClaimQuery) and cq.search_queries == plan.queries and cq.language == "ru"


async def test_llm_plan_with_translation(fake, llm):
    claim = "Путин подписал закон о запрете TikTok в 2024 году"
    fake.named("query_plan").reply_json({
        "queries": ["Путин закон запрет TikTok 2024", "запрет TikTok Россия фейк", "Putin TikTok ban law fact check"],
        "english_claim": "Putin signed a law banning TikTok in 2024"})
    plan = await plan_queries(claim, "ru", llm=llm)
    assert plan.mode == "llm" and plan.english == "Putin signed a law banning TikTok in 2024"
    assert plan.queries[0] == "Путин закон запрет TikTok 2024"
    assert plan.queries[1] == plan.english  # the English search survives the cut to 4
    assert len(plan.queries) == 4
    [req] = fake.requests_named("query_plan")
    assert "<message>\n" + claim in user_text(req)  # the claim goes in as untrusted data


async def test_llm_duplicates_and_too_few_are_topped_up(fake, llm):
    fake.named("query_plan").reply_json({"queries": ["Water boils 50C", "water BOILS 50c", "  "],
                                         "english_claim": "Water boils at 50C"})
    plan = await plan_queries("Water boils at 50C", "en", llm=llm)
    assert plan.english is None  # already English: no translation
    assert plan.queries[0] == "Water boils 50C"
    assert 2 <= len(plan.queries) <= MAX_QUERIES
    assert len({" ".join(sorted(q.casefold().split())) for q in plan.queries}) == len(plan.queries)


@pytest.mark.parametrize("fault", ["malformed", "status", "timeout", "refusal"])
async def test_llm_failure_falls_back_to_offline(fake, llm, fault):
    script = fake.named("query_plan")
    if fault == "malformed":
        script.reply_raw("{not json")
        script.reply_json({"queries": "not a list"})
    elif fault == "status":
        script.reply_status(500)
    elif fault == "timeout":
        script.reply_slow(5.0, {"queries": ["late"], "english_claim": None})
    else:
        script.reply_refusal("no")
        script.reply_refusal("no")
    plan = await plan_queries("Water boils at 50C", "en", llm=llm)
    assert plan.mode == "offline" and plan.queries == offline_queries("Water boils at 50C")
    assert "LLM unavailable" in plan.note


def test_links_never_reach_a_search_query_whole_or_in_pieces() -> None:
    claim = ("Anna Petrova from Elm Street says the mayor lied, see https://docs.google.com/document/d/1AbCdEf/edit "
             "and t.me/secretchan/12 or www.example.org/x")
    queries = offline_queries(claim, "en")
    joined = " ".join(queries).lower()
    assert queries and "mayor" in joined
    for piece in ("docs", "google", "1abcdef", "edit", "secretchan", "example", "http", "t.me"):
        assert piece not in joined.split() and piece not in joined, (piece, queries)
