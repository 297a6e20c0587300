"""The fact-checkers' feeds an operator added (`tipline feeds add`, bot/feeds.py reads them) and their items.

    factcheck_feeds        one row per feed: its address, its name in the recommended list (or ''), the last
                           complete read's ETag / Last-Modified (sent back: a 304 costs nothing), the status
                           of the last read, and what it brought
    factcheck_feed_items   one row per item decided (kept from its ClaimReview or its title, or skipped) or
                           pending (its page failed for a passing reason), so an article page is read once

Migration 13 (storage/sqlite.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.sqlite import Database, read_only_rows

_COLS = ("url, name, added_by, added_at, etag, last_modified, title, status, detail, last_read_at, "
         "last_ok_at, retry_at, added, skipped")
ITEM_DAYS = 365  # a decided item is forgotten after this; feeds list far fewer, far newer items


@dataclass(frozen=True)
class StoredFeed:
    url: str
    name: str = ""
    added_by: str | None = None
    added_at: float = 0.0
    etag: str = ""
    last_modified: str = ""
    title: str = ""
    status: str = "new"
    detail: str = ""
    last_read_at: float | None = None
    last_ok_at: float | None = None
    retry_at: float | None = None
    added: int = 0
    skipped: int = 0

    @property
    def label(self) -> str:
        """How lists name it: its recommended name, else its address."""
        return self.name or self.url


def _feed(r: Sequence) -> StoredFeed:
    return StoredFeed(str(r[0]), str(r[1]), None if r[2] is None else str(r[2]), float(r[3]), str(r[4]), str(r[5]),
                      str(r[6]), str(r[7]), str(r[8]), _opt(r[9]), _opt(r[10]), _opt(r[11]), int(r[12]), int(r[13]))


def _opt(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ItemRecord:
    key: str
    outcome: str  # claimreview | title | skipped | pending


class FactCheckFeedStore:
    def __init__(self, db: Database):
        self.db = db

    async def add(self, url: str, *, name: str = "", by: object = None, now: float) -> bool:
        """Read `url` from now on; False when it was there already."""
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO factcheck_feeds (url, name, added_by, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (url, name, None if by is None else str(by), now))
            return cur.rowcount > 0

    async def feeds(self) -> list[StoredFeed]:
        rows = await self.db.fetchall(f"SELECT {_COLS} FROM factcheck_feeds ORDER BY added_at, url")
        return [_feed(r) for r in rows]

    async def get(self, url: str) -> StoredFeed | None:
        row = await self.db.fetchone(f"SELECT {_COLS} FROM factcheck_feeds WHERE url = ?", (url,))
        return None if row is None else _feed(row)

    async def remove(self, url: str) -> bool:
        """Stop reading `url` and forget its items (its fact-checks stay in the knowledge base)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM factcheck_feeds WHERE url = ?", (url,))
            await conn.execute("DELETE FROM factcheck_feed_items WHERE feed = ?", (url,))
            return cur.rowcount > 0

    async def record(self, url: str, *, status: str, detail: str, now: float, ok: bool, title: str = "",
                     validators: tuple[str, str] | None = None, retry_at: float | None = None, added: int = 0,
                     skipped: int = 0) -> None:
        """The outcome of one read. `validators` (ETag, Last-Modified) replace the kept ones when given."""
        async with self.db.transaction() as conn:
            await conn.execute(
                """UPDATE factcheck_feeds SET status = ?, detail = ?, last_read_at = ?, retry_at = ?,
                       last_ok_at = CASE WHEN ? THEN ? ELSE last_ok_at END,
                       title = CASE WHEN ? != '' THEN ? ELSE title END,
                       etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified),
                       added = added + ?, skipped = skipped + ?
                   WHERE url = ?""",
                (status, detail, now, retry_at, int(ok), now, title, title,
                 None if validators is None else validators[0], None if validators is None else validators[1],
                 added, skipped, url))

    async def items(self, url: str) -> tuple[set[str], dict[str, int]]:
        """(keys decided, {pending key: failed page reads}) of a feed."""
        rows = await self.db.fetchall("SELECT key, outcome, attempts FROM factcheck_feed_items WHERE feed = ?", (url,))
        done = {str(r[0]) for r in rows if r[1] != "pending"}
        pending = {str(r[0]): int(r[2]) for r in rows if r[1] == "pending"}
        return done, pending

    async def remember(self, url: str, records: Iterable[ItemRecord], *, now: float) -> None:
        """Items decided or pending after a read; a pending item counts one more failed attempt."""
        rows = [(url, r.key, r.outcome, int(r.outcome == "pending"), now) for r in records]
        if not rows:
            return
        async with self.db.transaction() as conn:
            await conn.executemany(
                """INSERT INTO factcheck_feed_items (feed, key, outcome, attempts, seen_at) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT(feed, key) DO UPDATE SET outcome = excluded.outcome, seen_at = excluded.seen_at,
                       attempts = attempts + excluded.attempts""", rows)

    async def prune(self, *, now: float) -> int:
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM factcheck_feed_items WHERE seen_at < ?", (now - ITEM_DAYS * 86400,))
            return cur.rowcount


def read_feeds(path: Path) -> list[StoredFeed]:
    """The feeds of a data dir's database, read-only (`tipline doctor`, `tipline feeds list` beside a running
    bot); [] when there is no database or no feed."""
    return [_feed(r) for r in read_only_rows(path, f"SELECT {_COLS} FROM factcheck_feeds ORDER BY added_at, url")]
