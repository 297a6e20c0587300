"""Votes on verdict cards and the review queue (tables from migration 3).

A user has one vote per check and platform: a later 👍/👎 replaces the earlier one. A 👎 on a check
the engine could not settle (verdict NOT_ENOUGH_EVIDENCE, or no "auto" match) puts the check on the
review queue, where a person should look at it; a check is queued once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from schema.models import Result, Verdict
from storage.sqlite import Database

UNMATCHED_REASON = "thumbs down on an unmatched check"


@dataclass(frozen=True)
class Vote:
    check_id: str
    platform: str
    user_id: str  # the voter's pseudonym (Database.pseudonym)
    vote: int
    at: str


@dataclass(frozen=True)
class ReviewItem:
    check_id: str
    reason: str
    added_at: str
    resolved_at: str | None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def needs_review(result: Result) -> bool:
    """Whether a 👎 on this check should reach a person: the engine did not find the claim itself."""
    return result.verdict == Verdict.NOT_ENOUGH_EVIDENCE or not any(m.tier == "auto" for m in result.matches)


class FeedbackStore:
    def __init__(self, db: Database):
        self.db = db

    async def record(self, check_id: str, platform: str, user_id: object, vote: int) -> bool:
        """Store (or replace) `user_id`'s vote (+1/-1) on a stored check; True if it was queued for review.
        The voter is stored as their pseudonym (`Database.pseudonym`), never the id itself.

        Raises KeyError for an unknown check id and ValueError for a vote other than ±1.
        """
        if vote not in (-1, 1):
            raise ValueError(f"a vote is -1 or 1, not {vote!r}")
        result = await self.db.get_check(check_id)
        if result is None:
            raise KeyError(check_id)
        queue = vote == -1 and needs_review(result)
        now = _now()
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO feedback (check_id, platform, user_id, vote, at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(check_id, platform, user_id) DO UPDATE SET vote = excluded.vote, at = excluded.at",
                (check_id, platform, self.db.pseudonym(platform, user_id), vote, now))
            if queue:
                await conn.execute(
                    "INSERT OR IGNORE INTO review_queue (check_id, reason, added_at) VALUES (?,?,?)",
                    (check_id, UNMATCHED_REASON, now))
        return queue

    async def votes(self, check_id: str) -> list[Vote]:
        cur = await self.db._conn.execute(
            "SELECT check_id, platform, user_id, vote, at FROM feedback WHERE check_id = ? "
            "ORDER BY platform, user_id", (check_id,))
        return [Vote(*r) for r in await cur.fetchall()]

    async def open_reviews(self) -> list[ReviewItem]:
        """Unresolved review items, oldest first."""
        cur = await self.db._conn.execute(
            "SELECT check_id, reason, added_at, resolved_at FROM review_queue WHERE resolved_at IS NULL "
            "ORDER BY added_at, check_id")
        return [ReviewItem(*r) for r in await cur.fetchall()]

    async def resolve(self, check_id: str) -> bool:
        async with self.db.transaction() as conn:
            cur = await conn.execute("UPDATE review_queue SET resolved_at = ? WHERE check_id = ? "
                                     "AND resolved_at IS NULL", (_now(), check_id))
            return cur.rowcount > 0
