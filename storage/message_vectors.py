"""The `messages` collection: tracked messages' embeddings and what same-story scoring reads of them.

One point per stored message: a dense cosine vector and the payload

    key, platform, chat ("platform:chat_id"), message_id, ts (unix seconds),
    story (the key of the story's first message), story_start (its time),
    ents (alias-normalised entities), terms (rare-term ids), denies (polarity cue),
    script ("latin" or "other": which same-story model judges a pair, core/corroboration/story_model.py),
    nums (the text's numbers, core/corroboration/story_numbers.py), states (its e5 token states, core/encoders/token_align.py
    `pack_states`; "" when the multilingual model is off)

and, when the multilingual model is on, a second named vector `multi` (e5): pairs with a non-Latin side
are found and judged on it.

`ts`, `chat` and `story` are indexed, so "the nearest messages of other chats within the window" is
one query with a payload filter (time range, chats excluded) and "the rest of these stories inside the
window" one filtered scroll; the engine does both (Qdrant Edge embedded, or a server). There is no
copy of the vectors in memory any more (the window index this replaced held every retained vector).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

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
MULTI = "multi"
_NS = uuid.UUID("0b7d3f4e-9c1a-4b6e-8f21-5a3c9e7d1b20")  # message key -> stable point id
# `states` is read by the searches (every field) and `scoring_data`, not by scans over the whole collection
# (start-up, retention, /forget), which read `states_chars` (the packed states' length) to know whether it has them.
SCAN_FIELDS = ["key", "chat", "ts", "story", "story_start", "ents", "terms", "denies", "script", "multi", "nums",
               "states_chars"]
SCORING_FIELDS = [*SCAN_FIELDS, "states"]


def point_id(key: str) -> str:
    return str(uuid.uuid5(_NS, key))


@dataclass(frozen=True)
class MessageScoring:
    """What same-story scoring reads of a tracked message, written into its point's payload and read back:
    the one list of these fields for the write model (`MessagePoint`) and the read model
    (`StoredMessageVector`)."""

    key: str  # StoredMessage.id
    chat: str  # "platform:chat_id"
    ts: float
    story: str
    story_start: float
    entities: frozenset[str]
    terms: frozenset[int]
    denies: bool
    # Which same-story model judges its pairs (core.corroboration.story_model.route). Keyword-only, so each model's
    # own fields follow `denies` in its positional order.
    latin: bool = field(default=True, kw_only=True)
    # What the CROSS and NATIVE story models read beyond the above (core.corroboration.story_model.ROUTE_EXTRA): the
    # text's numbers and its e5 token states, packed (core.encoders.token_align.pack_states; "" for none).
    numbers: frozenset[str] = field(default=frozenset(), kw_only=True)
    states: str = field(default="", kw_only=True, repr=False)


@dataclass(frozen=True)
class MessagePoint(MessageScoring):
    """A message to write: its scoring fields, its vectors and where it came from."""

    vector: np.ndarray
    platform: str
    message_id: str
    multi: np.ndarray | None = None  # the multilingual vector, when that model is on


@dataclass(frozen=True)
class StoredMessageVector(MessageScoring):
    """A stored message as scoring sees it (no vector); `score` is the cosine when it came from a search."""

    score: float = 0.0
    complete: bool = True  # False for a point written before the story fields existed (an older data dir)
    has_multi: bool = False  # stored with the multilingual vector (written while that was on)
    has_states: bool = False  # stored with its token states (written by a version that keeps them)

    @classmethod
    def of(cls, payload: dict, score: float = 0.0) -> StoredMessageVector:
        ts = float(payload.get("ts", 0.0))
        key = str(payload.get("key", ""))
        return cls(key, str(payload.get("chat", "")), ts, str(payload.get("story") or key),
                   float(payload.get("story_start", ts)), frozenset(payload.get("ents") or ()),
                   frozenset(payload.get("terms") or ()), bool(payload.get("denies", False)),
                   score, complete="story" in payload, latin=payload.get("script", "latin") == "latin",
                   has_multi=bool(payload.get("multi", False)), numbers=frozenset(payload.get("nums") or ()),
                   states=str(payload.get("states") or ""), has_states="states_chars" in payload)


@dataclass(frozen=True)
class StoryMember:
    """A message of a story as "also reported by" lists it: where and when, without the scoring fields
    (a story can have hundreds of members in the window at 1M stored; one made from the five members'
    fields costs 3.3 µs here, a `StoredMessageVector` from the same fields 6.6 µs)."""

    key: str
    chat: str
    ts: float
    story: str
    story_start: float

    @classmethod
    def of(cls, payload: dict) -> StoryMember:
        ts = float(payload.get("ts", 0.0))
        key = str(payload.get("key", ""))
        return cls(key, str(payload.get("chat", "")), ts, str(payload.get("story") or key),
                   float(payload.get("story_start", ts)))


@dataclass(frozen=True)
class Near:
    """One search of `MessageVectors.nearest_each`: by the named vector `using`, cosine >= floor, of one
    `script` only ("latin"/"other") if given; `anywhere`: over every stored message, ignoring the call's
    window and excluded chats (the strict links of `core.corroboration.story_model.STRICT_THRESHOLD`)."""

    vector: np.ndarray
    floor: float
    using: str = VECTOR
    script: str | None = None
    anywhere: bool = False


def _payload(p: MessagePoint) -> dict:
    return {"key": p.key, "platform": p.platform, "chat": p.chat, "message_id": p.message_id, "ts": p.ts,
            "story": p.story, "story_start": p.story_start, "ents": sorted(p.entities), "terms": sorted(p.terms),
            "denies": p.denies, "script": "latin" if p.latin else "other", "multi": p.multi is not None,
            "nums": sorted(p.numbers), "states": p.states, "states_chars": len(p.states)}


def _window(t: float | None, window_s: float, exclude_chats: Sequence[str],
            extra: tuple = ()) -> Where:
    must = list(extra)
    if t is not None:
        must.append(Between("ts", gte=t - window_s, lte=t + window_s))
    return Where(must=tuple(must), must_not=(AnyOf("chat", tuple(exclude_chats)),) if exclude_chats else ())


class MessageVectors:
    def __init__(self, store: VectorStore, name: str, multi_dim: int | None = None):
        self.store = store
        self.name = name
        self.multi_dim = multi_dim  # None: no multilingual vectors (every pair judged on VECTOR)

    def spec(self) -> CollectionSpec:
        dense = {VECTOR: self.store.dim} | ({MULTI: self.multi_dim} if self.multi_dim else {})
        return CollectionSpec(dense=dense, indexes={"ts": "float", "chat": "keyword", "story": "keyword",
                                                    "script": "keyword"})

    async def ensure(self) -> bool:
        """Create the collection, or recreate it empty when it lacks a vector this version writes (a
        data dir from before the multilingual vectors): SQLite holds every message, and the caller
        embeds them again. True when it was recreated."""
        have = await self.store.spec_of(self.name)
        if have is not None and not set(self.spec().dense) <= set(have.dense):
            await self.store.delete_collection(self.name)
            await self.store.create_collection(self.name, self.spec())
            return True
        await self.store.ensure_collection(self.name, self.spec())
        return False

    async def recreate(self) -> None:
        """Empty the collection (vectors of models no longer in use); SQLite keeps every message."""
        await self.store.delete_collection(self.name)
        await self.store.create_collection(self.name, self.spec())

    async def upsert(self, points: Sequence[MessagePoint]) -> None:
        def vectors(p: MessagePoint) -> dict[str, np.ndarray]:
            out = {VECTOR: np.asarray(p.vector, np.float32)}
            if self.multi_dim:
                if p.multi is None:
                    raise ValueError(f"message {p.key} has no multilingual vector")
                out[MULTI] = np.asarray(p.multi, np.float32)
            return out
        await self.store.upsert(self.name, [Point(point_id(p.key), vectors(p), _payload(p)) for p in points])

    async def delete(self, keys: Sequence[str]) -> None:
        await self.store.delete(self.name, [point_id(k) for k in keys])

    async def purge(self) -> None:
        """No copy of deleted messages' payloads left in the collection's files (`VectorStore.purge`)."""
        await self.store.purge(self.name)

    async def nearest(self, vector: np.ndarray, *, t: float | None, window_s: float,
                      exclude_chats: Sequence[str] = (), floor: float, limit: int, using: str = VECTOR,
                      script: str | None = None) -> list[StoredMessageVector]:
        """The best `limit` messages by the named vector `using` with cosine >= floor, outside every chat
        of `exclude_chats`, within `window_s` of `t` (no time limit if t is None), of one `script` only
        ("latin"/"other") if given, best first."""
        [found] = await self.nearest_each([Near(vector, floor, using, script)], t=t, window_s=window_s,
                                          exclude_chats=exclude_chats, limit=limit)
        return found

    async def nearest_each(self, searches: Sequence[Near], *, t: float | None, window_s: float,
                           exclude_chats: Sequence[str] = (), limit: int) -> list[list[StoredMessageVector]]:
        """`nearest` for each search, in one call to the engine (one batch): a Latin-script lookup asks
        for its Latin neighbours by one vector and the rest by another, and two calls cost twice the
        per-call overhead (a worker-thread hop and the engine's entry, ~1.5 ms each at 20k here).
        Every payload field is read (two more than the scoring fields): Edge picks named fields out of
        each hit's payload at a cost, and at 1M stored a lookup's search took p50 2.16 ms with all of
        them against 2.27 with the ten scoring fields (197 lookups replayed three times, interleaved)."""
        if not searches:
            return []
        results = await self.store.query_batch(self.name, [Query(
            s.using, np.asarray(s.vector, np.float32), limit,
            where=_window(None if s.anywhere else t, window_s, () if s.anywhere else exclude_chats,
                          (AnyOf("script", (s.script,)),) if s.script else ()),
            min_score=s.floor) for s in searches], payload=True)
        return [[StoredMessageVector.of(p.payload, p.score) for p in points] for points in results]

    async def story_members(self, stories: Sequence[str], *, t: float, window_s: float,
                            exclude_chats: Sequence[str] = ()) -> list[StoryMember]:
        """Messages of `stories` within `window_s` of `t`, outside `exclude_chats`."""
        if not stories:
            return []
        out: list[StoryMember] = []
        async for records in self.store.scroll(self.name, _window(t, window_s, exclude_chats,
                                                                  (AnyOf("story", tuple(stories)),)),
                                               payload=["key", "chat", "ts", "story", "story_start"]):
            out.extend(StoryMember.of(r.payload) for r in records)
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
        async for records in self.store.scroll(self.name, where, payload=SCAN_FIELDS, batch=4096):
            yield [StoredMessageVector.of(r.payload) for r in records]

    async def older_than(self, ts: float) -> list[StoredMessageVector]:
        return [m async for batch in self.scan(Where(must=(Between("ts", lt=ts),))) for m in batch]

    async def of_chat(self, chat: str) -> list[StoredMessageVector]:
        return [m async for batch in self.scan(Where(must=(AnyOf("chat", (chat,)),))) for m in batch]

    async def vectors_of(self, keys: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
        """Each stored key's vectors by name (VECTOR, and MULTI when kept)."""
        names = [VECTOR] + ([MULTI] if self.multi_dim else [])
        records = await self.store.retrieve(self.name, [point_id(k) for k in keys], payload=["key"], vectors=names)
        return {str(r.payload.get("key")): dict(r.dense) for r in records if r.dense}

    async def count(self) -> int:
        return await self.store.count(self.name)
