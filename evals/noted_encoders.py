"""Encoders that answer from notes of (text, vector) and ask the real model for a text not noted (noting
its answer), for the untimed parts of `tipline bench report` that go through production code: the
claim-matching quality eval (evals/kept_queries.py) and the fact-checks' vectors (evals/vector_cache.py).
A noted vector is the real model's own answer for that text, so what runs on notes computes what it
would have computed; nothing timed ever runs on them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from core.matching.knowledge_base import KnowledgeBase
from core.encoders.multilingual import MultilingualEncoder
from core.encoders.token_align import PROJECTION_DIM
from core.encoders.text_embedder import TextEmbedder
from core.encoders.use_encoder import FeatureEncoder

MODELS = ("english", "multi", "multi_passages", "use")
STATES = {"multi": "multi_states", "multi_passages": "multi_passage_states"}  # e5's token states, by text


class Notes:
    """Vectors by text, per model ("english", "multi" queries, "multi_passages", "use"); `computed`
    counts the texts the real models embedded."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None):
        self.table: dict[str, dict[str, np.ndarray]] = {m: {} for m in MODELS}
        self.states: dict[str, dict[str, np.ndarray]] = {m: {} for m in STATES.values()}
        self.computed = 0
        for m in MODELS:
            if arrays is not None and f"{m}_texts" in arrays:
                self.note(m, arrays[f"{m}_texts"].tolist(), arrays[m])
        for m in self.states:
            if arrays is not None and f"{m}_texts" in arrays:
                parts = np.split(arrays[m], np.cumsum(arrays[f"{m}_lens"])[:-1]) if len(arrays[f"{m}_lens"]) else []
                self.states[m].update(zip(arrays[f"{m}_texts"].tolist(), parts))

    def note(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.table[model].update(zip(texts, np.asarray(vectors, dtype=np.float32)))

    def arrays(self, dims: dict[str, int]) -> dict[str, np.ndarray]:
        """Every note as arrays for `VectorCache.keep` (`dims`: each model's dimension, for an empty table)."""
        out: dict[str, np.ndarray] = {}
        for m in MODELS:
            texts = list(self.table[m])
            out[f"{m}_texts"] = np.array(texts, dtype=str)
            out[m] = np.stack([self.table[m][t] for t in texts]) if texts else np.zeros((0, dims[m]), np.float32)
        for m, table in self.states.items():
            texts = list(table)
            out[f"{m}_texts"] = np.array(texts, dtype=str)
            out[f"{m}_lens"] = np.array([len(table[t]) for t in texts], dtype=np.int64)
            out[m] = np.concatenate([table[t] for t in texts]) if texts else np.zeros((0, PROJECTION_DIM), np.float16)
        return out

    async def rows_with_states(self, model: str, texts: Sequence[str],
                               compute: Callable[[list[str]], Awaitable[tuple[np.ndarray, list[np.ndarray]]]]
                               ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Vectors and token states, both noted; a text lacking either is computed again."""
        states = self.states[STATES[model]]
        todo = list(dict.fromkeys(t for t in texts if t not in self.table[model] or t not in states))
        if todo:
            vecs, fresh = await compute(todo)
            self.note(model, todo, vecs)
            states.update(zip(todo, fresh))
            self.computed += len(todo)
        return self._rows(model, texts), [states[t] for t in texts]

    def rows_with_states_sync(self, model: str, texts: Sequence[str],
                              compute: Callable[[list[str]], tuple[np.ndarray, list[np.ndarray]]]
                              ) -> tuple[np.ndarray, list[np.ndarray]]:
        states = self.states[STATES[model]]
        todo = list(dict.fromkeys(t for t in texts if t not in self.table[model] or t not in states))
        if todo:
            vecs, fresh = compute(todo)
            self.note(model, todo, vecs)
            states.update(zip(todo, fresh))
            self.computed += len(todo)
        return self._rows(model, texts), [states[t] for t in texts]

    def _missing(self, model: str, texts: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if t not in self.table[model]))

    def _rows(self, model: str, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[model][t] for t in texts]).astype(np.float32, copy=False)

    async def rows(self, model: str, texts: Sequence[str],
                   compute: Callable[[list[str]], Awaitable[np.ndarray]]) -> np.ndarray:
        todo = self._missing(model, texts)
        if todo:
            self.note(model, todo, await compute(todo))
            self.computed += len(todo)
        return self._rows(model, texts)

    def rows_sync(self, model: str, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        todo = self._missing(model, texts)
        if todo:
            self.note(model, todo, compute(todo))
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
    """A `MultilingualEncoder` answering from `notes` (queries and passages apart: e5 embeds them differently)."""

    def __init__(self, real: MultilingualEncoder, notes: Notes):
        self.real, self.notes = real, notes
        self.model_name, self.dim, self.states_model = real.model_name, real.dim, real.states_model

    async def queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.notes.rows("multi", texts, self.real.queries)

    async def queries_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await self.notes.rows_with_states("multi", texts, self.real.queries_with_states)

    async def passages_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await self.notes.rows_with_states("multi_passages", texts, self.real.passages_with_states)

    def passages_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.notes.rows_with_states_sync("multi_passages", texts, self.real.passages_with_states_sync)

    def queries_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self.notes.rows_with_states_sync("multi", texts, self.real.queries_with_states_sync)

    def queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.notes.rows_sync("multi", texts, self.real.queries_sync)

    async def passages(self, texts: Sequence[str]) -> np.ndarray:
        return await self.notes.rows("multi_passages", texts, self.real.passages)

    def passages_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self.notes.rows_sync("multi_passages", texts, self.real.passages_sync)

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


def noted_kb(kb: KnowledgeBase, notes: Notes) -> KnowledgeBase:
    """A knowledge base over `kb`'s SQLite and vector store whose encoders answer from `notes`."""
    return KnowledgeBase(kb.db, kb.vectors, NotedEmbedder(kb.embedder, notes), kb.collection,
                         NotedMultilingual(kb.multilingual, notes), NotedUse(kb.use, notes))


def dims_of(kb: KnowledgeBase) -> dict[str, int]:
    return {"english": kb.embedder.dim, "multi": kb.multilingual.dim, "multi_passages": kb.multilingual.dim,
            "use": kb.use.dim}
