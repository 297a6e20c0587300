"""Photos of checks (migration 13): the perceptual hash a checked image got (`checks.photo_hash`, deleted with
its check) and the photos an admin's /review gave a verdict (`reviewed_photos`, kept like the fact-check the
review recorded), read by bot/photo_memory.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from schema.models import FactCheck
from storage.sqlite import Database, hash_from_sql, hash_to_sql


@dataclass(frozen=True)
class ReviewedPhoto:
    check_id: str  # the reviewed check whose image it was
    hash: int
    factcheck: FactCheck  # what the review recorded
    reviewed_at: float


class PhotoStore:
    def __init__(self, db: Database):
        self.db = db

    async def check_photo(self, check_id: str) -> int | None:
        """The hash of the image a check read, if it had one."""
        row = await self.db.fetchone("SELECT photo_hash FROM checks WHERE id = ?", (check_id,))
        return None if row is None or row[0] is None else hash_from_sql(str(row[0]))

    async def record_review(self, check_id: str, photo: int, factcheck: FactCheck, at: float | None = None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO reviewed_photos (check_id, hash, factcheck, reviewed_at) VALUES (?,?,?,?)",
                (check_id, hash_to_sql(photo), factcheck.model_dump_json(), time.time() if at is None else at))

    async def reviewed(self) -> list[ReviewedPhoto]:
        """Every reviewed photo, newest first (admins review a handful a day: a scan is cheap)."""
        rows = await self.db.fetchall(
            "SELECT check_id, hash, factcheck, reviewed_at FROM reviewed_photos ORDER BY reviewed_at DESC")
        return [ReviewedPhoto(str(r[0]), hash_from_sql(str(r[1])), FactCheck.model_validate_json(r[2]), float(r[3]))
                for r in rows]
