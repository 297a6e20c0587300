"""The Qdrant `messages` collection (tracked messages' embeddings) and an in-memory window index.

Qdrant is the system of record for message vectors: one point per stored message (dense cosine
vector + payload: key, platform, chat id, message id, time). It goes through the `VectorStore`'s
client and lock (`storage/vectors.py`), so embedded local mode is still called from one thread at a
time and off the event loop.

Same-story lookups do not query Qdrant: embedded Qdrant scans in Python and a lookup has a 30 ms
budget. `WindowIndex` keeps the vectors of the messages still inside the retention period as one
contiguous float32 matrix (plus time, chat and per-row extras) and answers "top-k by cosine among
other chats within a time window" with one mat-vec. It is filled from Qdrant at start-up and kept in
step on every write, the same arrangement as `storage/local_index.py` for fact-checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qdrant_client import models

from storage.vectors import VectorStore

VECTOR = "text"
_NS = uuid.UUID("0b7d3f4e-9c1a-4b6e-8f21-5a3c9e7d1b20")  # message key -> stable point id


def point_id(key: str) -> str:
    return str(uuid.uuid5(_NS, key))


@dataclass(frozen=True)
class MessagePoint:
    key: str  # StoredMessage.id
    vector: np.ndarray
    platform: str
    chat_id: str
    message_id: str
    ts: float


class MessageVectors:
    """The `messages` collection. All methods are async and run the client in a worker thread."""

    def __init__(self, store: VectorStore, name: str):
        self.store = store
        self.name = name

    async def _run(self, fn, *args, **kwargs):
        # VectorStore._run: the client's lock + a worker thread. Sharing its lock is required (embedded
        # Qdrant is not thread-safe), so we go through it rather than opening a second client.
        return await self.store._run(fn, *args, **kwargs)

    @property
    def _client(self):
        return self.store._client

    async def ensure(self) -> None:
        await self.store.ensure_dense_collection(self.name, VECTOR, {
            "ts": models.PayloadSchemaType.FLOAT, "chat": models.PayloadSchemaType.KEYWORD})

    async def upsert(self, points: Sequence[MessagePoint]) -> None:
        if not points:
            return
        structs = [models.PointStruct(id=point_id(p.key), vector={VECTOR: np.asarray(p.vector, np.float32).tolist()},
                                      payload={"key": p.key, "platform": p.platform, "chat": f"{p.platform}:{p.chat_id}",
                                               "message_id": p.message_id, "ts": p.ts})
                   for p in points]
        await self._run(self._client.upsert, self.name, points=structs, wait=True)

    async def delete(self, keys: Sequence[str]) -> None:
        if not keys:
            return
        ids = [point_id(k) for k in keys]
        def delete() -> None:
            for i in range(0, len(ids), 1000):
                self._client.delete(self.name, points_selector=models.PointIdsList(points=ids[i:i + 1000]), wait=True)
        await self._run(delete)

    async def load(self, since_ts: float) -> dict[str, np.ndarray]:
        """key -> vector of every point at or after `since_ts` (start-up fill of the window index)."""
        flt = models.Filter(must=[models.FieldCondition(key="ts", range=models.Range(gte=since_ts))])
        def scroll() -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            offset = None
            while True:
                pts, offset = self._client.scroll(self.name, scroll_filter=flt, limit=2048, offset=offset,
                                                  with_payload=["key"], with_vectors=[VECTOR])
                for p in pts:
                    vec = p.vector.get(VECTOR) if isinstance(p.vector, dict) else p.vector
                    out[str((p.payload or {}).get("key"))] = np.asarray(vec, dtype=np.float32)
                if offset is None:
                    return out
        return await self._run(scroll)

    async def count(self) -> int:
        return (await self._run(self._client.count, self.name, exact=True)).count


class WindowIndex:
    """Vectors of retained messages in one matrix, for "top-k same-story candidates" in one mat-vec.

    Retention (30 days) is longer than the window (7 days), so most rows are outside any one search.
    Rows are therefore kept sorted by time: a search slices the rows within the window (a view, no
    copy) and multiplies only those. Messages arrive roughly in time order, so a new row is usually
    appended to the sorted part; an out-of-order one goes to a small unsorted tail that every search
    also scans, and the whole matrix is re-sorted (dropping deleted rows) when the tail or the dead
    rows grow large. Row numbers change on a re-sort: use them only under the caller's lock, right
    after a search. `extras[row]` holds what the caller needs per message (entities, terms, story).
    """

    def __init__(self, dim: int, capacity: int = 1024):
        self.dim = dim
        self._vecs = np.zeros((capacity, dim), dtype=np.float32)
        self._ts = np.zeros(capacity, dtype=np.float64)
        self._chat = np.zeros(capacity, dtype=np.int64)
        self._alive = np.zeros(capacity, dtype=bool)
        self._group = np.zeros(capacity, dtype=np.int64)  # story code per row (caller's numbering)
        self.keys: list[str] = []
        self.extras: list[Any] = []
        self.row: dict[str, int] = {}
        self._chat_ids: dict[str, int] = {}
        self.n = 0  # rows used (alive or dead)
        self.sorted_n = 0  # rows [0, sorted_n) are in time order; [sorted_n, n) is the unsorted tail
        self.dead = 0

    def __len__(self) -> int:
        return self.n - self.dead

    def chat_code(self, chat: str) -> int:
        return self._chat_ids.setdefault(chat, len(self._chat_ids) + 1)

    def _grow(self) -> None:
        cap = max(1024, 2 * self.n)
        self._vecs = np.concatenate([self._vecs, np.zeros((cap - len(self._ts), self.dim), np.float32)])
        self._ts = np.concatenate([self._ts, np.zeros(cap - len(self._ts))])
        self._chat = np.concatenate([self._chat, np.zeros(cap - len(self._chat), np.int64)])
        self._alive = np.concatenate([self._alive, np.zeros(cap - len(self._alive), bool)])
        self._group = np.concatenate([self._group, np.zeros(cap - len(self._group), np.int64)])

    def add(self, key: str, vector: np.ndarray, ts: float, chat: str, extra: Any, group: int = 0) -> int:
        if key in self.row:
            self.remove([key])
        if self.n == len(self._ts):
            self._grow()
        i = self.n
        v = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(v))
        self._vecs[i] = v / norm if norm > 0 else v
        self._ts[i] = ts
        self._chat[i] = self.chat_code(chat)
        self._alive[i] = True
        self._group[i] = group
        self.keys.append(key)
        self.extras.append(extra)
        self.row[key] = i
        self.n += 1
        if self.sorted_n == i and (i == 0 or ts >= self._ts[i - 1]):
            self.sorted_n += 1  # in order: the sorted part grows
        elif self.n - self.sorted_n > max(2048, self.n // 8):
            self._resort()
        return self.row[key]

    def remove(self, keys: Sequence[str]) -> list[Any]:
        """Drop rows; returns their extras (the caller un-counts their terms)."""
        gone = []
        for k in keys:
            i = self.row.pop(k, None)
            if i is None:
                continue
            self._alive[i] = False
            gone.append(self.extras[i])
            self.extras[i] = None
            self.dead += 1
        if self.dead > 1024 and self.dead * 2 > self.n:
            self._resort()
        return gone

    def _resort(self) -> None:
        """Drop deleted rows and put everything in time order (stable, so equal times keep arrival order)."""
        live = np.flatnonzero(self._alive[:self.n])
        keep = live[np.argsort(self._ts[live], kind="stable")]
        self._vecs = np.ascontiguousarray(self._vecs[keep])
        self._ts, self._chat, self._group = self._ts[keep], self._chat[keep], self._group[keep]
        self._alive = np.ones(len(keep), dtype=bool)
        self.keys = [self.keys[i] for i in keep]
        self.extras = [self.extras[i] for i in keep]
        self.row = {k: r for r, k in enumerate(self.keys)}
        self.n = self.sorted_n = len(keep)
        self.dead = 0

    def older_than(self, ts: float) -> list[str]:
        rows = np.flatnonzero(self._alive[:self.n] & (self._ts[:self.n] < ts))
        return [self.keys[i] for i in rows]

    def keys_of_chat(self, chat: str) -> list[str]:
        code = self._chat_ids.get(chat)
        if code is None:
            return []
        rows = np.flatnonzero(self._alive[:self.n] & (self._chat[:self.n] == code))
        return [self.keys[i] for i in rows]

    def group(self, row: int) -> int:
        return int(self._group[row])

    def relabel(self, groups: Sequence[int], into: int) -> None:
        """Merge groups (stories): one vectorised pass instead of touching each member."""
        if groups:
            rows = np.flatnonzero(np.isin(self._group[:self.n], np.asarray(groups, dtype=np.int64)))
            self._group[rows] = into

    def group_rows(self, groups: Sequence[int], *, t: float, window_s: float,
                   exclude_chats: Sequence[str] = ()) -> np.ndarray:
        """Live rows of `groups` within `window_s` of `t`, outside `exclude_chats`."""
        codes = [c for chat in exclude_chats if (c := self._chat_ids.get(chat)) is not None]
        g = np.asarray(groups, dtype=np.int64)
        times = self._ts[:self.sorted_n]
        spans = [(int(np.searchsorted(times, t - window_s, side="left")),
                  int(np.searchsorted(times, t + window_s, side="right"))), (self.sorted_n, self.n)]
        out = []
        for lo, hi in spans:
            if hi <= lo:
                continue
            ok = self._alive[lo:hi] & np.isin(self._group[lo:hi], g) & (np.abs(self._ts[lo:hi] - t) <= window_s)
            for code in codes:
                ok &= self._chat[lo:hi] != code
            out.append(np.flatnonzero(ok) + lo)
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def vector(self, row: int) -> np.ndarray:
        return self._vecs[row]

    def ts(self, row: int) -> float:
        return float(self._ts[row])

    def _score(self, lo: int, hi: int, q: np.ndarray, floor: float, t: float | None, window_s: float,
               codes: list[int]) -> tuple[np.ndarray, np.ndarray]:
        if hi <= lo:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        cos = self._vecs[lo:hi] @ q  # a contiguous slice: no copy of the matrix
        ok = self._alive[lo:hi] & (cos >= floor)
        if t is not None:
            ok &= np.abs(self._ts[lo:hi] - t) <= window_s
        for code in codes:
            ok &= self._chat[lo:hi] != code
        rows = np.flatnonzero(ok)
        return rows + lo, cos[rows]

    def search(self, query: np.ndarray, *, t: float | None, window_s: float, exclude_chats: Sequence[str] = (),
               floor: float, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) of the best `limit` live rows with cosine >= floor, outside every chat of
        `exclude_chats`, within `window_s` of `t` (no time limit if t is None), best first."""
        if self.n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        q = np.asarray(query, dtype=np.float32).ravel()
        codes = [c for chat in exclude_chats if (c := self._chat_ids.get(chat)) is not None]
        lo, hi = 0, self.sorted_n
        if t is not None:
            times = self._ts[:self.sorted_n]
            lo = int(np.searchsorted(times, t - window_s, side="left"))
            hi = int(np.searchsorted(times, t + window_s, side="right"))
        r1, c1 = self._score(lo, hi, q, floor, t, window_s, codes)
        r2, c2 = self._score(self.sorted_n, self.n, q, floor, t, window_s, codes)
        rows, cos = (np.concatenate([r1, r2]), np.concatenate([c1, c2])) if r2.size else (r1, c1)
        if rows.size > limit:
            part = np.argpartition(-cos, limit - 1)[:limit]
            rows, cos = rows[part], cos[part]
        order = np.argsort(-cos, kind="stable")
        return rows[order], cos[order]
