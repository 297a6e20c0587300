"""A bounded memo of points' stored dense vectors, for the embedded backend (storage/edge_store.py).

Every match reads the stored vectors of its ~110 candidates (four per fact-check: 1,664 floats), and the
same fact-checks come back as candidates query after query. Qdrant Edge hands vectors to Python as
lists of floats, so reading them back was most of a candidate search: at 10k claims, 26 ms of CPU with
the vectors against 9 ms without (/tmp/l2/sv.py, 2026-11-24, loaded machine). Points already read are
answered from here.

Correctness: entries are per physical collection, and any write to a collection forgets all of its
entries and moves its generation on; a read that started before the write cannot put back what it read
(its generation is stale). Only the embedded backend uses it: it owns its files (one process per data
dir), so every write goes through the process that holds the memo. A server may be written by others.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# A fact-check's four vectors are 6.5 KB: 64 MB holds ~10,000 fact-checks, the candidates of ~90
# distinct messages at 110 candidates each (fewer distinct ones, since popular claims recur).
MEMO_BYTES = 64 << 20


class PointVectorMemo:
    """Vectors by (collection, point id), the least recently used dropped past `max_bytes` in all;
    safe across threads."""

    def __init__(self, max_bytes: int = MEMO_BYTES):
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: dict[str, OrderedDict[str, dict[str, np.ndarray]]] = {}
        self._generation: dict[str, int] = {}
        self._bytes = 0

    def generation(self, collection: str) -> int:
        """Read before fetching what is missing; `remember` drops what was fetched across a write."""
        with self._lock:
            return self._generation.get(collection, 0)

    def lookup(self, collection: str, ids: Sequence[str], fields: Sequence[str]) \
            -> tuple[dict[str, dict[str, np.ndarray]], list[str]]:
        """The remembered vectors among `ids` that have every one of `fields` (marked recently used),
        and the other ids, each once."""
        found: dict[str, dict[str, np.ndarray]] = {}
        with self._lock:
            items = self._items.get(collection)
            if items:
                for pid in ids:
                    entry = items.get(pid)
                    if entry is not None and all(f in entry for f in fields):
                        found[pid] = entry
                        items.move_to_end(pid)
        return found, [pid for pid in dict.fromkeys(ids) if pid not in found]

    def remember(self, collection: str, generation: int,
                 points: Iterable[tuple[str, Mapping[str, np.ndarray]]]) -> None:
        with self._lock:
            if self._generation.get(collection, 0) != generation:  # written meanwhile: maybe stale
                return
            items = self._items.setdefault(collection, OrderedDict())
            for pid, vectors in points:
                entry = dict(vectors)
                size = sum(v.nbytes for v in entry.values())
                if size > self.max_bytes:
                    continue
                old = items.pop(pid, None)
                if old is not None:
                    self._bytes -= sum(v.nbytes for v in old.values())
                items[pid] = entry
                self._bytes += size
            self._evict()

    def _evict(self) -> None:
        while self._bytes > self.max_bytes:
            # The oldest entry of the largest collection: in practice the fact-checks are the only one.
            items = max(self._items.values(), key=len)
            _, old = items.popitem(last=False)
            self._bytes -= sum(v.nbytes for v in old.values())

    def forget(self, collection: str) -> None:
        """After a write to `collection` (or its deletion): nothing of it is answered from here."""
        with self._lock:
            self._generation[collection] = self._generation.get(collection, 0) + 1
            items = self._items.pop(collection, None)
            if items:
                self._bytes -= sum(v.nbytes for e in items.values() for v in e.values())

    def clear(self) -> None:
        """Forget everything (benchmarks: a timed cold path reads every vector from the engine)."""
        with self._lock:
            for collection in list(self._items):
                self._generation[collection] = self._generation.get(collection, 0) + 1
            self._items.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return sum(len(items) for items in self._items.values())
