"""What tipline keeps about people, and deleting it: one person on request, everyone's after retention.

Where a person's data is (migration 11 added the pseudonyms, `Database.pseudonym`):

    checks          the checked text and its Result; `asker` = the pseudonym of who asked (NULL: the CLI,
                    the REST API, or a check older than the pseudonyms whose job was already pruned)
    feedback        👍/👎; `user_id` = the voter's pseudonym (one vote per person and check is all it is for)
    jobs            the durable queue (bot/queue.py): the request as sent, with the platform user id itself,
                    which the review notice needs (Slack answers the asker privately); pruned a week after
                    the job finished
    messages        tracked chats' messages; `sender` = the author's pseudonym (NULL for a channel's posts)
    review_notices  where a review notice went (chat, message), by the job that asked
    check_repeats   fingerprints (hashes) of checked texts, by check

Admins' ids stay as they are where they are the point: `audit`, `domain_rules.added_by`, the chat
settings' `enabled_by`/`updated_by` (who changed what). None of them holds a checked text.

`forget` deletes one person's rows (by platform user id), `expire` everyone's checks and votes past the
retention period. Both only delete; `Database.scrub()` afterwards leaves no copy in the data dir, and the
vectors of deleted tracked messages are the caller's (core/corroboration/corroborator.py, bot/personal.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.sqlite import Database

ACTIVE = ("pending", "held", "running")


@dataclass(frozen=True)
class Forgotten:
    """What was deleted of one person."""

    checks: int = 0
    votes: int = 0
    jobs: int = 0
    messages: list[str] = field(default_factory=list)  # tracked message keys: their vectors go too

    @property
    def total(self) -> int:
        return self.checks + self.votes + self.jobs + len(self.messages)


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


async def _delete_checks(conn: Any, ids: Sequence[str]) -> tuple[int, int]:
    """Checks and everything that hangs on them (the votes on them, review items, repeat counts); returns
    how many checks and votes went."""
    checks = votes = 0
    for i in range(0, len(ids), 500):
        chunk = list(ids[i:i + 500])
        marks = _marks(chunk)
        votes += (await conn.execute(f"DELETE FROM feedback WHERE check_id IN ({marks})", chunk)).rowcount
        for table in ("review_queue", "check_repeats"):
            await conn.execute(f"DELETE FROM {table} WHERE check_id IN ({marks})", chunk)
        checks += (await conn.execute(f"DELETE FROM checks WHERE id IN ({marks})", chunk)).rowcount
    return checks, votes


class PersonalData:
    def __init__(self, db: Database):
        self.db = db

    async def running_jobs(self, platform: str, user_id: object) -> int:
        """Checks of this person still waiting or running (their Result is not stored yet)."""
        return await self.db.count(
            f"SELECT COUNT(*) FROM jobs WHERE platform = ? AND user_id = ? AND status IN ({_marks(ACTIVE)})",
            (platform, str(user_id), *ACTIVE))

    async def forget(self, platform: str, user_id: object) -> Forgotten:
        """Delete everything stored of `platform`:`user_id`, in one transaction: the checks they asked for
        (with the votes, review items and repeat counts of those checks), their votes, their jobs (the
        request texts; a job still running is left, its check stored when it ends: ask again then) and the
        tracked messages they wrote (returned, so their vectors can go too)."""
        who, uid = self.db.pseudonym(platform, user_id), str(user_id)
        async with self.db.transaction() as conn:
            jobs = [r[0] for r in await (await conn.execute(
                "SELECT id FROM jobs WHERE platform = ? AND user_id = ? AND status != 'running'",
                (platform, uid))).fetchall()]
            # A check of theirs whose row predates the pseudonyms is found through its job (kept a week).
            checks = [r[0] for r in await (await conn.execute(
                "SELECT id FROM checks WHERE asker = ? UNION SELECT c.id FROM jobs j JOIN checks c ON c.id = j.check_id "
                "WHERE j.platform = ? AND j.user_id = ? AND c.asker IS NULL", (who, platform, uid))).fetchall()]
            # Their votes (on any check), counted before their checks take the votes on those along.
            votes = len(list(await (await conn.execute(
                "SELECT 1 FROM feedback WHERE platform = ? AND user_id IN (?, ?)", (platform, who, uid))).fetchall()))
            n_checks, _ = await _delete_checks(conn, checks)
            await conn.execute("DELETE FROM feedback WHERE platform = ? AND user_id IN (?, ?)", (platform, who, uid))
            for i in range(0, len(jobs), 500):
                chunk = jobs[i:i + 500]
                await conn.execute(f"DELETE FROM review_notices WHERE job_id IN ({_marks(chunk)})", chunk)
                await conn.execute(f"DELETE FROM jobs WHERE id IN ({_marks(chunk)})", chunk)
            keys = [r[0] for r in await (await conn.execute(
                "SELECT id FROM messages WHERE sender = ?", (who,))).fetchall()]
            await conn.execute("DELETE FROM messages WHERE sender = ?", (who,))
        return Forgotten(checks=n_checks, votes=votes, jobs=len(jobs), messages=keys)

    async def expire(self, before_iso: str) -> int:
        """Delete checks made before `before_iso` (UTC ISO 8601), with what hangs on them, and votes
        cast before it; returns how many checks and votes went."""
        async with self.db.transaction() as conn:
            ids = [r[0] for r in await (await conn.execute(
                "SELECT id FROM checks WHERE created_at < ?", (before_iso,))).fetchall()]
            checks, votes = await _delete_checks(conn, ids)
            votes += (await conn.execute("DELETE FROM feedback WHERE at < ?", (before_iso,))).rowcount
        return checks + votes
