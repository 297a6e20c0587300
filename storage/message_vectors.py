"""The `messages` collection: tracked messages' embeddings and what same-story scoring reads of them.

One point per stored message: a dense cosine vector and the payload

    key, platform, chat ("platform:chat_id"), message_id, ts (unix seconds),
    story (the key of the story's first message), story_start (its time),
    ents (alias-normalised entities), terms (rare-term ids), denies (polarity cue)

`ts`, `chat` and `story` are indexed, so "the nearest messages of other chats within the window" is
one query with a payload filter (time range, chats excluded) and "the rest of these stories inside the
window" one filtered scroll; the engine does both (Qdrant Edge embedded, or a server). There is no
copy of the vectors in memory any more (the window index this replaced held every retained vector).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import numpy as np

from storage.vectors import (
    AnyOf,
    Between,
    CollectionSpec,
    Point,
    Query,
    VectorStore,
    Where,
)

VECTOR = "text"
_NS = uuid.UUID("0b7d3f4e-9c1a-4b6e-8f21-5a3c9e7d1b20")  # message key -> stable point id
SCORING_FIELDS = ["key", "chat", "ts", "story", "story_start", "ents", "terms", "denies"]


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
    story: str
    story_start: float
    entities: frozenset[str]
    terms: frozenset[int]
    denies: bool

    @property
    def chat(self) -> str:
        return f"{self.platform}:{self.chat_id}"


@dataclass(frozen=True)
class StoredMessageVector:
    """A stored message as scoring sees it (no vector); `score` is the cosine when it came from a search."""

    key: str
    chat: str
    ts: float
    story: str
    story_start: float
    entities: frozenset[str]
    terms: frozenset[int]
    denies: bool
    score: float = 0.0
    complete: bool = True  # False for a point written before the story fields existed (an older data dir)

    @classmethod
    def of(cls, payload: dict, score: float = 0.0) -> StoredMessageVector:
        ts = float(payload.get("ts", 0.0))
        key = str(payload.get("key", ""))
        return cls(key, str(payload.get("chat", "")), ts, str(payload.get("story") or key),
                   float(payload.get("story_start", ts)), frozenset(payload.get("ents") or ()),
                   frozenset(int(t) for t in payload.get("terms") or ()), bool(payload.get("denies", False)), score,
                   "story" in payload)


def _payload(p: MessagePoint) -> dict:
    return {"key": p.key, "platform": p.platform, "chat": p.chat, "message_id": p.message_id, "ts": p.ts,
            "story": p.story, "story_start": p.story_start, "ents": sorted(p.entities), "terms": sorted(p.terms),
            "denies": p.denies}


def _window(t: float | None, window_s: float, exclude_chats: Sequence[str],
            extra: tuple = ()) -> Where:
    must = list(extra)
    if t is not None:
        must.append(Between("ts", gte=t - window_s, lte=t + window_s))
    return Where(must=tuple(must), must_not=(AnyOf("chat", tuple(exclude_chats)),) if exclude_chats else ())


class MessageVectors:
    def __init__(self, store: VectorStore, name: str):
        self.store = store
        self.name = name

    async def ensure(self) -> None:
        await self.store.ensure_collection(self.name, CollectionSpec(
            dense={VECTOR: self.store.dim}, indexes={"ts": "float", "chat": "keyword", "story": "keyword"}))

    async def upsert(self, points: Sequence[MessagePoint]) -> None:
        await self.store.upsert(self.name, [Point(point_id(p.key), {VECTOR: np.asarray(p.vector, np.float32)},
                                                  _payload(p)) for p in points])

    async def delete(self, keys: Sequence[str]) -> None:
        await self.store.delete(self.name, [point_id(k) for k in keys])

    async def nearest(self, vector: np.ndarray, *, t: float | None, window_s: float,
                      exclude_chats: Sequence[str] = (), floor: float, limit: int) -> list[StoredMessageVector]:
        """The best `limit` messages with cosine >= floor, outside every chat of `exclude_chats`, within
        `window_s` of `t` (no time limit if t is None), best first."""
        [points] = await self.store.query_batch(self.name, [Query(
            VECTOR, np.asarray(vector, np.float32), limit, where=_window(t, window_s, exclude_chats),
            min_score=floor)], payload=SCORING_FIELDS)
        return [StoredMessageVector.of(p.payload, p.score) for p in points]

    async def story_members(self, stories: Sequence[str], *, t: float, window_s: float,
                            exclude_chats: Sequence[str] = ()) -> list[StoredMessageVector]:
        """Messages of `stories` within `window_s` of `t`, outside `exclude_chats`."""
        if not stories:
            return []
        out = []
        async for records in self.store.scroll(self.name, _window(t, window_s, exclude_chats,
                                                                  (AnyOf("story", tuple(stories)),)),
                                               payload=["key", "chat", "ts", "story", "story_start"]):
            out.extend(StoredMessageVector.of(r.payload) for r in records)
        return out

    async def relabel(self, stories: Sequence[str], into: str, start: float) -> None:
        """Merge stories: every member of `stories` now belongs to `into` (which started at `start`)."""
        if stories:
            await self.store.set_payload_where(self.name, Where(must=(AnyOf("story", tuple(stories)),)),
                                               {"story": into, "story_start": start})

    async def scoring_data(self, keys: Sequence[str]) -> dict[str, StoredMessageVector]:
        """What is stored for these keys (re-ingesting a key replaces it)."""
        records = await self.store.retrieve(self.name, [point_id(k) for k in keys], payload=SCORING_FIELDS)
        return {m.key: m for m in (StoredMessageVector.of(r.payload) for r in records)}

    async def scan(self, where: Where | None = None) -> AsyncIterator[list[StoredMessageVector]]:
        """Every stored message (matching `where`), a batch at a time, without vectors."""
        async for records in self.store.scroll(self.name, where, payload=SCORING_FIELDS, batch=4096):
            yield [StoredMessageVector.of(r.payload) for r in records]

    async def older_than(self, ts: float) -> list[StoredMessageVector]:
        return [m async for batch in self.scan(Where(must=(Between("ts", lt=ts),))) for m in batch]

    async def of_chat(self, chat: str) -> list[StoredMessageVector]:
        return [m async for batch in self.scan(Where(must=(AnyOf("chat", (chat,)),))) for m in batch]

    async def vectors_of(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        records = await self.store.retrieve(self.name, [point_id(k) for k in keys], payload=["key"], vectors=[VECTOR])
        return {str(r.payload.get("key")): r.dense[VECTOR] for r in records if VECTOR in r.dense}

    async def count(self) -> int:
        return await self.store.count(self.name)
