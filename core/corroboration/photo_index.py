"""The photos of the tracked messages, by perceptual hash, in memory: "the messages of other chats within the
window whose photo is this one" for the corroborator (core/corroboration/corroborator.py), which links them into one story as
it links messages by their text.

A hash is 32 bytes, so the retained window's photos fit in memory easily (100,000 photos: 3.2 MB of hashes
and their records); a search is one vectorised XOR and popcount over all of them (100,000 random hashes:
1.7 ms p50, load ~7 on 2 cores), so no index structure is needed. A story's photos are kept apart by story,
so a merge relabels only those (0.05 ms). Each photo keeps its story and the story's start, relabelled on every merge
exactly as the vector store's points are, so a photo-only post (no text, so no vector point) is a member of
its story like any message. The system of record is SQLite (`messages.photo_hash`); `Corroborator.open`
loads the index from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from core.corroboration.photo_hash import MATCH_DISTANCE, WORDS, distances, words


@dataclass(frozen=True)
class PhotoEntry:
    key: str  # the tracked message's key
    chat: str  # "platform:chat_id"
    ts: float
    story: str
    story_start: float
    hash: int
    has_text: bool = True  # False: a photo-only post, which has no vector point


class PhotoIndex:
    def __init__(self, max_distance: int = MATCH_DISTANCE):
        self.max_distance = max_distance
        self._entries: list[PhotoEntry | None] = []
        self._hashes = np.zeros((0, WORDS), dtype=np.uint64)
        self._ts = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        self._pos: dict[str, int] = {}
        self._by_story: dict[str, set[int]] = {}  # a merge or a story's members touch only its own photos

    def __len__(self) -> int:
        return len(self._pos)

    def add(self, entry: PhotoEntry) -> None:
        """Add a photo (a key added again replaces its entry)."""
        self.remove([entry.key])
        n = len(self._entries)
        if n == len(self._hashes):
            grow = max(64, n)
            self._hashes = np.concatenate([self._hashes, np.zeros((grow, WORDS), dtype=np.uint64)])
            self._ts = np.concatenate([self._ts, np.zeros(grow, dtype=np.float64)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        self._entries.append(entry)
        self._hashes[n] = words(entry.hash)
        self._ts[n] = entry.ts
        self._alive[n] = True
        self._pos[entry.key] = n
        self._by_story.setdefault(entry.story, set()).add(n)

    def get(self, key: str) -> PhotoEntry | None:
        i = self._pos.get(key)
        return None if i is None else self._entries[i]

    def near(self, photo: int, *, t: float, window_s: float, exclude_chats: Sequence[str] = (),
             exclude_key: str | None = None) -> list[tuple[PhotoEntry, int]]:
        """Photos within `max_distance` bits of `photo`, within `window_s` of `t`, outside `exclude_chats`,
        nearest first, each with its distance."""
        n = len(self._entries)
        if not self._pos:
            return []
        dist = distances(photo, self._hashes[:n])
        ok = self._alive[:n] & (dist <= self.max_distance) & (np.abs(self._ts[:n] - t) <= window_s)
        skip = set(exclude_chats)
        out: list[tuple[PhotoEntry, int]] = []
        for i in np.flatnonzero(ok):
            e = self._entries[int(i)]
            if e is not None and e.chat not in skip and e.key != exclude_key:
                out.append((e, int(dist[i])))
        out.sort(key=lambda x: (x[1], x[0].ts))
        return out

    def members(self, stories: Iterable[str], *, t: float, window_s: float,
                exclude_chats: Sequence[str] = (), photo_only: bool = False) -> list[PhotoEntry]:
        """Photos of `stories` within `window_s` of `t`, outside `exclude_chats` (with `photo_only`, only those
        without text: the others are the vector store's story members already)."""
        skip = set(exclude_chats)
        found = [self._entries[i] for s in set(stories) for i in self._by_story.get(s, ())]
        return sorted((e for e in found if e is not None and e.chat not in skip and abs(e.ts - t) <= window_s
                       and not (photo_only and e.has_text)), key=lambda e: (e.ts, e.key))

    def relabel(self, stories: Sequence[str], into: str, start: float) -> None:
        """Merge stories, as `MessageVectors.relabel` does for the vector points."""
        for s in set(stories):
            for i in self._by_story.pop(s, set()):
                e = self._entries[i]
                if e is not None:
                    self._entries[i] = replace(e, story=into, story_start=start)
                    self._by_story.setdefault(into, set()).add(i)

    def remove(self, keys: Iterable[str]) -> None:
        for k in keys:
            i = self._pos.pop(k, None)
            if i is not None:
                e = self._entries[i]
                if e is not None and (members := self._by_story.get(e.story)) is not None:
                    members.discard(i)
                    if not members:
                        del self._by_story[e.story]
                self._entries[i] = None
                self._alive[i] = False
        if len(self._entries) > 1024 and len(self._pos) < len(self._entries) // 2:
            self._compact()

    def remove_chat(self, chat: str) -> list[str]:
        keys = [e.key for e in self._entries if e is not None and e.chat == chat]
        self.remove(keys)
        return keys

    def remove_older(self, ts: float) -> list[str]:
        n = len(self._entries)
        keys = [e.key for i in np.flatnonzero(self._alive[:n] & (self._ts[:n] < ts))
                if (e := self._entries[int(i)]) is not None]
        self.remove(keys)
        return keys

    def _compact(self) -> None:
        kept = [e for e in self._entries if e is not None]
        self._entries, self._pos, self._by_story = [], {}, {}
        self._hashes = np.zeros((0, WORDS), dtype=np.uint64)
        self._ts = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        for e in kept:
            self.add(e)
