"""Watched news feeds (bot/watch_feeds.py): which feeds, how each was last read, and which of
their items were read.

    watched_feeds        one row per feed (its canonical address): who added it, the validators of the
                         last 200 (ETag, Last-Modified) sent back on the next read, the status of the last
                         read, and when to try again
    watched_feed_items   one row per item read (by the tracked message's key), so an item is stored once
                         however often the feed lists it

The items themselves (text, time, link) are tracked messages (storage/messages.py) of the chat
("feed", "<address without scheme>"). The tables are migration 13 (storage/sqlite.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.sqlite import Database, read_only_rows

_COLS = ("url, title, added_by, added_at, removed, etag, last_modified, last_item_at, last_poll_at, last_ok_at, "
         "status, detail, retry_at, items, unchanged")


@dataclass(frozen=True)
class WatchedFeed:
    url: str
    title: str = ""
    added_by: str | None = None
    added_at: float = 0.0
    removed: bool = False
    etag: str = ""
    last_modified: str = ""
    last_item_at: float | None = None
    last_poll_at: float | None = None
    last_ok_at: float | None = None
    status: str = "new"
    detail: str = ""
    retry_at: float | None = None
    items: int = 0
    unchanged: int = 0


def _opt(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]


def _feed(r: Sequence) -> WatchedFeed:
    return WatchedFeed(str(r[0]), str(r[1]), None if r[2] is None else str(r[2]), float(r[3]), bool(r[4]), str(r[5]),
                       str(r[6]), _opt(r[7]), _opt(r[8]), _opt(r[9]), str(r[10]), str(r[11]), _opt(r[12]), int(r[13]),
                       int(r[14]))


@dataclass(frozen=True)
class FeedItemRow:
    key: str
    feed: str
    ts: float
    stored: bool = True


class FeedStore:
    def __init__(self, db: Database):
        self.db = db

    async def add(self, url: str, *, by: object, now: float) -> bool:
        """Watch `url`; False when it was watched already (a removal still pending is undone)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("SELECT removed FROM watched_feeds WHERE url = ?", (url,))
            row = await cur.fetchone()
            if row is not None and not row[0]:
                return False
            if row is not None:
                await conn.execute("UPDATE watched_feeds SET removed = 0 WHERE url = ?", (url,))
                return True
            await conn.execute("INSERT INTO watched_feeds (url, added_by, added_at) VALUES (?, ?, ?)",
                               (url, None if by is None else str(by), now))
        return True

    async def get(self, url: str) -> WatchedFeed | None:
        row = await self.db.fetchone(f"SELECT {_COLS} FROM watched_feeds WHERE url = ?", (url,))
        return None if row is None else _feed(row)

    async def feeds(self, *, removed: bool = False) -> list[WatchedFeed]:
        rows = await self.db.fetchall(f"SELECT {_COLS} FROM watched_feeds WHERE removed = ? ORDER BY url",
                                      (int(removed),))
        return [_feed(r) for r in rows]

    async def mark_removed(self, url: str) -> bool:
        async with self.db.transaction() as conn:
            cur = await conn.execute("UPDATE watched_feeds SET removed = 1 WHERE url = ? AND removed = 0", (url,))
            return cur.rowcount > 0

    async def delete(self, url: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM watched_feed_items WHERE feed = ?", (url,))
            await conn.execute("DELETE FROM watched_feeds WHERE url = ?", (url,))

    async def record(self, url: str, *, status: str, detail: str, now: float, ok: bool = False,
                     title: str | None = None, etag: str | None = None, last_modified: str | None = None,
                     last_item_at: float | None = None, retry_at: float | None = None, stored: int = 0,
                     unchanged: bool = False) -> None:
        """The outcome of one read. Fields given as None keep their value; `retry_at` is always replaced."""
        async with self.db.transaction() as conn:
            await conn.execute(
                """UPDATE watched_feeds SET status = ?, detail = ?, last_poll_at = ?, retry_at = ?,
                       last_ok_at = CASE WHEN ? THEN ? ELSE last_ok_at END,
                       title = COALESCE(?, title), etag = COALESCE(?, etag),
                       last_modified = COALESCE(?, last_modified),
                       last_item_at = MAX(COALESCE(last_item_at, 0), COALESCE(?, 0)),
                       items = items + ?, unchanged = unchanged + ?
                   WHERE url = ?""",
                (status, detail, now, retry_at, int(ok), now, title, etag, last_modified, last_item_at, stored,
                 int(unchanged), url))

    async def known(self, keys: Iterable[str]) -> set[str]:
        """Which of the item keys were read before."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows = await self.db.fetchall(
                f"SELECT key FROM watched_feed_items WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            found.update(str(r[0]) for r in rows)
        return found

    async def add_items(self, rows: Sequence[FeedItemRow]) -> None:
        if not rows:
            return
        async with self.db.transaction() as conn:
            await conn.executemany(
                "INSERT OR IGNORE INTO watched_feed_items (key, feed, ts, stored) VALUES (?, ?, ?, ?)",
                [(r.key, r.feed, r.ts, int(r.stored)) for r in rows])

    async def delete_older(self, ts: float) -> int:
        """Item rows older than `ts`: an item that old is skipped by its date before it is looked up here."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM watched_feed_items WHERE ts < ?", (ts,))
            return cur.rowcount


def read_feeds(path: Path) -> list[WatchedFeed]:
    """The watched feeds of a data dir's database, read-only (`tipline doctor`); [] when there are none."""
    return [_feed(r) for r in read_only_rows(path, f"SELECT {_COLS} FROM watched_feeds WHERE removed = 0 ORDER BY url")]
