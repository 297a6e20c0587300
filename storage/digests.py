"""Digests and alerts (tables from migration 9), and the one read a digest is built from.

- `story_chats(since, until)`: the window's messages grouped per (story, chat) in SQLite, chats that
  are tracked *now* only, without any text (the ranking needs no more); `story_keys` then lists the
  members of the few stories shown, whose texts `MessageStore.get` reads.
- `DigestStore`: each chat's digest schedule (`/digest on …`), its alert threshold (`/alerts on N`),
  and the stories already alerted in a chat (claimed before sending, released if sending failed, so a
  restart or two ticks at once never repeat an alert).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple
from datetime import datetime, timezone

from storage.sqlite import Database


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


class StoryChat(NamedTuple):
    """One story in one chat within a window. A tuple, not a dataclass: a window can hold ~100,000."""

    story: str  # the story id the messages were stored with (resolve it through the aliases)
    chat: str  # "<platform>:<chat id>"
    first_ts: float
    first_key: str  # the chat's first message of the story in the window
    messages: int


@dataclass(frozen=True)
class DigestSchedule:
    platform: str
    chat_id: str
    period_s: float
    daily_minute: int | None  # minutes after 00:00 UTC for a daily digest; None for "every N h"
    top_k: int
    lang: str
    thread_id: str | None
    next_at: float
    last_at: float | None = None


@dataclass(frozen=True)
class AlertSetting:
    platform: str
    chat_id: str
    min_chats: int
    lang: str
    thread_id: str | None


_SCHEDULE_COLS = "platform, chat_id, period_s, daily_minute, top_k, lang, thread_id, next_at, last_at"


def _schedule(r: Sequence) -> DigestSchedule:
    return DigestSchedule(str(r[0]), str(r[1]), float(r[2]), None if r[3] is None else int(r[3]), int(r[4]),
                          str(r[5]), None if r[6] is None else str(r[6]), float(r[7]),
                          None if r[8] is None else float(r[8]))


class DigestStore:
    def __init__(self, db: Database):
        self.db = db

    # --- the window ------------------------------------------------------------------------------

    async def story_chats(self, since: float, until: float) -> list[StoryChat]:
        """(story, chat) pairs of the window's messages in currently tracked chats, grouped in SQLite from
        the covering index messages_window (migration 9). Stories seen in one chat only are dropped here
        unless a merge alias touches them (only those could still reach two chats): for 100,000 stored
        messages this returns ~18,000 rows in 0.36-0.45 s on 2 busy cores, where reading every row took
        0.45 s and making Python objects of them another 0.2-0.38 s. A chat that turned `/track off`
        drops out at once even though its messages stay until `/forget` or retention; tracked chats are
        a few hundred, so they are filtered here rather than joined per row."""
        tracked = {(r[0], r[1]) for r in await self.db.fetchall(
            "SELECT platform, chat_id FROM tracked_chats WHERE tracking = 1")}
        rows = await self.db.fetchall(
            # SQLite takes the bare column `id` from the row holding MIN(ts): the chat's first message.
            """WITH g AS (
                   SELECT COALESCE(story_id, id) AS s, platform AS p, chat_id AS c, MIN(ts) AS t, id, COUNT(*) AS n
                   FROM messages WHERE ts >= ? AND ts < ? GROUP BY s, platform, chat_id)
               SELECT s, p, c, t, id, n FROM g
               WHERE s IN (SELECT s FROM g GROUP BY s HAVING COUNT(*) >= 2)
                  OR s IN (SELECT into_id FROM story_aliases) OR s IN (SELECT story_id FROM story_aliases)""",
            (since, until))
        return [StoryChat(r[0], f"{r[1]}:{r[2]}", float(r[3]), r[4], int(r[5])) for r in rows
                if (r[1], r[2]) in tracked]

    async def story_keys(self, stories: Sequence[str], since: float, until: float, limit: int) -> list[str]:
        """Keys of the messages stored under any of the ids `stories` (one story and the ids merged into
        it) in tracked chats within the window, oldest first, at most `limit` (the messages_story index)."""
        ids = list(stories)[:500]  # SQL variables: 999 in older SQLite builds; a story merges far fewer ids
        rows = await self.db.fetchall(
            f"SELECT m.id FROM messages m JOIN tracked_chats c ON c.platform = m.platform AND c.chat_id = m.chat_id "
            f"AND c.tracking = 1 WHERE m.story_id IN ({','.join('?' * len(ids))}) AND m.ts >= ? AND m.ts < ? "
            "ORDER BY m.ts, m.id LIMIT ?", (*ids, since, until, limit))
        return [str(r[0]) for r in rows]

    async def chat_language(self, platform: str, chat_id: object) -> str:
        """The most common detected language of a chat's stored messages ('' when none is stored)."""
        row = await self.db.fetchone(
            "SELECT language, COUNT(*) AS n FROM messages WHERE platform = ? AND chat_id = ? AND language != '' "
            "GROUP BY language ORDER BY n DESC LIMIT 1", (platform, str(chat_id)))
        return str(row[0]) if row is not None else ""

    # --- schedules -------------------------------------------------------------------------------

    async def set_schedule(self, s: DigestSchedule, *, by: object = None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                f"INSERT OR REPLACE INTO digest_schedules ({_SCHEDULE_COLS}, updated_by, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (s.platform, s.chat_id, s.period_s, s.daily_minute, s.top_k, s.lang, s.thread_id, s.next_at,
                 s.last_at, None if by is None else str(by), _now_iso()))

    async def schedule(self, platform: str, chat_id: object) -> DigestSchedule | None:
        row = await self.db.fetchone(f"SELECT {_SCHEDULE_COLS} FROM digest_schedules WHERE platform = ? AND "
                                     "chat_id = ?", (platform, str(chat_id)))
        return None if row is None else _schedule(row)

    async def remove_schedule(self, platform: str, chat_id: object) -> bool:
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM digest_schedules WHERE platform = ? AND chat_id = ?",
                                     (platform, str(chat_id)))
            return cur.rowcount > 0

    async def due(self, now: float) -> list[DigestSchedule]:
        rows = await self.db.fetchall(f"SELECT {_SCHEDULE_COLS} FROM digest_schedules WHERE next_at <= ? "
                                      "ORDER BY next_at", (now,))
        return [_schedule(r) for r in rows]

    async def next_due(self) -> float | None:
        row = await self.db.fetchone("SELECT MIN(next_at) FROM digest_schedules")
        return None if row is None or row[0] is None else float(row[0])

    async def advance(self, platform: str, chat_id: str, *, last_at: float, next_at: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("UPDATE digest_schedules SET last_at = ?, next_at = ? WHERE platform = ? AND "
                               "chat_id = ?", (last_at, next_at, platform, chat_id))

    # --- alerts ----------------------------------------------------------------------------------

    async def set_alerts(self, a: AlertSetting, *, by: object = None) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO alert_settings (platform, chat_id, min_chats, lang, thread_id, updated_by, "
                "updated_at) VALUES (?,?,?,?,?,?,?)",
                (a.platform, a.chat_id, a.min_chats, a.lang, a.thread_id, None if by is None else str(by),
                 _now_iso()))

    async def remove_alerts(self, platform: str, chat_id: object) -> bool:
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM alert_settings WHERE platform = ? AND chat_id = ?",
                                     (platform, str(chat_id)))
            return cur.rowcount > 0

    async def alert_settings(self) -> list[AlertSetting]:
        rows = await self.db.fetchall("SELECT platform, chat_id, min_chats, lang, thread_id FROM alert_settings")
        return [AlertSetting(str(r[0]), str(r[1]), int(r[2]), str(r[3]), None if r[4] is None else str(r[4]))
                for r in rows]

    async def alerted(self, platform: str, chat_id: str) -> set[str]:
        """Story ids already alerted in this chat (as they were then: resolve them through the aliases)."""
        rows = await self.db.fetchall("SELECT story_id FROM story_alerts WHERE platform = ? AND chat_id = ?",
                                      (platform, chat_id))
        return {str(r[0]) for r in rows}

    async def claim_alert(self, platform: str, chat_id: str, story_id: str, factcheck_id: str, chats: int,
                          at: float) -> bool:
        """True if this story was not alerted in this chat yet (and now counts as alerted)."""
        async with self.db.transaction() as conn:
            cur = await conn.execute(
                "INSERT OR IGNORE INTO story_alerts (platform, chat_id, story_id, factcheck_id, chats, sent_at) "
                "VALUES (?,?,?,?,?,?)", (platform, chat_id, story_id, factcheck_id, chats, at))
            return cur.rowcount == 1

    async def release_alert(self, platform: str, chat_id: str, story_id: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM story_alerts WHERE platform = ? AND chat_id = ? AND story_id = ?",
                               (platform, chat_id, story_id))
