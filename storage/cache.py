"""A TTL cache over the `cache` table (migration 6): provider results by normalised query, reused verdicts.

Values are strings (callers store JSON). Expiry is wall-clock epoch seconds, not monotonic, because the
rows outlive the process. An expired row is never returned; `purge_expired()` deletes them (run it now and
then, e.g. with the feed refresh) so the table does not grow without bound.

Keys come from `cache_key(namespace, text, **params)`: the text is normalised (Unicode NFKC, case-folded,
whitespace collapsed) so "Vaccines  cause X" and "vaccines cause x" share one entry, and the namespace
(provider name, or "verdict") plus the sorted parameters keep different providers and settings apart.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from storage.sqlite import Database

_SPACE = re.compile(r"\s+")


def normalise_query(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def cache_key(namespace: str, text: str | list[str], **params: Any) -> str:
    """`namespace:<sha256>` over the normalised text(s) and the parameters (order-insensitive for params).

    A list of texts (e.g. a claim's planned queries) is normalised item by item, keeping its order.
    """
    texts = [normalise_query(t) for t in ([text] if isinstance(text, str) else text)]
    payload = json.dumps([namespace, texts, params], sort_keys=True, ensure_ascii=False, default=str)
    return f"{namespace}:{hashlib.sha256(payload.encode()).hexdigest()}"


class TTLCache:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time):
        self.db = db
        self._clock = clock

    async def get(self, key: str) -> str | None:
        cur = await self.db._conn.execute("SELECT value FROM cache WHERE key = ? AND expires_at > ?",
                                          (key, self._clock()))
        row = await cur.fetchone()
        return row[0] if row else None

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        if ttl_s <= 0:
            return  # a zero TTL means "don't cache"; storing an already-expired row would only need purging
        async with self.db.transaction() as conn:
            await conn.execute("INSERT INTO cache (key, value, expires_at) VALUES (?, ?, ?) "
                               "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
                               (key, value, self._clock() + ttl_s))

    async def delete(self, key: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM cache WHERE key = ?", (key,))

    async def purge_expired(self) -> int:
        """Delete expired rows; returns how many went."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM cache WHERE expires_at <= ?", (self._clock(),))
            return cur.rowcount

    async def count(self) -> int:
        """Live (unexpired) entries, for metrics."""
        return await self.db.count("SELECT COUNT(*) FROM cache WHERE expires_at > ?", (self._clock(),))
