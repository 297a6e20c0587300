"""Digests and alerts (tables from migration 9), and the one read a digest is built from.

- `window(since, until)`: the stored messages of chats that are tracked *now*, inside the window, as
  (id, chat, ts, story) only — no text, so 100,000 rows come back in about a tenth of a second (the
  ranking needs no more; texts are read for the few stories shown, with `MessageStore.get`). A chat
  that turned `/track off` drops out at once even though its messages stay until `/forget` or retention.
- `DigestStore`: each chat's digest schedule (`/digest on …`), its alert threshold (`/alerts on N`),
  and the stories already alerted in a chat (claimed before sending, released if sending failed, so a
  restart or two ticks at once never repeat an alert).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from storage.sqlite import Database


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class WindowRow:
    key: str  # the message id "<platform>:<chat id>:<message id>"
    chat: str  # "<platform>:<chat id>"
    ts: float
    story: str  # the story id the message was stored with (resolve it through the aliases)


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

    async def window(self, since: float, until: float) -> list[WindowRow]:
        """Messages of currently tracked chats with since <= ts < until (the messages_ts index)."""
        rows = await self.db.fetchall(
            "SELECT m.id, m.platform || ':' || m.chat_id, m.ts, COALESCE(m.story_id, m.id) FROM messages m "
            "JOIN tracked_chats c ON c.platform = m.platform AND c.chat_id = m.chat_id AND c.tracking = 1 "
            "WHERE m.ts >= ? AND m.ts < ?", (since, until))
        return [WindowRow(r[0], r[1], float(r[2]), r[3]) for r in rows]

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
