import json

from bot.app import build_app
from core.matching.features import CorpusStats


async def test_an_old_term_index_is_rebuilt_on_start(settings):
    async with build_app(settings) as app:
        n = await app.kb.count()
        assert app.kb.stats.doc.n_docs == n
        # Pretend the data dir was written by a version with another tokeniser.
        await app.db.set_kv(f"sparse_version:{app.kb.collection}", "0")
        await app.db.set_kv(f"corpus_stats:{app.kb.collection}", CorpusStats().to_json())
    async with build_app(settings) as app:
        assert app.kb.stats.doc.n_docs == n == await app.kb.count()
        result = await app.engine.check("The moon landings were faked in a studio")
        assert result.verdict.value == "REFUTED"


async def test_re_adding_keeps_statistics_exact(app):
    from core.matching.knowledge_base import load_seed_factchecks

    before = json.loads(app.kb.stats.to_json())
    seed = load_seed_factchecks()
    assert await app.kb.add(seed[:5]) == 0
    assert json.loads(app.kb.stats.to_json()) == before


async def test_fact_checks_stored_without_doc_norm_match_alike_and_get_it_on_start(settings):
    # A data dir from before |claim + title| was stored with each fact-check (storage/vectors.py): the
    # matcher works it out from the stored vectors, and the next start stores it.
    message = "Vaccines cause autism in children"
    async with build_app(settings) as app:
        want = [(m.factcheck_id, m.similarity, m.tier) for m in await app.matcher.by_text(message, 10)]
        ids = [r.id async for batch in app.vectors.scroll(app.kb.collection, payload=False) for r in batch]
        await app.vectors.set_payloads(app.kb.collection, {i: {"doc_norm": None} for i in ids})
        await app.db.set_kv(f"doc_norms_stored:{app.kb.collection}", "0")
        app.clear_embedding_caches()
        assert [(m.factcheck_id, m.similarity, m.tier) for m in await app.matcher.by_text(message, 10)] == want
    async with build_app(settings) as app:
        norms = [r.payload.get("doc_norm") async for batch in app.vectors.scroll(app.kb.collection, payload=["doc_norm"])
                 for r in batch]
        assert len(norms) == len(ids) and all(isinstance(n, float) and 0 < n <= 2.0 for n in norms)
        assert [(m.factcheck_id, m.similarity, m.tier) for m in await app.matcher.by_text(message, 10)] == want
