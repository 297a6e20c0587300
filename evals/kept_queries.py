"""The claim-matching quality eval of `tipline bench report`, from query vectors kept between runs.

Why: the eval ranks ~600 tweets (CLEF dev, a train sample, our Russian dev translations) through
`ClaimMatcher.by_text`, which embeds each with MiniLM, e5 and USE: 0.24 CPU-s per English tweet and 0.31
per Russian one measured, ~80% of it embedding, so ~130 CPU-s a run spent on the same texts with the same
models, and nothing of it is timed (`bench match` times the match path, cold).

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

from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from bot.app import App, build_matcher
from core.knowledge import KnowledgeBase
from core.multilingual import MultilingualEncoder
from core.text_embedder import TextEmbedder
from core.use_encoder import FeatureEncoder
from evals.claim_eval import rank_queries
from evals.vector_cache import VectorCache, identity_of_embedder

LABEL = "match-queries"
SAMPLE = 10  # queries per split ranked both ways: ~5 s of a run on 2 cores
_MODELS = ("english", "multi", "use")


class Notes:
    """Vectors by text for each of the three models; `computed` counts the texts the real models embedded."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None):
        self.table: dict[str, dict[str, np.ndarray]] = {m: {} for m in _MODELS}
        self.computed = 0
        for m in _MODELS:
            if arrays is not None and f"{m}_texts" in arrays:
                self.table[m] = dict(zip(arrays[f"{m}_texts"].tolist(), arrays[m].astype(np.float32)))

    def arrays(self, dims: dict[str, int]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for m in _MODELS:
            texts = list(self.table[m])
            out[f"{m}_texts"] = np.array(texts, dtype=str)
            out[m] = np.stack([self.table[m][t] for t in texts]) if texts else np.zeros((0, dims[m]), np.float32)
        return out

    def _missing(self, model: str, texts: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if t not in self.table[model]))

    def _rows(self, model: str, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[model][t] for t in texts]).astype(np.float32, copy=False)

    async def rows(self, model: str, texts: Sequence[str],
                   compute: Callable[[list[str]], Awaitable[np.ndarray]]) -> np.ndarray:
        todo = self._missing(model, texts)
        if todo:
            self.table[model].update(zip(todo, np.asarray(await compute(todo), dtype=np.float32)))
            self.computed += len(todo)
        return self._rows(model, texts)

    def rows_sync(self, model: str, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        todo = self._missing(model, texts)
        if todo:
            self.table[model].update(zip(todo, np.asarray(compute(todo), dtype=np.float32)))
            self.computed += len(todo)
        return self._rows(model, texts)


class NotedEmbedder:
    """A `TextEmbedder` answering from `notes` (the English model's)."""

    def __init__(self, real: TextEmbedder, notes: Notes):
        self.real, self.notes = real, notes
        self.model_name, self.dim = real.model_name, real.dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self.notes.rows("english", texts, self.real.embed)

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.notes.rows_sync("english", texts, self.real.embed_sync)

    def clear_cache(self) -> None:
        self.real.clear_cache()


class NotedMultilingual:
    """A `MultilingualEncoder` answering queries from `notes`; passages (never embedded by a match) go to
    the real model."""

    def __init__(self, real: MultilingualEncoder, notes: Notes):
        self.real, self.notes = real, notes
        self.model_name, self.dim = real.model_name, real.dim

    async def queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.notes.rows("multi", texts, self.real.queries)

    def queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.notes.rows_sync("multi", texts, self.real.queries_sync)

    async def passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self.real.passages(texts)

    def passages_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.real.passages_sync(texts)

    def clear_cache(self) -> None:
        self.real.clear_cache()


class NotedUse:
    """A `FeatureEncoder` answering from `notes` (USE's)."""

    def __init__(self, real: FeatureEncoder, notes: Notes):
        self.real, self.notes = real, notes
        self.model_name, self.dim = real.model_name, real.dim

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        return await self.notes.rows("use", texts, self.real.encode)

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.notes.rows_sync("use", texts, self.real.encode_sync)

    def clear_cache(self) -> None:
        self.real.clear_cache()


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
    kb = app.kb
    noted_kb = KnowledgeBase(kb.db, kb.vectors, NotedEmbedder(kb.embedder, notes), kb.collection,
                             NotedMultilingual(kb.multilingual, notes), NotedUse(kb.use, notes))
    await noted_kb.open()  # reads the stored statistics; the same model names, so nothing is re-embedded
    noted = build_matcher(noted_kb, app.settings)
    head, rest = queries[:sample], queries[sample:]
    app.clear_embedding_caches()
    real = await rank_queries(app.matcher, head, source_of)
    if await rank_queries(noted, head, source_of) != real:
        return real | await rank_queries(app.matcher, rest, source_of), "computed: kept vectors disagreed"
    ranked = real | await rank_queries(noted, rest, source_of)
    if found is not None and notes.computed == 0:
        return ranked, "kept"
    cache.keep(LABEL, models, texts, notes.arrays({"english": kb.embedder.dim, "multi": kb.multilingual.dim,
                                                   "use": kb.use.dim}))
    return ranked, "computed"
