"""core.verdict.verify: the per-claim pipeline end to end (real ONNX model, fake OpenAI server) and aggregation."""

from __future__ import annotations

import re

import pytest

from core.evidence.credibility import DomainRules
from core.encoders.embeddings import Embedder
from core.evidence.base import ClaimQuery
from schema.models import Citation, Verdict
from core.verdict.scoring import Features
from core.verdict.verify import ClaimVerdict, aggregate, sufficient, verify_claim
from tests.judging_support import ev, stance_by_keyword, utc
from tests.llm_fixtures import fake, llm  # noqa: F401  (fixtures)

CLAIM = ClaimQuery(claim="Water boils at 50C at sea level.")


@pytest.fixture(scope="module")
def embedder(model_dir) -> Embedder:
    return Embedder(model_dir=model_dir)


def evidence():
    return [
        ev("https://www.snopes.com/fact-check/water-boils-50c/", "Does water boil at 50C?",
           "Water boils at 50C at sea level.", source_type="factcheck", verdict=Verdict.REFUTED, rating="False",
           publisher="Snopes"),
        ev("https://en.wikipedia.org/wiki/Boiling_point", "Boiling point",
           "At sea level, pure water boils at 100 °C (212 °F).", published=utc(2024)),
        ev("https://www.usgs.gov/water/boiling", "Boiling point of water, USGS",
           "Water boils at 100 degrees Celsius at sea level; the boiling point falls with altitude."),
        ev("https://www.bbc.com/", "BBC Home", "Water news"),
        ev("https://blocked.example/water", "Water boils at 50C, insiders say", "Water really boils at 50C at sea level."),
    ]


RULES = DomainRules(deny={"blocked.example"})


async def test_offline_uses_the_matching_fact_check(embedder):
    cv = await verify_claim(CLAIM, evidence(), embedder=embedder, rules=RULES, now=utc(2025))
    assert cv.verdict == Verdict.REFUTED and cv.mode == "offline" and cv.policy_verdict == Verdict.REFUTED
    assert cv.features.fc_refuted and cv.score < 20
    assert cv.confidence == 0.8  # no surer than the fact-check match (core.verdict.stance.MATCH_PRECISION)
    urls = [c.url for c in cv.citations]
    assert "https://blocked.example/water" not in urls and "https://www.bbc.com/" not in urls
    assert any("blocked.example" in n and "denied" in n for n in cv.notes)
    assert "“False” [1]" in cv.reasoning and "Numbers differ" in cv.reasoning  # 50C vs 100 °C, kept as written
    assert "50C" in cv.reasoning
    [fc] = [s for s in cv.stances if s.stance_method == "factcheck"]
    assert fc.stance == "refutes" and fc.numeric == "n/a"  # a fact-check's echo of the claim is not a number check
    assert any(s.numeric == "disagree" for s in cv.stances)
    ClaimVerdict.model_validate_json(cv.model_dump_json())  # serialisable for the Result/trace
    assert sufficient(cv)


async def test_offline_without_fact_checks_is_honestly_undecided(embedder):
    cv = await verify_claim(CLAIM, evidence()[1:3], embedder=embedder, now=utc(2025))
    assert cv.verdict == Verdict.NOT_ENOUGH_EVIDENCE and "cannot read" in cv.reasoning
    assert all(s.stance == "neutral" for s in cv.stances) and cv.citations
    assert not sufficient(cv)  # worth a wider search


async def test_no_evidence_never_calls_the_llm(embedder, fake, llm):
    cv = await verify_claim(CLAIM, [], embedder=embedder, llm=llm)
    assert cv.verdict == Verdict.NOT_ENOUGH_EVIDENCE and cv.citations == [] and fake.requests == []
    cv2 = await verify_claim(CLAIM, [ev("https://www.bbc.com/", "Home", "news")], embedder=embedder, llm=llm)
    assert cv2.verdict == Verdict.NOT_ENOUGH_EVIDENCE and fake.requests == []


async def test_llm_pipeline(embedder, fake, llm):
    fake.respond("stance", stance_by_keyword({"100": "refutes", "50C": "refutes"}))
    fake.named("adjudication").reply_json({
        "verdict": "REFUTED", "confidence": 0.99,
        "reasoning": "Water boils at 100 °C at sea level [2][3]; Snopes rated the 50C claim false [1] [8]."})
    cv = await verify_claim(CLAIM, evidence(), embedder=embedder, llm=llm, rules=RULES, now=utc(2025))
    assert cv.mode == "llm" and cv.verdict == Verdict.REFUTED
    assert cv.features.refute_dom == 3 and cv.confidence <= 1 - cv.score / 100
    assert "[8]" not in cv.reasoning and cv.reasoning.startswith("Water boils at 100 °C at sea level [2][3]")
    assert len(fake.requests_named("stance")) == 1 and len(fake.requests_named("adjudication")) == 1
    assert all("blocked.example" not in str(r) for r in fake.requests)  # denied sources never reach the LLM


async def test_stance_starts_before_ranking_and_off_topic_answers_are_not_used(embedder, fake, llm):
    # The stance call is made on the model-free shortlist while the evidence is embedded; an item the
    # embedding step then finds off-topic was asked about, but never counts or gets cited.
    markets = ev("https://markets.example/2024/rally", "Markets", "The stock market rose sharply on Tuesday.")
    fake.respond("stance", stance_by_keyword({"100": "refutes", "50C": "refutes", "market": "supports"}))
    fake.named("adjudication").reply_json({"verdict": "REFUTED", "confidence": 0.9,
                                            "reasoning": "Water boils at 100 °C at sea level [1][2]."})
    cv = await verify_claim(CLAIM, evidence() + [markets], embedder=embedder, llm=llm, rules=RULES, now=utc(2025))
    assert "markets.example" in str(fake.requests_named("stance"))
    assert all("markets.example" not in s.url for s in cv.stances)
    assert all("markets.example" not in c.url for c in cv.citations)
    assert cv.features.agree_dom == 0 and cv.verdict == Verdict.REFUTED
    assert any("markets.example" in n and "off-topic" in n for n in cv.notes)


async def test_all_off_topic_asks_for_no_verdict(embedder, fake, llm):
    off = [ev(f"https://markets{i}.example/2024/rally", "Markets", f"The stock market rose {i} percent on Tuesday.")
           for i in range(2)]
    cv = await verify_claim(CLAIM, off, embedder=embedder, llm=llm, now=utc(2025))
    assert cv.verdict == Verdict.NOT_ENOUGH_EVIDENCE and cv.stances == []
    assert fake.requests_named("adjudication") == []


async def test_llm_down_still_gives_a_labelled_verdict(embedder, fake, llm):
    for _ in range(2):
        fake.named("stance").reply_status(500)
        fake.named("adjudication").reply_status(500)
    cv = await verify_claim(CLAIM, evidence(), embedder=embedder, llm=llm, rules=RULES, now=utc(2025))
    assert cv.verdict == Verdict.REFUTED and cv.mode == "offline"  # the matching fact-check still decides
    assert any("offline stance used" in n for n in cv.notes) and any("adjudication unavailable" in n for n in cv.notes)


async def test_english_translation_brings_english_evidence_in(embedder):
    ru = ClaimQuery(claim="Вода кипит при 50 градусах на уровне моря.", language="ru")
    items = evidence()[1:3]
    without = await verify_claim(ru, items, embedder=embedder)
    with_en = await verify_claim(ru, items, embedder=embedder, english="Water boils at 50 degrees at sea level.")
    assert len(with_en.stances) > len(without.stances)


# --- aggregate ----------------------------------------------------------------------------------------

def cv(claim: str, verdict: Verdict, conf: float, cites: list[str], reasoning: str) -> ClaimVerdict:
    return ClaimVerdict(claim=claim, verdict=verdict, confidence=conf, score=50, reasoning=reasoning,
                        citations=[Citation(n=i, url=u) for i, u in enumerate(cites, 1)], features=Features(),
                        policy_verdict=verdict)


@pytest.mark.parametrize("verdicts, expected", [
    ([Verdict.SUPPORTED, Verdict.REFUTED, Verdict.SUPPORTED], Verdict.REFUTED),
    ([Verdict.SUPPORTED, Verdict.MISLEADING], Verdict.MIXED),
    ([Verdict.MIXED, Verdict.NOT_ENOUGH_EVIDENCE], Verdict.MIXED),
    ([Verdict.SUPPORTED, Verdict.SUPPORTED], Verdict.SUPPORTED),
    ([Verdict.SUPPORTED, Verdict.NOT_ENOUGH_EVIDENCE], Verdict.NOT_ENOUGH_EVIDENCE),
])
def test_aggregate_rule(verdicts, expected):
    out = aggregate([cv(f"c{i}", v, 0.8, [f"https://x.example/{i}"], "r [1].") for i, v in enumerate(verdicts)])
    assert out.verdict == expected and len(out.claims) == len(verdicts)


def test_aggregate_merges_and_renumbers_citations():
    a = cv("A", Verdict.SUPPORTED, 0.9, ["https://s.example/1", "https://s.example/2"], "A holds [1][2].")
    b = cv("B", Verdict.REFUTED, 0.7, ["https://s.example/2", "https://s.example/3"], "B fails [1], see [2].")
    out = aggregate([a, b])
    assert out.verdict == Verdict.REFUTED and out.confidence == 0.7
    assert [(c.n, c.url) for c in out.citations] == [(1, "https://s.example/1"), (2, "https://s.example/2"),
                                                     (3, "https://s.example/3")]
    assert out.claims[1].reasoning == "B fails [2], see [3]." and [c.n for c in out.claims[1].citations] == [2, 3]
    assert all(int(n) <= 3 for n in re.findall(r"\[(\d+)\]", out.reasoning))
    assert aggregate([a]).verdict == Verdict.SUPPORTED and aggregate([]).verdict == Verdict.NOT_ENOUGH_EVIDENCE
