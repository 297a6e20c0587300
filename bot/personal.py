"""Retention and `/forget me`: what tipline keeps about people, and for how long (storage/personal.py lists
where it is).

    checks (text + Result), their votes    TIPLINE_CHECK_RETENTION_DAYS (90), then deleted
    tracked chats' messages                TIPLINE_RETENTION_DAYS (30): core/corroboration/corroborator.py `run_retention`
    queue jobs (the request as sent)       a week after they finished (bot/queue.py)

`/forget me` (Telegram and Slack) and `tipline forget --user platform:id` delete one person's checks, votes,
queue jobs and tracked messages at once, and leave no copy in the data dir: SQLite overwrites deleted rows
(`secure_delete`) and its write-ahead log is emptied (`Database.scrub`); the tracked messages' vectors are
deleted and their collection rewritten without them (`VectorStore.purge`: a deleted point's payload stays
in Qdrant Edge's segment and log files otherwise). tests/test_forget.py greps every file of the data dir
for the forgotten text afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from storage.personal import Forgotten, PersonalData
from storage.sqlite import Database

if TYPE_CHECKING:
    from core.corroboration.corroborator import Corroborator
    from storage.message_vectors import MessageVectors

log = logging.getLogger(__name__)

# How long /forget me waits for the person's checks still running (their Result is stored when they end):
# past the default check deadline (TIPLINE_CHECK_DEADLINE_S, 60 s) and the card's delivery.
RUNNING_WAIT_S = 90.0
EXPIRE_EVERY_S = 3600.0


class Privacy:
    """Forgetting one person, and the retention of checks. `corroborator` (a running bot) or `messages`
    (the messages collection, `tipline forget` without a running bot): where tracked messages' vectors are."""

    def __init__(self, db: Database, *, corroborator: Corroborator | None = None,
                 messages: MessageVectors | None = None, check_retention_days: float = 90.0,
                 running_wait_s: float = RUNNING_WAIT_S, clock: Callable[[], float] = time.time):
        self.db = db
        self.store = PersonalData(db)
        self.corroborator = corroborator
        self.messages = messages if messages is not None else corroborator.vectors if corroborator else None
        self.check_retention_s = check_retention_days * 86400.0
        self.running_wait_s = running_wait_s
        self.clock = clock
        self._forgetting = asyncio.Lock()  # one at a time: each rewrites the messages collection

    async def forget(self, platform: str, user_id: object) -> Forgotten:
        """Delete everything stored of this person; returns what went. Their checks still running are waited
        for (up to `running_wait_s`), so the Result they store is deleted too."""
        async with self._forgetting:
            done = await self.store.forget(platform, user_id)
            deadline = time.monotonic() + self.running_wait_s
            while await self.store.running_jobs(platform, user_id) and time.monotonic() < deadline:
                await asyncio.sleep(0.25)
            if await self.store.running_jobs(platform, user_id):
                log.warning("forget: %s checks of a person still running after %.0f s; stored when they end",
                            platform, self.running_wait_s)
            more = await self.store.forget(platform, user_id)
            done = Forgotten(checks=done.checks + more.checks, votes=done.votes + more.votes,
                             jobs=done.jobs + more.jobs, messages=[*done.messages, *more.messages])
            if done.messages:
                if self.corroborator is not None:
                    await self.corroborator.forget_keys(done.messages)
                elif self.messages is not None:
                    await self.messages.delete(done.messages)
                    await self.messages.purge()
            await self.db.scrub()
        log.info("forget: deleted %d checks, %d votes, %d jobs, %d tracked messages of a %s user", done.checks,
                 done.votes, done.jobs, len(done.messages), platform)
        return done

    async def forget_chat(self, platform: str, chat_id: object) -> int:
        """`/forget` in a chat: its tracked messages, everywhere, with no copy left (as `forget`)."""
        if self.corroborator is None:
            return 0
        async with self._forgetting:
            n = await self.corroborator.forget(platform, chat_id)
            if n:
                await self.corroborator.vectors.purge()
            await self.db.scrub()
        return n

    async def expire(self) -> int:
        """Delete checks (and votes) older than the retention period; returns how many rows went."""
        if self.check_retention_s <= 0:
            return 0
        cutoff = datetime.fromtimestamp(self.clock() - self.check_retention_s, timezone.utc).isoformat()
        n = await self.store.expire(cutoff)
        if n:
            await self.db.scrub()
        return n

    async def run_retention(self, stop: asyncio.Event, interval_s: float = EXPIRE_EVERY_S) -> None:
        """`expire` now and every `interval_s` until `stop` (a task of `tipline run`)."""
        while not stop.is_set():
            try:
                if removed := await self.expire():
                    log.info("retention: deleted %d checks and votes older than %.0f days", removed,
                             self.check_retention_s / 86400.0)
            except Exception:
                log.exception("retention: could not delete expired checks")
            try:
                await asyncio.wait_for(stop.wait(), interval_s)
            except TimeoutError:
                pass


def forgotten_text(done: Forgotten) -> str:
    """The answer to /forget me."""
    if not done.total:
        return "I have nothing stored about you (no checks you asked for, votes or tracked messages)."
    parts = [f"{done.checks} check{'s' if done.checks != 1 else ''} you asked for",
             f"{done.votes} vote{'s' if done.votes != 1 else ''}",
             f"{len(done.messages)} message{'s' if len(done.messages) != 1 else ''} in tracked chats"]
    return f"Deleted everything I kept about you: {', '.join(parts)}."

