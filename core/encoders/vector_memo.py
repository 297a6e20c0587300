"""What the text encoders share: a bounded memo of vectors by text, and the seed's precomputed table.

A check embeds the same cleaned text more than once (matching, then "also reported by"), and a forward of
a popular message comes back often; each encoder keeps its last few thousand vectors. The seed knowledge
base's vectors ship with the package (training/seed_vectors.py), so a new data dir does not run the slow
models over the seed on first start (~10 s of e5).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

from core.encoders.npy_files import read_arrays

K = TypeVar("K", bound=Hashable)


class VectorMemo(Generic[K]):
    """Vectors by key, the least recently used dropped past `size`; safe across threads."""

    def __init__(self, size: int = 4096):
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[K, np.ndarray] = OrderedDict()

    def lookup(self, keys: Sequence[K]) -> tuple[dict[K, np.ndarray], list[K]]:
        """The remembered vectors among `keys` (marked recently used), and the missing keys, each once."""
        with self._lock:
            found = {k: self._items[k] for k in keys if k in self._items}
            for k in found:
                self._items.move_to_end(k)
        return found, list(dict.fromkeys(k for k in keys if k not in found))

    def known(self, keys: Sequence[K]) -> np.ndarray | None:
        """The rows of `keys` when every one is remembered (marked recently used), else None: an answer
        the caller can give without a worker thread."""
        with self._lock:
            if not all(k in self._items for k in keys):
                return None
            for k in keys:
                self._items.move_to_end(k)
            return np.stack([self._items[k] for k in keys]).astype(np.float32, copy=False)

    def remember(self, keys: Sequence[K], vectors: np.ndarray | Sequence[np.ndarray]) -> None:
        with self._lock:
            self._items.update(zip(keys, vectors))
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def vectors(self, keys: Sequence[K], compute: Callable[[list[K]], np.ndarray]) -> np.ndarray:
        """One row per key: remembered ones as they were, the others from `compute` (called once, with
        each missing key once, outside the memo's lock) and remembered."""
        found, todo = self.lookup(keys)
        if todo:
            fresh = np.asarray(compute(todo), dtype=np.float32).reshape(len(todo), -1)
            found.update(zip(todo, fresh))
            self.remember(todo, fresh)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (an all-zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def seed_table(path: Path, model_name: str, dim: int) -> dict[str, np.ndarray] | None:
    """The shipped vectors of the seed's texts, or None when the file is missing or was written by
    another model (then the model embeds the seed itself)."""
    try:
        data = read_arrays(path, ("model", "vectors", "texts"))
    except OSError:
        return None
    if str(data["model"]) != model_name or data["vectors"].shape[1] != dim:
        return None
    vecs = data["vectors"].astype(np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    return dict(zip(data["texts"].tolist(), vecs))


def with_table(texts: Sequence[str], table: dict[str, np.ndarray], dim: int,
               compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """Rows for `texts`: from `table` where it has them, the rest from `compute` (called once)."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    todo = [t for t in texts if t not in table]
    fresh = dict(zip(todo, compute(todo))) if todo else {}
    return np.stack([table[t] if t in table else fresh[t] for t in texts])
