"""Usage figures for `/stats` (bot/chat_settings.py): checks, their verdicts and how many matched."""

from __future__ import annotations

from dataclasses import dataclass

from storage.sqlite import Database


@dataclass(frozen=True)
class CheckStats:
    total: int
    since: int  # checks made since the given time
    verdicts: list[tuple[str, int]]  # (verdict, checks), most frequent first
    matched: int  # checks that matched a known fact-check (tier auto or suggest)


async def check_stats(db: Database, since_iso: str) -> CheckStats:
    total = await db.fetchone("SELECT COUNT(*) FROM checks")
    recent = await db.fetchone("SELECT COUNT(*) FROM checks WHERE created_at >= ?", (since_iso,))
    mix = await db.fetchall("SELECT verdict, COUNT(*) FROM checks GROUP BY verdict ORDER BY COUNT(*) DESC")
    matched = await db.fetchone(
        """SELECT COUNT(*) FROM checks WHERE EXISTS (SELECT 1 FROM json_each(checks.result, '$.matches')
           WHERE json_extract(value, '$.tier') IN ('auto', 'suggest'))""")
    return CheckStats(total=int(total[0]) if total else 0, since=int(recent[0]) if recent else 0,
                      verdicts=[(str(v), int(n)) for v, n in mix], matched=int(matched[0]) if matched else 0)
