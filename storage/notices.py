"""Who was told that a claim they asked about has been reviewed (`review_notices`, migration 7): one
row per asker (platform, chat, checked message), claimed before the notice is sent so each asker is
told once, released again if sending failed."""

from __future__ import annotations

from datetime import datetime, timezone

from storage.sqlite import Database


class ReviewNoticeStore:
    def __init__(self, db: Database):
        self.db = db

    async def claim(self, platform: str, chat_id: str, target: str, reviewed: str, job_id: int) -> bool:
        """True if this asker was not told yet (and now counts as told)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT OR IGNORE INTO review_notices (platform, chat_id, target, check_id, job_id, sent_at) "
                "VALUES (?,?,?,?,?,?)",
                (platform, chat_id, target, reviewed, job_id, datetime.now(timezone.utc).isoformat()))
            return cur.rowcount == 1

    async def unclaim(self, platform: str, chat_id: str, target: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM review_notices WHERE platform = ? AND chat_id = ? AND target = ?",
                               (platform, chat_id, target))

    async def sent(self) -> list[tuple[str, str, str, str]]:
        """(platform, chat id, target, reviewed check id) of every notice sent."""
        rows = await self.db.fetchall(
            "SELECT platform, chat_id, target, check_id FROM review_notices ORDER BY sent_at, platform, chat_id")
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]
