"""The claim-matching quality eval of `tipline bench report`, from query vectors kept between runs.

Why: the eval ranks ~600 tweets (CLEF dev, a train sample, our Russian dev translations) through
`ClaimMatcher.by_text`, which embeds each with MiniLM, e5 and USE: 0.24 CPU-s per English tweet and 0.31
per Russian one measured, most of it embedding the same texts with the same models every run, and nothing
of it is timed (`bench match` times the match path, cold). Measured at full size (the report's claim
matching with 2 latency messages, vectors of the claims kept either way): 139.6 CPU-s computing the query
vectors, 62.4 from kept ones, the same figures.

How, keeping the figures the production matcher's:
- the ranking goes through a `ClaimMatcher` over the app's own knowledge base (same SQLite, vector store,
  statistics and re-rankers: `bot.app.build_matcher`) whose three encoders answer from a table of notes
  (text -> vector) and call the app's real encoders for a text not in it, noting the answer. by_text
  embeds one text per call, so a noted vector is the very row the real encoder returns for that call;
- the notes of a split's queries are kept in the vector cache, keyed by the three models' identities and
  the query texts; a first run starts with none (every text computed, as the production path does);
- every run first ranks `SAMPLE` queries of the split both with the app's own matcher (its memos cleared)
  and with the noted one: any difference in ids or probabilities throws the notes away and the whole
  split is ranked by the app's own matcher, as when nothing was kept.
"""

from __future__ import annotations

from bot.app import App, build_matcher
from evals.claim_eval import rank_queries
from evals.noted_encoders import Notes, dims_of, noted_kb
from evals.vector_cache import VectorCache, identity_of_embedder

LABEL = "match-queries"
SAMPLE = 10  # queries per split ranked both ways: ~5 s of a run on 2 cores


async def model_identities(app: App) -> list[str]:
    kb = app.kb
    return [await identity_of_embedder(kb.embedder.embed, kb.embedder.model_name),
            await identity_of_embedder(kb.multilingual.queries, kb.multilingual.model_name),
            await identity_of_embedder(kb.use.encode, kb.use.model_name)]


async def rank_kept(app: App, queries: list[tuple[str, str]], source_of: dict[str, str], cache: VectorCache,
                    sample: int = SAMPLE) -> tuple[dict[str, list[tuple[str, float]]], str]:
    """`rank_queries(app.matcher, queries, source_of)`, with the query vectors from `cache` when it kept
    them for these queries and models (see the module doc). Also says how: "kept" (every vector from the
    cache), "computed" (embedded now, then kept) or "computed: kept vectors disagreed" (not kept)."""
    models = await model_identities(app)
    texts = [t for _, t in queries]
    found = cache.kept(LABEL, models, texts)
    notes = Notes(found)
    kb = noted_kb(app.kb, notes)
    await kb.open()  # reads the stored statistics; the same model names, so nothing is re-embedded
    noted = build_matcher(kb, app.settings)
    head, rest = queries[:sample], queries[sample:]
    app.clear_embedding_caches()
    real = await rank_queries(app.matcher, head, source_of)
    if await rank_queries(noted, head, source_of) != real:
        return real | await rank_queries(app.matcher, rest, source_of), "computed: kept vectors disagreed"
    ranked = real | await rank_queries(noted, rest, source_of)
    if found is not None and notes.computed == 0:
        return ranked, "kept"
    cache.keep(LABEL, models, texts, notes.arrays(dims_of(app.kb)))
    return ranked, "computed"
