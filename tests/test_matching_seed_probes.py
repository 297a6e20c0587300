"""Hand-written probes against the seed knowledge base: a message about the same people and
subject as a fact-check but a different claim must not inherit its verdict, while paraphrases of a seed
claim keep their automatic match.

Real models (MiniLM, multilingual-e5-small), real embedded Qdrant, real SQLite, the seed; offline.
"""

from __future__ import annotations

import numpy as np
import pytest

from bot.app import build_app
from core.matching.crosslingual_terms import lazy_lexicon
from core.matching.gloss import gloss
from core.matching.features import candidate_features, features_of, prepare_query
from core.matching.matcher import hit_cosines
from core.encoders.sparse import query_vector
from core.textclean import clean_query
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
    # Demoted, not dropped: the TED fact-check stays on the card as a similar one (core/matching/contested.py),
    # contested by the RFID one, which the matcher ranks next.
    assert not [m for m in result.matches if m.tier == "auto"], result.matches[:3]
    assert [m.tier for m in result.matches if m.claim == TED] == ["suggest"], result.matches[:3]
    assert result.label != "Misleading", result.reasoning
    ranked = await shared.matcher.by_text("Bill Gates wants to put microchips in people through vaccines", 3)
    assert (ranked[0].claim[:40], ranked[0].tier) == (TED[:40], "suggest"), ranked
    assert (RFID[:40], "suggest") in [(m.claim[:40], m.tier) for m in ranked], ranked


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


@pytest.mark.parametrize("text", [
    "5G networks spread the coronavirus",
    "Вакцины вызывают аутизм",  # Cyrillic: the gloss's cosines too
    "Говорят что 5G towers cause COVID, это правда?",
])
async def test_the_engines_cosines_give_the_features_the_stored_vectors_give(shared, text):
    # The matcher has the engine score the candidates' stored vectors (storage/vectors.py Hit); the
    # re-ranker was trained on features from the vectors themselves (candidate_features).
    kb = shared.kb
    clean = clean_query(text)
    glossed = gloss(clean, lazy_lexicon())
    vec, mvec, uvec = (await kb.embedder.embed([clean]))[0], (await kb.multilingual.queries([clean]))[0], \
        (await kb.use.encode([clean]))[0]
    gvec = (await kb.embedder.embed([glossed]))[0] if glossed is not None else None
    assert (gvec is not None) == ("Вакцины" in text or "Говорят" in text)
    hits = await kb.vectors.search_factchecks(kb.collection, vec, query_vector(clean), 40, multi=mvec, gloss=gvec,
                                              use=uvec)
    stored = {r.id: r.dense for r in await kb.vectors.retrieve(kb.collection, [h.id for h in hits], payload=False,
                                                                vectors=True)}
    query = prepare_query(text, clean, vec, kb.stats, mvec, uvec, gvec)
    claims, titles = [h.payload["claim"] for h in hits], [h.payload["title"] for h in hits]
    ranks = {"dense_claim": [h.ranks.get("claim", 0) for h in hits]}
    want = candidate_features(query, claims, titles, *(np.vstack([stored[h.id][f] for h in hits])
                                                      for f in ("claim", "title")),
                              ranks, kb.stats, *(np.vstack([stored[h.id][f] for h in hits]) for f in ("multi", "use")))
    got = features_of(query, claims, titles, hit_cosines(hits, mvec.shape[0], gloss=gvec is not None), ranks, kb.stats)
    assert len(hits) > 20 and np.abs(want).sum() > 0
    np.testing.assert_allclose(got, want, atol=2e-6)
