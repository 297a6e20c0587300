import json

from bot.app import build_app
from core.matchfeatures import CorpusStats


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
    from core.knowledge import load_seed_factchecks

    before = json.loads(app.kb.stats.to_json())
    seed = load_seed_factchecks()
    assert await app.kb.add(seed[:5]) == 0
    assert json.loads(app.kb.stats.to_json()) == before
