"""The durable job queue over the `jobs` table (migration 4): nothing lost, nothing doubled.

A check request becomes a row here *before* its platform delivery is acknowledged, under an
idempotency key derived from the delivery (Telegram update id + chat/message id, Slack event id,
REST `Idempotency-Key`). A re-delivery finds the row and creates no new work.

Life of a job:  held -> pending -> running -> done | failed        (refused: answered, never run)
`held` jobs are persisted but not claimable while their "you are #N in line" notice is being sent;
a crash leaves `held` and `running` jobs behind and `recover()` makes them pending again.

Claims are fair across chats: the next job is the oldest pending job of the chat that was served
least recently (round-robin), so one chat flooding the bot cannot starve the others.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from storage.reply_journal import ReplyJournal
from storage.sqlite import Database

Status = Literal["held", "pending", "running", "done", "failed", "refused"]


@dataclass(frozen=True)
class Job:
    id: int
    idem_key: str
    platform: str
    chat_id: str
    user_id: str | None
    payload: dict[str, Any]
    status: Status
    attempts: int
    reply_ref: str | None
    check_id: str | None
    created_at: str
    text_hash: str | None = None  # the fingerprint of the checked text (None: a job from before migration 8)


# Every branch is an index search (jobs_check, jobs_text_hash, check_repeats_hash): tests/test_review.py
# checks the query plan, because this runs on every review over a week of finished jobs.
ASKERS_SQL = """SELECT j.*, c.text AS check_text FROM jobs j LEFT JOIN checks c ON c.id = j.check_id
    WHERE j.id IN (SELECT id FROM jobs WHERE check_id = ? AND status = 'done'
                   UNION SELECT id FROM jobs WHERE text_hash = ? AND status = 'done'
                   UNION SELECT id FROM jobs WHERE text_hash IS NULL AND status = 'done'
                   UNION SELECT id FROM jobs WHERE status = 'done' AND check_id IN
                       (SELECT check_id FROM check_repeats WHERE text_hash = ?))
      AND j.check_id IS NOT NULL
    ORDER BY j.id"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _job(row: Any) -> Job:
    return Job(id=row["id"], idem_key=row["idem_key"], platform=row["platform"], chat_id=row["chat_id"],
               user_id=row["user_id"], payload=json.loads(row["payload"]), status=row["status"],
               attempts=row["attempts"], reply_ref=row["reply_ref"], check_id=row["check_id"],
               created_at=row["created_at"], text_hash=row["text_hash"])


class JobStore:
    """Every write goes through `Database.transaction()` (the single writer), so claims are atomic.
    `journal`: where a reply message's id is recorded the moment it exists (storage/reply_journal.py)."""

    def __init__(self, db: Database, journal: ReplyJournal | None = None):
        self.db = db
        self.journal = journal
        # At the last recover(): jobs that may have sent a reply nobody recorded (an intent in the journal,
        # no message id). A platform that can be asked looks for that reply when the job resumes.
        self.uncertain_jobs: set[int] = set()

    async def get(self, idem_key: str) -> Job | None:
        cur = await self.db._conn.execute("SELECT * FROM jobs WHERE idem_key = ?", (idem_key,))
        row = await cur.fetchone()
        return _job(row) if row else None

    async def get_id(self, job_id: int) -> Job | None:
        cur = await self.db._conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,))
        row = await cur.fetchone()
        return _job(row) if row else None

    async def enqueue(self, idem_key: str, platform: str, chat_id: str | int, user_id: str | int | None,
                      payload: dict[str, Any], *, status: Status = "pending",
                      text_hash: str | None = None) -> tuple[Job, bool]:
        """Persist a job; (job, True) if it is new, (the existing job, False) for a known `idem_key`.
        `text_hash`: the fingerprint of the text to check, by which `askers` finds the job later."""
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO jobs (idem_key, platform, chat_id, user_id, payload, status, created_at, started_at, "
                "text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(idem_key) DO NOTHING",
                (idem_key, platform, str(chat_id), None if user_id is None else str(user_id),
                 json.dumps(payload, ensure_ascii=False), status, _now(),
                 _now() if status == "running" else None, text_hash))
            created = cur.rowcount == 1
            row = await (await conn.execute("SELECT * FROM jobs WHERE idem_key = ?", (idem_key,))).fetchone()
        return _job(row), created

    async def claim(self, platforms: Sequence[str] | None = None) -> Job | None:
        """Take the next pending job (round-robin across chats) and mark it running. `platforms`:
        only jobs this process can answer (a job for an adapter not configured now stays pending)."""
        if platforms is not None and not platforms:
            return None
        only = "" if platforms is None else f"AND platform IN ({','.join('?' * len(platforms))})"
        async with self.db.transaction() as conn:
            # The head (oldest pending job) of each chat competes; the chat whose last claim is the
            # oldest (or that was never served) wins, ties by age. claim_seq is a global counter.
            row = await (await conn.execute(
                """WITH heads AS (SELECT platform, chat_id, MIN(id) AS id FROM jobs
                                  WHERE status = 'pending' {only} GROUP BY platform, chat_id)
                   SELECT h.id FROM heads h
                   ORDER BY COALESCE((SELECT MAX(k.claim_seq) FROM jobs k
                                      WHERE k.platform = h.platform AND k.chat_id = h.chat_id), 0), h.id
                   LIMIT 1""".format(only=only), tuple(platforms or ()))).fetchone()
            if row is None:
                return None
            job_id = row[0]
            await conn.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ?, "
                "claim_seq = (SELECT COALESCE(MAX(claim_seq), 0) + 1 FROM jobs) WHERE id = ?",
                (_now(), job_id))
            row = await (await conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,))).fetchone()
        return _job(row)

    async def _set(self, job_id: int, sql: str, *args: Any) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(f"UPDATE jobs SET {sql} WHERE id = ?", (*args, job_id))

    def note_reply_intent(self, job_id: int) -> None:
        """Before a job's first reply message is sent (synchronous, microseconds)."""
        if self.journal is not None:
            self.journal.intent(job_id)

    async def set_reply_ref(self, job_id: int, reply_ref: str) -> None:
        """Remember the reply message already sent, so a resumed job edits it instead of sending anew.
        The journal line is written before this coroutine first yields: durable against kill -9 at once."""
        if self.journal is not None:
            self.journal.sent(job_id, reply_ref)
        await self._set(job_id, "reply_ref = ?", reply_ref)

    async def compact_journal(self) -> None:
        """Move the journal's recorded ids into `jobs` and drop them from the journal (a running bot)."""
        if self.journal is None:
            return
        self.journal.rotate()
        await self._apply_journal()
        self.journal.clear(rotated_only=True)

    async def _apply_journal(self) -> set[int]:
        assert self.journal is not None
        replay = self.journal.replay()
        async with self.db.transaction() as conn:
            for job_id, ref in replay.refs.items():
                await conn.execute("UPDATE jobs SET reply_ref = ? WHERE id = ? AND reply_ref IS NULL", (ref, job_id))
        return replay.uncertain

    async def release(self, job_id: int, *, status: Status = "pending") -> None:
        """Make a held job claimable, or put an unfinished one back in line."""
        await self._set(job_id, "status = ?", status)

    async def hold(self, job_id: int) -> bool:
        """Hold a job that still waits while its late "#N in line" notice is sent; False when a worker
        has taken it meanwhile (its own reply answers the user)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("UPDATE jobs SET status = 'held' WHERE id = ? AND status = 'pending'", (job_id,))
            return cur.rowcount == 1

    async def unhold(self, job_id: int) -> None:
        """A held job's notice was sent (or could not be): it may be claimed now."""
        async with self.db.transaction() as conn:
            await conn.execute("UPDATE jobs SET status = 'pending' WHERE id = ? AND status = 'held'", (job_id,))

    async def mark_done(self, job_id: int, check_id: str | None = None) -> None:
        await self._set(job_id, "status = 'done', finished_at = ?, check_id = ?, error = NULL", _now(), check_id)

    async def mark_failed(self, job_id: int, error: str) -> None:
        await self._set(job_id, "status = 'failed', finished_at = ?, error = ?", _now(), error[:2000])

    async def forget_refused(self, job_id: int) -> None:
        """Drop a refused request's row: a REST client told 429/503 retries with the same
        Idempotency-Key, which must then be taken, not recognised as the refused one."""
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM jobs WHERE id = ? AND status = 'refused'", (job_id,))

    @property
    def uncertain_replies(self) -> int:
        return len(self.uncertain_jobs)

    async def recover(self) -> int:
        """At start-up: jobs a crash left `running` or `held` go back in line, with every reply message id the
        journal holds (so they edit it). Returns how many jobs went back."""
        if self.journal is not None:
            uncertain = await self._apply_journal()
            if uncertain:
                marks = ",".join("?" * len(uncertain))
                rows = await self.db.fetchall(
                    f"SELECT id FROM jobs WHERE id IN ({marks}) AND reply_ref IS NULL "
                    "AND status IN ('running', 'held')", tuple(uncertain))
                self.uncertain_jobs = {int(r[0]) for r in rows}
            self.journal.clear()
        async with self.db.transaction() as conn:
            cur = await conn.execute("UPDATE jobs SET status = 'pending' WHERE status IN ('running', 'held')")
            return cur.rowcount

    async def prune(self, older_than_s: float) -> int:
        """Forget finished jobs (done, failed, refused) older than `older_than_s`. Their keys only
        need to outlive re-deliveries: Slack retries within minutes, Telegram keeps updates 24 h."""
        cutoff = datetime.fromtimestamp(datetime.now(timezone.utc).timestamp() - older_than_s, timezone.utc)
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM jobs WHERE status IN ('done', 'failed', 'refused') "
                                     "AND created_at < ?", (cutoff.isoformat(),))
            return cur.rowcount

    async def askers(self, check_id: str, text_hash: str) -> list[tuple[Job, str | None]]:
        """Finished jobs that asked about a claim, oldest first, each with the text of the check it got:
        those that produced `check_id`, asked about a text with fingerprint `text_hash`, or got a check
        counted under that fingerprint (a reused verdict); all through indexes. Finished jobs from
        before migration 8 carry no fingerprint: they come too, for the caller to match by their text."""
        rows = await self.db.fetchall(ASKERS_SQL, (check_id, text_hash, text_hash))
        return [(_job(r), r["check_text"]) for r in rows]

    async def pending_count(self) -> int:
        return await self.db.count("SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'held')")

    async def counts(self) -> dict[str, int]:
        cur = await self.db._conn.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        return {r[0]: r[1] for r in await cur.fetchall()}

    async def position(self, job: Job) -> int:
        """1-based place in line under round-robin: a job that is r-th in its own chat waits for up to
        r jobs of every other chat (fewer if that chat has fewer waiting)."""
        waiting = await self.db.count(
            """WITH mine AS (SELECT COUNT(*) AS r FROM jobs WHERE status IN ('pending', 'held')
                             AND platform = ? AND chat_id = ? AND id <= ?),
                    chats AS (SELECT platform, chat_id, COUNT(*) AS n FROM jobs
                              WHERE status IN ('pending', 'held') GROUP BY platform, chat_id)
               SELECT COALESCE(SUM(MIN(chats.n, mine.r)), 0) FROM chats, mine""",
            (job.platform, job.chat_id, job.id))
        return max(1, waiting)
