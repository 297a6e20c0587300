"""The repeat counter of checked texts (`check_repeats`, migration 5): which check answered a text
first, and how often the same text was checked since. The fingerprint of a text is the caller's
(bot/repeats.py); this module only stores and counts it."""

from __future__ import annotations

from dataclasses import dataclass

from storage.sqlite import Database


@dataclass(frozen=True)
class RepeatTotals:
    checks: int  # every counted check
    texts: int  # distinct texts among them


class RepeatStore:
    def __init__(self, db: Database):
        self.db = db

    async def first_since(self, text_hash: str, scope: str, since_ts: float) -> str | None:
        """The first check of this text in this scope since `since_ts` (epoch seconds)."""
        row = await self.db.fetchone(
            "SELECT check_id FROM check_repeats WHERE text_hash = ? AND scope = ? AND ts >= ? ORDER BY ts, id LIMIT 1",
            (text_hash, scope, since_ts))
        return None if row is None else str(row[0])

    async def count_since(self, text_hash: str, scope: str, since_ts: float) -> int:
        row = await self.db.fetchone(
            "SELECT COUNT(*) FROM check_repeats WHERE text_hash = ? AND scope = ? AND ts >= ?",
            (text_hash, scope, since_ts))
        return int(row[0]) if row else 0

    async def record(self, text_hash: str, scope: str, check_id: str, platform: str | None, chat_id: object,
                     at_ts: float, *, count_since_ts: float) -> int:
        """Count one check; returns the checks of the text since `count_since_ts`, this one included."""
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO check_repeats (text_hash, scope, check_id, platform, chat_id, ts) VALUES (?,?,?,?,?,?)",
                (text_hash, scope, check_id, platform, None if chat_id is None else str(chat_id), at_ts))
            row = await (await conn.execute(
                "SELECT COUNT(*) FROM check_repeats WHERE text_hash = ? AND scope = ? AND ts >= ?",
                (text_hash, scope, count_since_ts))).fetchone()
            return int(row[0]) if row is not None else 0

    async def count_all_since(self, since_ts: float) -> int:
        row = await self.db.fetchone("SELECT COUNT(*) FROM check_repeats WHERE ts >= ?", (since_ts,))
        return int(row[0]) if row else 0

    async def totals(self) -> RepeatTotals:
        row = await self.db.fetchone("SELECT COUNT(*), COUNT(DISTINCT text_hash) FROM check_repeats")
        return RepeatTotals(int(row[0]), int(row[1])) if row else RepeatTotals(0, 0)
