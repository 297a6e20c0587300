"""Tracked chats and their stored messages (tables from migration 5), for "also reported by".

A chat is tracked only after an admin said `/track on`; `/track off` stops storage at once (the
flag is cached here and flipped in the same call that writes it, so the very next message is not
stored) but keeps what was stored until `/forget` or retention removes it. `auto` is the `/auto`
switch of a group (answer ordinary messages with strong matches only).

Writes go through `Database.transaction()`, so they are serialised with every other write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from schema.text import safe_text
from storage.sqlite import Database, hash_from_sql, hash_to_sql


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class ChatSettings:
    platform: str
    chat_id: str
    kind: str = "group"
    title: str = ""
    handle: str = ""  # "@name" of a public Telegram channel/group, "" otherwise
    tracking: bool = False
    auto: bool = False
    enabled_by: str | None = None
    enabled_at: str | None = None


@dataclass(frozen=True)
class StoredMessage:
    id: str  # "<platform>:<chat id>:<message id>"
    platform: str
    chat_id: str
    message_id: str
    text: str
    ts: float  # unix seconds
    author: str = ""  # the channel/chat handle or title shown in "Also reported by"
    permalink: str = ""
    language: str = ""
    story_id: str | None = None
    sender: str | None = None  # the author's pseudonym (Database.pseudonym), for /forget me; None: unknown
    photo_hash: int | None = None  # its photo's perceptual hash (core/corroboration/photo_hash.py); "" text: a photo-only post

    def __post_init__(self) -> None:
        # A tracked post is stored before anything reads it: SQLite refuses lone surrogates.
        object.__setattr__(self, "text", safe_text(self.text))
        object.__setattr__(self, "author", safe_text(self.author))

    @property
    def at(self) -> datetime:
        return datetime.fromtimestamp(self.ts, timezone.utc)


def message_key(platform: str, chat_id: object, message_id: object) -> str:
    return f"{platform}:{chat_id}:{message_id}"


_COLS = "id, platform, chat_id, message_id, text, ts, author, permalink, language, story_id, photo_hash"


def _row(r: Sequence) -> StoredMessage:
    return StoredMessage(id=r[0], platform=r[1], chat_id=r[2], message_id=r[3], text=r[4], ts=float(r[5]),
                         author=r[6], permalink=r[7], language=r[8], story_id=r[9],
                         photo_hash=None if r[10] is None else hash_from_sql(str(r[10])))


class MessageStore:
    def __init__(self, db: Database):
        self.db = db
        # (platform, chat id) -> settings; filled lazily, updated by every write below. One process owns
        # a data dir (embedded Qdrant locks it), so this cache cannot go stale behind our back.
        self._chats: dict[tuple[str, str], ChatSettings | None] = {}

    # --- chats -----------------------------------------------------------------------------------

    async def chat(self, platform: str, chat_id: object) -> ChatSettings | None:
        key = (platform, str(chat_id))
        if key not in self._chats:
            cur = await self.db._conn.execute(
                "SELECT platform, chat_id, kind, title, handle, tracking, auto, enabled_by, enabled_at "
                "FROM tracked_chats WHERE platform = ? AND chat_id = ?", key)
            r = await cur.fetchone()
            self._chats[key] = None if r is None else ChatSettings(
                r[0], r[1], r[2], r[3], r[4], bool(r[5]), bool(r[6]), r[7], r[8])
        return self._chats[key]

    async def is_tracked(self, platform: str, chat_id: object) -> bool:
        c = await self.chat(platform, chat_id)
        return bool(c and c.tracking)

    async def is_auto(self, platform: str, chat_id: object) -> bool:
        c = await self.chat(platform, chat_id)
        return bool(c and c.auto)

    async def set_flag(self, platform: str, chat_id: object, flag: str, on: bool, *, by: object = None,
                       kind: str = "group", title: str = "", handle: str = "") -> bool:
        """Turn `tracking` or `auto` on/off; returns the previous value."""
        if flag not in ("tracking", "auto"):
            raise ValueError(flag)
        key = (platform, str(chat_id))
        before = await self.chat(*key)
        previous = bool(before and getattr(before, flag))
        now, who = _now(), None if by is None else str(by)
        # Flip the cached flag first: a message arriving while the write is in flight is already
        # treated by the new setting ("opt-out stops storage immediately").
        base = before or ChatSettings(key[0], key[1], kind, title, handle)
        fields: dict[str, object] = dict(title=title or base.title, handle=handle or base.handle,
                                         kind=kind or base.kind)
        fields[flag] = on
        if flag == "tracking" and on:
            fields.update(enabled_by=who, enabled_at=now)
        self._chats[key] = ChatSettings(**{**base.__dict__, **fields})
        async with self.db.transaction() as conn:
            await conn.execute(
                f"""INSERT INTO tracked_chats (platform, chat_id, kind, title, handle, {flag}, enabled_by, enabled_at,
                        updated_by, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(platform, chat_id) DO UPDATE SET {flag} = excluded.{flag},
                        title = CASE WHEN excluded.title != '' THEN excluded.title ELSE title END,
                        handle = CASE WHEN excluded.handle != '' THEN excluded.handle ELSE handle END,
                        enabled_by = CASE WHEN ? THEN excluded.enabled_by ELSE enabled_by END,
                        enabled_at = CASE WHEN ? THEN excluded.enabled_at ELSE enabled_at END,
                        updated_by = excluded.updated_by, updated_at = excluded.updated_at""",
                (key[0], key[1], fields["kind"], fields["title"], fields["handle"], int(on),
                 who if flag == "tracking" and on else None, now if flag == "tracking" and on else None, who, now,
                 int(flag == "tracking" and on), int(flag == "tracking" and on)))
        return previous

    async def tracked_chats(self) -> list[ChatSettings]:
        cur = await self.db._conn.execute(
            "SELECT platform, chat_id, kind, title, handle, tracking, auto, enabled_by, enabled_at "
            "FROM tracked_chats WHERE tracking = 1 ORDER BY enabled_at")
        return [ChatSettings(r[0], r[1], r[2], r[3], r[4], bool(r[5]), bool(r[6]), r[7], r[8])
                for r in await cur.fetchall()]

    # --- messages --------------------------------------------------------------------------------

    async def add(self, messages: Sequence[StoredMessage]) -> None:
        if not messages:
            return
        async with self.db.transaction() as conn:
            await conn.executemany(
                f"INSERT OR REPLACE INTO messages ({_COLS}, at, sender) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(m.id, m.platform, m.chat_id, m.message_id, m.text, m.ts, m.author, m.permalink, m.language,
                  m.story_id, None if m.photo_hash is None else hash_to_sql(m.photo_hash), m.at.isoformat(),
                  m.sender) for m in messages])

    async def merge_stories(self, into: str, others: Iterable[str]) -> None:
        """Record that the stories `others` are now story `into` (union-find, persisted as aliases:
        one row per merge instead of rewriting every member; `resolve_story` follows the chain)."""
        others = [o for o in others if o != into]
        if not others:
            return
        async with self.db.transaction() as conn:
            await conn.executemany("INSERT OR REPLACE INTO story_aliases (story_id, into_id) VALUES (?, ?)",
                                   [(o, into) for o in others])

    async def story_aliases(self) -> dict[str, str]:
        cur = await self.db._conn.execute("SELECT story_id, into_id FROM story_aliases")
        return {r[0]: r[1] for r in await cur.fetchall()}

    async def get(self, ids: Iterable[str]) -> dict[str, StoredMessage]:
        ids = list(ids)
        out: dict[str, StoredMessage] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            cur = await self.db._conn.execute(
                f"SELECT {_COLS} FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            for r in await cur.fetchall():
                out[r[0]] = _row(r)
        return out

    async def since(self, ts: float) -> list[StoredMessage]:
        """Every stored message at or after `ts`, oldest first (the start-up load of the window index)."""
        cur = await self.db._conn.execute(f"SELECT {_COLS} FROM messages WHERE ts >= ? ORDER BY ts, rowid", (ts,))
        return [_row(r) for r in await cur.fetchall()]

    async def photos_since(self, ts: float) -> list[StoredMessage]:
        """Every stored message with a photo hash at or after `ts`, oldest first (the photo index's load)."""
        cur = await self.db._conn.execute(
            f"SELECT {_COLS} FROM messages WHERE photo_hash IS NOT NULL AND ts >= ? ORDER BY ts, rowid", (ts,))
        return [_row(r) for r in await cur.fetchall()]

    async def count(self, platform: str | None = None, chat_id: object = None) -> int:
        if platform is None:
            return await self.db.count("SELECT COUNT(*) FROM messages")
        return await self.db.count("SELECT COUNT(*) FROM messages WHERE platform = ? AND chat_id = ?",
                                   (platform, str(chat_id)))

    async def delete_chat(self, platform: str, chat_id: object) -> list[str]:
        """Delete a chat's stored messages (/forget); returns their ids."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("SELECT id FROM messages WHERE platform = ? AND chat_id = ?",
                                     (platform, str(chat_id)))
            ids = [r[0] for r in await cur.fetchall()]
            await conn.execute("DELETE FROM messages WHERE platform = ? AND chat_id = ?", (platform, str(chat_id)))
        return ids

    async def delete_older(self, ts: float) -> list[str]:
        """Delete messages older than `ts` (retention), and aliases of stories none of whose messages
        remain; returns the deleted message ids."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("SELECT id FROM messages WHERE ts < ?", (ts,))
            ids = [r[0] for r in await cur.fetchall()]
            await conn.execute("DELETE FROM messages WHERE ts < ?", (ts,))
            await conn.execute("DELETE FROM story_aliases WHERE story_id NOT IN "
                               "(SELECT story_id FROM messages WHERE story_id IS NOT NULL) "
                               "AND story_id NOT IN (SELECT into_id FROM story_aliases)")
        return ids


def resolve_story(aliases: dict[str, str], story: str) -> str:
    """The current id of a story after merges (follows alias chains; cycles cannot form because a
    story is only ever merged into an older one, but the walk is bounded anyway)."""
    for _ in range(len(aliases) + 1):
        nxt = aliases.get(story)
        if nxt is None or nxt == story:
            return story
        story = nxt
    return story
