"""Watched public Telegram channels (bot/watch.py): which channels, how each was last read, and
the posts read from their web preview.

    watched_channels   one row per channel (its lowercase @name): who added it, the last post id read (new
                       posts are those above it), the status of the last poll, and when to try again
    watched_posts      one row per post read: its views as last shown, whether it is a forward and of what
                       (`origin`, "<channel>/<id>": a forward chain is stored once), and whether it was
                       stored as a tracked message (`stored` = 0: a repeat of an origin already stored, a
                       service message, a post with neither text nor a photo that could be read, or older
                       than the retention period)

    telegram_peers     each public name the account reader resolved (core/watch/account_reader.py): a channel's id
                       and access hash, or that the name is not a channel; kept after a channel is removed,
                       so a name is resolved through the account once

The posts themselves (text, time, link) are tracked messages (storage/messages.py) of the chat
("telegram", "@<name>"), so "also reported by", digests, /trending and alerts read them with every other
tracked chat. The tables are migrations 12 and 14 (storage/sqlite.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.sqlite import Database, read_only_rows

_CHANNEL_COLS = ("name, title, added_by, added_at, removed, last_post_id, last_post_at, last_poll_at, last_ok_at, "
                 "status, detail, retry_at, posts, reader")


@dataclass(frozen=True)
class WatchedChannel:
    name: str
    title: str = ""
    added_by: str | None = None
    added_at: float = 0.0
    removed: bool = False
    last_post_id: int = 0
    last_post_at: float | None = None
    last_poll_at: float | None = None
    last_ok_at: float | None = None
    status: str = "new"
    detail: str = ""
    retry_at: float | None = None
    posts: int = 0
    reader: str = "preview"  # "account": it has no public preview and is read through the account

    @property
    def handle(self) -> str:
        return "@" + self.name


def _channel(r: Sequence) -> WatchedChannel:
    return WatchedChannel(str(r[0]), str(r[1]), None if r[2] is None else str(r[2]), float(r[3]), bool(r[4]),
                          int(r[5]), _opt(r[6]), _opt(r[7]), _opt(r[8]), str(r[9]), str(r[10]), _opt(r[11]),
                          int(r[12]), str(r[13]))


def _opt(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TelegramPeer:
    """A public name as the account resolved it: `kind` "channel" (with its id and access hash), "not_channel"
    (a user, a bot or a group) or "not_found"."""

    name: str
    kind: str
    peer_id: int = 0
    access_hash: int = 0
    title: str = ""
    restricted: str = ""
    resolved_at: float = 0.0


@dataclass(frozen=True)
class WatchedPost:
    key: str
    channel: str
    post_id: int
    ts: float
    views: int | None = None
    forwarded_from: str = ""
    forwarded_link: str = ""
    origin: str = ""
    stored: bool = True


class WatchStore:
    def __init__(self, db: Database):
        self.db = db

    # --- channels --------------------------------------------------------------------------------

    async def add(self, name: str, *, by: object, now: float) -> bool:
        """Watch `name`; False when it was watched already (a removal still pending is undone)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("SELECT removed FROM watched_channels WHERE name = ?", (name,))
            row = await cur.fetchone()
            if row is not None and not row[0]:
                return False
            if row is not None:
                await conn.execute("UPDATE watched_channels SET removed = 0 WHERE name = ?", (name,))
                return True
            await conn.execute("INSERT INTO watched_channels (name, added_by, added_at) VALUES (?, ?, ?)",
                               (name, None if by is None else str(by), now))
        return True

    async def get(self, name: str) -> WatchedChannel | None:
        row = await self.db.fetchone(f"SELECT {_CHANNEL_COLS} FROM watched_channels WHERE name = ?", (name,))
        return None if row is None else _channel(row)

    async def channels(self, *, removed: bool = False) -> list[WatchedChannel]:
        """The watched channels (or, with `removed`, those whose removal is pending), by name."""
        rows = await self.db.fetchall(f"SELECT {_CHANNEL_COLS} FROM watched_channels WHERE removed = ? ORDER BY name",
                                      (int(removed),))
        return [_channel(r) for r in rows]

    async def mark_removed(self, name: str) -> bool:
        """Stop watching `name` now; the process that owns the vectors deletes its posts (`delete`)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("UPDATE watched_channels SET removed = 1 WHERE name = ? AND removed = 0", (name,))
            return cur.rowcount > 0

    async def delete(self, name: str) -> None:
        """Forget the channel and its post rows (its tracked messages are the corroborator's to delete)."""
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM watched_posts WHERE channel = ?", (name,))
            await conn.execute("DELETE FROM watched_channels WHERE name = ?", (name,))

    async def record(self, name: str, *, status: str, detail: str, now: float, ok: bool = False,
                     title: str | None = None, last_post_id: int | None = None, last_post_at: float | None = None,
                     retry_at: float | None = None, stored: int = 0) -> None:
        """The outcome of one poll. Fields given as None keep their value; `retry_at` is always replaced."""
        async with self.db.transaction() as conn:
            await conn.execute(
                """UPDATE watched_channels SET status = ?, detail = ?, last_poll_at = ?, retry_at = ?,
                       last_ok_at = CASE WHEN ? THEN ? ELSE last_ok_at END,
                       title = COALESCE(?, title),
                       last_post_id = MAX(last_post_id, COALESCE(?, 0)),
                       last_post_at = COALESCE(?, last_post_at),
                       posts = posts + ?
                   WHERE name = ?""",
                (status, detail, now, retry_at, int(ok), now, title, last_post_id, last_post_at, stored, name))

    async def set_reader(self, name: str, reader: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("UPDATE watched_channels SET reader = ? WHERE name = ?", (reader, name))

    # --- names resolved through the account --------------------------------------------------------

    async def peer(self, name: str) -> TelegramPeer | None:
        row = await self.db.fetchone("SELECT name, kind, peer_id, access_hash, title, restricted, resolved_at FROM "
                                     "telegram_peers WHERE name = ?", (name,))
        if row is None:
            return None
        return TelegramPeer(str(row[0]), str(row[1]), int(row[2]), int(row[3]), str(row[4]), str(row[5]),
                            float(row[6]))

    async def keep_peer(self, peer: TelegramPeer) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                """INSERT INTO telegram_peers (name, kind, peer_id, access_hash, title, restricted, resolved_at)
                   VALUES (?,?,?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET kind = excluded.kind,
                       peer_id = excluded.peer_id, access_hash = excluded.access_hash, title = excluded.title,
                       restricted = excluded.restricted, resolved_at = excluded.resolved_at""",
                (peer.name, peer.kind, peer.peer_id, peer.access_hash, peer.title, peer.restricted, peer.resolved_at))

    async def forget_peer(self, name: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM telegram_peers WHERE name = ?", (name,))

    async def tracked_elsewhere(self, handle: str) -> bool:
        """Is the channel tracked through the bot itself (an admin of it, `/track on`), under its numeric id?
        Its posts then arrive as tracked messages already."""
        row = await self.db.fetchone(
            "SELECT 1 FROM tracked_chats WHERE platform = 'telegram' AND tracking = 1 AND lower(handle) = ? "
            "AND chat_id != ? LIMIT 1", (handle.lower(), handle.lower()))
        return row is not None

    # --- posts -----------------------------------------------------------------------------------

    async def add_posts(self, posts: Sequence[WatchedPost]) -> None:
        """Record posts read; a post read again keeps its row and gets the views now shown."""
        if not posts:
            return
        async with self.db.transaction() as conn:
            await conn.executemany(
                """INSERT INTO watched_posts (key, channel, post_id, ts, views, forwarded_from, forwarded_link, origin,
                       stored) VALUES (?,?,?,?,?,?,?,?,?)
                   ON CONFLICT(key) DO UPDATE SET views = COALESCE(excluded.views, views)""",
                [(p.key, p.channel, p.post_id, p.ts, p.views, p.forwarded_from, p.forwarded_link, p.origin,
                  int(p.stored)) for p in posts])

    async def update_views(self, views: Iterable[tuple[str, int]]) -> None:
        rows = [(v, k) for k, v in views]
        if not rows:
            return
        async with self.db.transaction() as conn:
            await conn.executemany("UPDATE watched_posts SET views = ? WHERE key = ?", rows)

    async def stored_origins(self, origins: Iterable[str]) -> set[str]:
        """Which of `origins` ("<channel>/<id>") some watched channel's stored post already is or repeats."""
        wanted = sorted({o for o in origins if o})
        found: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows = await self.db.fetchall(f"SELECT DISTINCT origin FROM watched_posts WHERE stored = 1 AND origin IN "
                                          f"({','.join('?' * len(chunk))})", chunk)
            found.update(str(r[0]) for r in rows)
        return found

    async def posts(self, keys: Iterable[str]) -> dict[str, WatchedPost]:
        wanted = list(dict.fromkeys(keys))
        out: dict[str, WatchedPost] = {}
        if not wanted:
            return out
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows = await self.db.fetchall(
                "SELECT key, channel, post_id, ts, views, forwarded_from, forwarded_link, origin, stored FROM "
                f"watched_posts WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for r in rows:
                out[str(r[0])] = WatchedPost(str(r[0]), str(r[1]), int(r[2]), float(r[3]),
                                             None if r[4] is None else int(r[4]), str(r[5]), str(r[6]), str(r[7]),
                                             bool(r[8]))
        return out

    async def delete_older(self, ts: float) -> int:
        """Post rows older than `ts` (the retention period, as for tracked messages)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM watched_posts WHERE ts < ?", (ts,))
            return cur.rowcount


def read_channels(path: Path) -> list[WatchedChannel]:
    """The watched channels of a data dir's database, read-only (`tipline doctor`: it may be in use by a
    running bot, and doctor changes nothing); [] when there is no database or nothing is watched."""
    sql = f"SELECT {_CHANNEL_COLS} FROM watched_channels WHERE removed = 0 ORDER BY name"
    return [_channel(r) for r in read_only_rows(path, sql)]
