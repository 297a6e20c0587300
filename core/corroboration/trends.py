"""What is spreading: the stories of a window ranked by how many distinct chats carried them and how
fast they grew, and an extractive representative text for each (no model needed).

The stories are the corroborator's (core/corroboration/corroborator.py): each stored message keeps the story id it was
linked into, and later merges are aliases (`storage.messages.resolve_story`). Nothing here re-links.

Ranking, best first: distinct chats in the window; then growth = chats that first carried the story
in the later half of the window (a story still spreading outranks one that stopped); then messages;
then the earlier first sighting. A story needs `min_chats` distinct chats (2 by default: one chat
repeating itself is not spreading).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storage.digests import StoryChat

REPRESENTATIVE_CANDIDATES = 40  # members compared pairwise when picking a representative (40² pairs, ~1 ms)
EXCERPT_CHARS = 220  # a representative text is cut at a sentence end at or before this

_WORD = re.compile(r"\w{3,}", re.UNICODE)
_URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Story:
    id: str
    chats: tuple[str, ...]  # "<platform>:<chat id>", in the order they first carried the story
    first_key: dict[str, str]  # chat -> the key of its first message of the story in the window
    messages: int
    first_ts: float
    new_chats: int  # chats that joined in the later half of the window (growth)
    sources: tuple[str, ...]  # the ids its messages were stored under (this one and those merged into it)
    since: float  # the window it was ranked in
    until: float

    @property
    def first_chat(self) -> str:
        return self.chats[0]


def rank_stories(rows: Sequence[StoryChat], resolve: Callable[[str], str], *, since: float, until: float,
                 min_chats: int = 2, top: int | None = None) -> list[Story]:
    """The window's stories with at least `min_chats` distinct chats, best first (see the module doc).
    `rows` are (story, chat) pairs as stored (storage/digests.py); `resolve` follows merge aliases."""
    mid = since + (until - since) / 2
    # resolved story -> chat -> [first ts, first key, messages]; and the stored ids behind each story
    per: dict[str, dict[str, list]] = {}
    sources: dict[str, set[str]] = {}
    for r in rows:
        s = resolve(r.story)
        sources.setdefault(s, set()).add(r.story)
        chats = per.setdefault(s, {})
        cur = chats.get(r.chat)
        if cur is None:
            chats[r.chat] = [r.first_ts, r.first_key, r.messages]
        else:  # the chat carried two stored ids of one (merged) story
            if (r.first_ts, r.first_key) < (cur[0], cur[1]):
                cur[0], cur[1] = r.first_ts, r.first_key
            cur[2] += r.messages
    out: list[Story] = []
    for sid, chats in per.items():
        if len(chats) < min_chats:
            continue
        order = sorted(chats.items(), key=lambda kv: (kv[1][0], kv[1][1]))
        out.append(Story(id=sid, chats=tuple(c for c, _ in order), first_key={c: v[1] for c, v in order},
                         messages=sum(v[2] for _, v in order), first_ts=order[0][1][0],
                         new_chats=sum(1 for _, v in order if v[0] >= mid), sources=tuple(sorted(sources[sid])),
                         since=since, until=until))
    out.sort(key=lambda s: (-len(s.chats), -s.new_chats, -s.messages, s.first_ts, s.id))
    return out if top is None else out[:top]


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(_URL.sub(" ", text)))


def representative(texts: Sequence[str]) -> int:
    """The index of the text that shares the most words with the others (mean Jaccard), i.e. the most
    typical wording of the story; ties go to the earlier text (texts come oldest first)."""
    if len(texts) <= 2:
        return 0
    cand = list(texts[:REPRESENTATIVE_CANDIDATES])
    words = [_words(t) for t in cand]
    best, best_score = 0, -1.0
    for i, a in enumerate(words):
        score = 0.0
        for j, b in enumerate(words):
            if i != j and (a or b):
                score += len(a & b) / len(a | b)
        if score > best_score + 1e-9:
            best, best_score = i, score
    return best


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """One line of `text`: whitespace collapsed, cut at the last sentence end (or word) before `limit`."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    head = line[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?…](?=\s)", head)]
    if ends and ends[-1] >= limit // 3:
        return head[:ends[-1]]
    cut = head.rfind(" ")
    return (head[:cut] if cut >= limit // 3 else head[:limit - 1]).rstrip(" ,;:-") + "…"
