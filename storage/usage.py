"""LLM spending (`llm_usage`, migration 6): one row per call, summed by day, month or check."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from storage.sqlite import Database


@dataclass(frozen=True)
class Spend:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0
    calls: int = 0


def stamp(at: datetime) -> str:
    # Fixed-width UTC text so day and month ranges are plain string comparisons on the index.
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_SUM = ("SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), "
        "COALESCE(SUM(usd), 0.0), COUNT(*) FROM llm_usage WHERE ")


class UsageStore:
    def __init__(self, db: Database):
        self.db = db

    async def record(self, at: datetime, check_id: str | None, name: str, model: str, prompt_tokens: int,
                     completion_tokens: int, usd: float, ok: bool) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO llm_usage (at, check_id, name, model, prompt_tokens, completion_tokens, usd, ok) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (stamp(at), check_id, name, model, prompt_tokens, completion_tokens, usd, int(ok)))

    async def _sum(self, where: str, args: tuple[object, ...]) -> Spend:
        row = await self.db.fetchone(_SUM + where, args)
        if row is None:
            return Spend()
        p, c, usd, n = row
        return Spend(int(p), int(c), float(usd), int(n))

    async def between(self, start: datetime, end: datetime) -> Spend:
        return await self._sum("at >= ? AND at < ?", (stamp(start), stamp(end)))

    async def since(self, start: datetime) -> Spend:
        return await self._sum("at >= ?", (stamp(start),))

    async def for_check(self, check_id: str) -> Spend:
        return await self._sum("check_id = ?", (check_id,))
