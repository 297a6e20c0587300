"""`BudgetedLLM`: the `LLM` protocol around another LLM, recording what each call costs and enforcing a cap.

    llm = BudgetedLLM(OpenAICompatibleLLM(...), db, settings)

Every call adds one row to `llm_usage` (migration 6): UTC time, the check id, the stage (the structured
output's name), model, prompt/completion tokens and the estimated USD at `llm_input_usd_per_mtok` /
`llm_output_usd_per_mtok`. Tokens are read from the wrapped LLM's `.usage` counters
(`OpenAICompatibleLLM.usage`), so every completion received is counted, malformed ones that were retried
included. Concurrent calls share those counters; each call records what was added since the previous
record, so the totals are exact and at worst a retried malformed answer is attributed to a neighbouring
call of another check.

Which check a call belongs to comes from a context variable, because the LLM is called deep inside the
engine's stages and the protocol has no room for it:

    with llm_check(check_id):      # set by whoever runs the check (the engine, once it makes the id
        result = await engine.check(...)   # up front); asyncio tasks started inside inherit it

Outside such a block rows get check_id NULL.

Limits (both optional, None = off):
- `llm_daily_warn_usd`: once the UTC day's spending reaches it, one warning is logged per day (the day is
  remembered in the `kv` table, so a restart does not warn again).
- `llm_monthly_cap_usd`: once the UTC calendar month's spending reaches it, calls raise `BudgetExceeded`
  without reaching the API. It is an `LLMError`, so every stage degrades to its offline path as for any
  other LLM failure; `BudgetExceeded.user_message` is the sentence for the reply. Calls already in flight
  when the cap is crossed still finish, so the cap can be overshot by at most those calls.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, timedelta, timezone
from typing import Protocol, TypeVar

from pydantic import BaseModel

from core.llm.client import DEFAULT_MAX_TOKENS, LLM, LLMError
from schema.models import utcnow
from storage.sqlite import Database
from storage.usage import Spend, UsageStore

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

current_check_id: ContextVar[str | None] = ContextVar("tipline_llm_check_id", default=None)

_WARNED_KEY = "llm_budget_warned_day"
OFFLINE_SENTENCE = "the monthly LLM budget is used up; answering in offline mode"


@contextmanager
def llm_check(check_id: str | None) -> Iterator[None]:
    """Attribute LLM calls made inside the block (and tasks it starts) to `check_id`."""
    token = current_check_id.set(check_id)
    try:
        yield
    finally:
        current_check_id.reset(token)


class BudgetExceeded(LLMError):
    """The monthly cap is reached; the LLM is not called. `user_message` can go into the reply."""

    user_message = OFFLINE_SENTENCE

    def __init__(self, spent_usd: float, cap_usd: float):
        self.spent_usd = spent_usd
        self.cap_usd = cap_usd
        super().__init__(f"{OFFLINE_SENTENCE} (spent ${spent_usd:.2f} of ${cap_usd:.2f} this month)")


class BudgetSettings(Protocol):
    """The part of bot.settings.Settings this needs (core does not import bot)."""

    llm_input_usd_per_mtok: float
    llm_output_usd_per_mtok: float
    llm_daily_warn_usd: float | None
    llm_monthly_cap_usd: float | None


class CostObserver(Protocol):
    """Told about each recorded call; `bot.metrics.Metrics` implements it."""

    def llm_cost(self, name: str, prompt_tokens: int, completion_tokens: int, usd: float) -> None: ...


def _month_of(at: datetime) -> str:
    at = at.astimezone(timezone.utc)
    return f"{at.year}-{at.month:02d}"


class MeteredLLM(LLM, Protocol):
    """An LLM that keeps its books (`BudgetedLLM`): what the engine is given, so it can answer offline
    once the month's cap is reached and report each check's spending."""

    async def over_cap(self) -> bool: ...

    async def spent_for_check(self, check_id: str) -> Spend: ...


class BudgetedLLM:
    def __init__(self, llm: LLM, db: Database, settings: BudgetSettings, *,
                 now: Callable[[], datetime] = utcnow, observer: CostObserver | None = None):
        self.llm = llm
        self.db = db
        self.spending = UsageStore(db)
        self.settings = settings
        self.observer = observer
        self._now = now
        self._seen = self._counters()
        self._warned_day: str | None = None
        self._month_key: str | None = None  # the month `_month_usd_total` is for
        self._month_usd_total = 0.0

    def __repr__(self) -> str:
        return f"BudgetedLLM({self.llm!r})"

    @property
    def usage(self):  # type: ignore[no-untyped-def]  # the wrapped LLM's counters, for callers that read them
        return getattr(self.llm, "usage", None)

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "model", ""))

    async def aclose(self) -> None:
        close = getattr(self.llm, "aclose", None)
        if close is not None:
            await close()

    async def over_cap(self) -> bool:
        """True when this month's spending reached the cap: the engine then answers offline and says so."""
        cap = self.settings.llm_monthly_cap_usd
        return cap is not None and await self._month_usd() >= cap

    async def _month_usd(self) -> float:
        """This month's spend, summed from `llm_usage` once per month and kept up to date by `_record`:
        the cap is checked before every call, and a SUM over the month's rows each time would grow with
        use. (One process writes a data dir's database, so the running total stays exact.)"""
        key = _month_of(self._now())
        if self._month_key != key:
            self._month_usd_total = (await self.spent_this_month()).usd
            self._month_key = key
        return self._month_usd_total

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.settings.llm_input_usd_per_mtok
                + completion_tokens * self.settings.llm_output_usd_per_mtok) / 1_000_000

    async def structured(self, system: str, user: str, schema: type[M], *, name: str,
                         max_tokens: int = DEFAULT_MAX_TOKENS) -> M:
        cap = self.settings.llm_monthly_cap_usd
        if cap is not None:
            try:
                spent = await self._month_usd()
            except sqlite3.Error as exc:
                # Without the books we cannot honour the cap: degrade like any LLM failure.
                raise LLMError("LLM budget could not be read") from exc
            if spent >= cap:
                raise BudgetExceeded(spent, cap)
        ok = False
        try:
            answer = await self.llm.structured(system, user, schema, name=name, max_tokens=max_tokens)
            ok = True
            return answer
        finally:
            try:
                await self._record(name, ok)
            except sqlite3.Error as exc:
                # Losing one row of bookkeeping must not throw away an answer that was paid for.
                log.error("could not record LLM usage for %s: %s", name, exc)

    # --- bookkeeping -----------------------------------------------------------------------------

    def _counters(self) -> tuple[int, int]:
        usage = getattr(self.llm, "usage", None)
        return (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))

    async def _record(self, name: str, ok: bool) -> None:
        prompt_now, completion_now = self._counters()
        prompt, completion = prompt_now - self._seen[0], completion_now - self._seen[1]
        self._seen = (prompt_now, completion_now)
        usd = self.cost(prompt, completion)
        now = self._now()
        await self.spending.record(now, current_check_id.get(), name, self.model, prompt, completion, usd, ok)
        if self._month_key == _month_of(now):
            self._month_usd_total += usd
        if self.observer is not None:
            self.observer.llm_cost(name, prompt, completion, usd)
        await self._maybe_warn(now)

    async def _maybe_warn(self, now: datetime) -> None:
        warn = self.settings.llm_daily_warn_usd
        if warn is None:
            return
        day = now.astimezone(timezone.utc).date().isoformat()
        if self._warned_day == day:
            return
        spent = (await self.spent_on(now.astimezone(timezone.utc).date())).usd
        if spent < warn:
            return
        if await self.db.get_kv(_WARNED_KEY) != day:
            log.warning("LLM spending today is $%.4f, past the daily warning level of $%.2f", spent, warn)
            await self.db.set_kv(_WARNED_KEY, day)
        self._warned_day = day

    async def spent_on(self, day: date) -> Spend:
        start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        return await self.spending.between(start, start + timedelta(days=1))

    async def spent_this_month(self) -> Spend:
        now = self._now().astimezone(timezone.utc)
        start = datetime(now.year, now.month, 1, tzinfo=timezone.utc)
        return await self.spending.since(start)

    async def spent_for_check(self, check_id: str) -> Spend:
        return await self.spending.for_check(check_id)
