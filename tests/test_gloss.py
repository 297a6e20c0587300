"""The English gloss of a Cyrillic message (core/matching/gloss.py): the gloss itself on the shipped lexicon, its
feature columns and candidate list, the re-rankers that read a subset of the columns, and the live
matcher over the seed (real MiniLM, e5 and USE, real embedded Qdrant, real SQLite)."""

from __future__ import annotations

import numpy as np
import pytest

from bot.app import build_app
from core.matching.crosslingual_terms import load_lexicon
from core.matching.gloss import gloss
from core.matching.matcher import ClaimMatcher
from core.matching.features import (
    BASE_FEATURES, FEATURE_NAMES, GLOSS_FEATURES, GLOSS_LIST, CorpusStats, candidate_features, prepare_query,
)
from core.matching.reranker import Reranker
from core.encoders.sparse import query_vector
from core.textclean import clean_query
from tests.conftest import SeededDataDir, isolated_settings


def test_gloss_translates_known_words_and_romanises_the_rest():
    lex = load_lexicon()
    g = gloss("Вакцины вызывают аутизм", lex)
    assert g is not None
    words = g.split()
    assert words[0] == "vaccine"            # in the lexicon
    assert words[2] == "autizm"             # not in it: romanised, as MiniLM's word pieces half read it
    assert gloss("Трамп сказал", lex).split()[0] == "tramp"
    # Latin words, digits and punctuation pass through; a word with й is looked up as the lexicon folds it
    assert gloss("Говорят что 5G towers cause COVID, это правда?", lex).split()[2:6] == ["5G", "towers", "cause", "COVID"]
    assert gloss("мой", lex) == lex["мои"][0]


def test_a_text_without_cyrillic_has_no_gloss():
    lex = load_lexicon()
    assert gloss("Vaccines cause autism", lex) is None
    assert gloss("", lex) is None
    assert gloss("Εμβόλια 🙂 123", lex) is None


CLAIMS = ["Vaccines cause autism.", "5G towers spread the coronavirus.", "The Eiffel Tower was sold twice."]


def _setup():
    stats = CorpusStats()
    for c in CLAIMS:
        stats.add(c, c)
    rng = np.random.default_rng(3)
    cv = rng.normal(size=(3, 8)).astype(np.float32)
    cv /= np.linalg.norm(cv, axis=1, keepdims=True)
    return stats, cv


def test_gloss_columns_are_filled_only_with_a_gloss_and_leave_the_others_alone():
    stats, cv = _setup()
    q = cv[0] * 0.5 + cv[2] * 0.5
    g = cv[1]
    ranks = {"dense_claim": [1, 2, 3], GLOSS_LIST: [2, 1, 0]}
    plain = candidate_features(prepare_query("Вакцины вызывают аутизм", "Вакцины вызывают аутизм", q, stats),
                               CLAIMS, CLAIMS, cv, cv, ranks, stats)
    glossed = candidate_features(prepare_query("Вакцины вызывают аутизм", "Вакцины вызывают аутизм", q, stats,
                                               gloss_vec=g), CLAIMS, CLAIMS, cv, cv, ranks, stats)
    base = [FEATURE_NAMES.index(n) for n in BASE_FEATURES]
    cols = [FEATURE_NAMES.index(n) for n in GLOSS_FEATURES]
    assert np.array_equal(plain[:, base], glossed[:, base])
    assert not plain[:, cols].any()
    col = dict(zip(GLOSS_FEATURES, glossed[:, cols].T))
    assert np.allclose(col["cos_gloss"], cv @ g, atol=1e-6) and int(np.argmax(col["cos_gloss"])) == 1
    assert col["cos_gloss_gap"][1] == 0 and col["cos_gloss_margin"][1] > 0 > col["cos_gloss_margin"][0]
    assert list(col["rr_dense_gloss"]) == [0.5, 1.0, 0.0]


def test_a_reranker_on_a_subset_of_the_columns_picks_them_from_the_full_matrix():
    english = Reranker.load_default()
    assert english.feature_names == BASE_FEATURES  # trained before the gloss: English pairs never have one
    cyrillic = Reranker.load_cyrillic()
    assert cyrillic.feature_names == FEATURE_NAMES
    X = np.random.default_rng(0).normal(size=(5, len(FEATURE_NAMES)))
    base = [FEATURE_NAMES.index(n) for n in BASE_FEATURES]
    assert np.allclose(english.score(X), english.score(X[:, base]))
    X2 = X.copy()
    X2[:, [FEATURE_NAMES.index(n) for n in GLOSS_FEATURES]] = 9.0
    assert np.allclose(english.score(X), english.score(X2))      # the English model never reads them
    assert not np.allclose(cyrillic.score(X), cyrillic.score(X2))  # the Cyrillic one does
    with pytest.raises(ValueError):
        english.score(X[:, :5])


@pytest.fixture(scope="module")
async def shared(tmp_path_factory, model_dir, seeded: SeededDataDir):
    # A copy of the worker's seeded data dir: these tests read the seed, they don't test seeding it.
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("gloss") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


FIVE_G = "5G mobile networks are what spread the coronavirus around the world."


async def test_the_gloss_list_finds_the_english_claim(shared):
    clean = clean_query("5G вышки распространяют коронавирус")
    g = gloss(clean, load_lexicon())
    vec, gvec = (await shared.kb.embedder.embed([clean]))[0], (await shared.kb.embedder.embed([g]))[0]
    hits = await shared.kb.vectors.search_factchecks(shared.kb.collection, vec, query_vector(clean), 10, gloss=gvec)
    five_g = [h for h in hits if h.payload.get("claim") == FIVE_G]
    assert five_g and five_g[0].ranks.get("gloss") == 1, [(h.payload.get("claim"), h.ranks) for h in hits]


@pytest.mark.parametrize("text, claim_start", [
    ("5G вышки распространяют коронавирус", FIVE_G),
    ("Информатор из CDC рассказал, что агентство скрыло данные: прививка MMR резко повышает риск аутизма у "
     "чернокожих мальчиков.", "A CDC whistleblower revealed"),
])
async def test_russian_probes_inherit_the_english_verdict(shared, text, claim_start):
    top = (await shared.matcher.by_text(text, 3))[0]
    assert top.claim.startswith(claim_start[:20]) and top.tier == "auto", (text, top)


async def test_a_general_russian_claim_is_answered_as_its_english_wording_is(shared):
    """"Vaccines cause autism" is a wider claim than the one the seed's fact-check rates (a CDC whistleblower,
    MMR, Black boys); the Russian wording finds the same fact-check first as the English. Their tiers part: an
    English pair keeps the English re-ranker's CLEF-calibrated tier, while the same-claim decision reads the
    general claim against the narrower one as related (test_multilingual.py)."""
    ru = (await shared.matcher.by_text("Вакцины вызывают аутизм", 3))[0]
    en = (await shared.matcher.by_text("Vaccines cause autism", 3))[0]
    assert ru.claim.startswith("A CDC whistleblower") and ru.factcheck_id == en.factcheck_id, (ru, en)
    assert (ru.tier, en.tier) == ("suggest", "auto")


async def test_english_messages_score_the_same_with_and_without_the_cyrillic_model(shared):
    kb = shared.kb
    # The multilingual re-ranker in the Cyrillic model's place, as before the gloss.
    without = ClaimMatcher(kb, Reranker.load_default(), Reranker.load_multilingual(), Reranker.load_same_script(),
                           Reranker.load_multilingual(), same_claim=shared.matcher.same_claim,
                           claim_model=shared.matcher.claim_model)
    for text in ("5G networks spread the coronavirus", "Cows kill more people every year than sharks do."):
        a = [(m.factcheck_id, m.similarity, m.tier) for m in await shared.matcher.by_text(text, 5)]
        b = [(m.factcheck_id, m.similarity, m.tier) for m in await without.by_text(text, 5)]
        assert a == b, text
