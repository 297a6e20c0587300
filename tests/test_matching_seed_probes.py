"""Hand-written probes against the seed knowledge base (issue 12): a message about the same people and
subject as a fact-check but a different claim must not inherit its verdict, while paraphrases of a seed
claim keep their automatic match.

Real models (MiniLM, multilingual-e5-small), real embedded Qdrant, real SQLite, the seed; offline.
"""

from __future__ import annotations

import pytest

from bot.app import build_app
from tests.conftest import SeededDataDir, isolated_settings

TED = "Bill Gates admitted in a TED talk that vaccines are meant to reduce the world's population."
RFID = "A photo of a man implanted with a microchip proves that RFID chips will be injected"


@pytest.fixture(scope="module")
async def shared(tmp_path_factory, model_dir, seeded: SeededDataDir):
    # A copy of the worker's seeded data dir: the probes read the seed, they don't test seeding it.
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("probes") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


async def test_the_microchip_message_does_not_inherit_the_population_fact_check(shared):
    result = await shared.engine.check("Bill Gates wants to put microchips in people through vaccines")
    # Demoted, not dropped: the TED fact-check stays on the card as a similar one (core/contested.py),
    # contested by the RFID one, which the matcher ranks next.
    assert not [m for m in result.matches if m.tier == "auto"], result.matches[:3]
    assert [m.tier for m in result.matches if m.claim == TED] == ["suggest"], result.matches[:3]
    assert result.label != "Misleading", result.reasoning
    ranked = await shared.matcher.by_text("Bill Gates wants to put microchips in people through vaccines", 3)
    assert [(m.claim[:40], m.tier) for m in ranked[:2]] == [(TED[:40], "suggest"), (RFID[:40], "suggest")], ranked


@pytest.mark.parametrize("text, claim_start", [
    ("Bill Gates said in a TED talk that vaccines are for depopulation", TED[:40]),
    ("The coronavirus vaccine contains a microchip to track people", RFID[:40]),
    ("5G networks spread the coronavirus", "5G mobile networks are what spread"),
    ("Eating garlic prevents coronavirus infection", "Eating garlic protects you"),
    ("Pope Francis endorsed Donald Trump for president", "Pope Francis shocked the world"),
    ("We only use 10 percent of our brain", "Humans only ever use ten percent"),
    ("The moon landing was filmed in a studio", "The Apollo moon landings were faked"),
    ("Covid vaccines make women infertile", "Getting a COVID-19 vaccine will leave women"),
])
async def test_paraphrases_of_seed_claims_stay_automatic(shared, text, claim_start):
    top = (await shared.matcher.by_text(text, 3))[0]
    assert top.claim.startswith(claim_start) and top.tier == "auto", (text, top)
