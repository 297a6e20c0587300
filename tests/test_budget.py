"""BudgetedLLM over the real OpenAICompatibleLLM, the fake OpenAI API on 127.0.0.1 and a real SQLite db."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.metrics import Metrics
from bot.settings import Settings
from core.llm.budget import OFFLINE_SENTENCE, BudgetedLLM, BudgetExceeded, llm_check
from core.llm.client import LLMError, OpenAICompatibleLLM
from storage.sqlite import Database
from tests.fakes.openai_api import FakeOpenAI
from tests.llm_fixtures import fake  # noqa: F401  (fixture)


class Answer(BaseModel):
    ok: bool


@dataclass
class Now:
    """An injectable wall clock for day and month boundaries."""

    at: datetime

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
async def db(tmp_path: Path):
    d = await Database.open(tmp_path / "budget.sqlite3")
    yield d
    await d.close()


@pytest.fixture
async def inner(fake: FakeOpenAI):
    llm = OpenAICompatibleLLM(fake.base_url, "test-key", "fake-model", timeout_s=5)
    yield llm
    await llm.aclose()


def make_settings(**kw) -> Settings:
    # Every budget field explicit, so a developer's TIPLINE_* environment cannot change the outcome.
    base = dict(llm_input_usd_per_mtok=1_000.0, llm_output_usd_per_mtok=2_000.0, llm_daily_warn_usd=None,
                llm_monthly_cap_usd=None, _env_file=None)
    return Settings(**{**base, **kw})


async def rows(db: Database) -> list[tuple]:
    cur = await db._conn.execute("SELECT check_id, name, model, prompt_tokens, completion_tokens, usd, ok "
                                 "FROM llm_usage ORDER BY id")
    return [tuple(r) for r in await cur.fetchall()]


async def test_records_tokens_cost_and_check_id(fake, db, inner):
    metrics = Metrics()
    llm = BudgetedLLM(inner, db, make_settings(), observer=metrics)
    fake.reply_json({"ok": True}, prompt_tokens=100, completion_tokens=20)
    fake.reply_json({"ok": False}, prompt_tokens=50, completion_tokens=10)
    with llm_check("chk-1"):
        assert (await llm.structured("sys", "text", Answer, name="stance")).ok is True
    assert (await llm.structured("sys", "text", Answer, name="claims")).ok is False
    # $1000 / M prompt tokens and $2000 / M completion tokens: 100 * 0.001 + 20 * 0.002 = 0.14
    assert await rows(db) == [("chk-1", "stance", "fake-model", 100, 20, pytest.approx(0.14), 1),
                              (None, "claims", "fake-model", 50, 10, pytest.approx(0.07), 1)]
    spent = await llm.spent_for_check("chk-1")
    assert (spent.prompt_tokens, spent.completion_tokens, spent.calls) == (100, 20, 1)
    assert (await llm.spent_this_month()).usd == pytest.approx(0.21)
    text = metrics.render().decode()
    assert 'tipline_llm_tokens_total{kind="prompt"} 150.0' in text
    assert "tipline_llm_cost_usd_total 0.21" in text


async def test_malformed_retry_is_counted_and_failure_recorded(fake, db, inner):
    llm = BudgetedLLM(inner, db, make_settings())
    fake.reply_raw("{not json", prompt_tokens=30, completion_tokens=5)
    fake.reply_raw("still not json", prompt_tokens=30, completion_tokens=5)
    with pytest.raises(LLMError), llm_check("chk-2"):
        await llm.structured("sys", "text", Answer, name="stance")
    # Both malformed completions were paid for, so both are on the bill, marked as a failed call.
    assert await rows(db) == [("chk-2", "stance", "fake-model", 60, 10, pytest.approx(0.08), 0)]
    fake.reply_status(500)
    with pytest.raises(LLMError):
        await llm.structured("sys", "text", Answer, name="stance")
    assert (await rows(db))[-1][3:] == (0, 0, 0.0, 0)


async def test_concurrent_checks_are_attributed_and_totals_exact(fake, db, inner):
    llm = BudgetedLLM(inner, db, make_settings())
    for _ in range(6):
        fake.reply_json({"ok": True}, prompt_tokens=10, completion_tokens=1)

    async def one(check_id: str) -> None:
        with llm_check(check_id):
            await asyncio.gather(*(llm.structured("s", "u", Answer, name="stance") for _ in range(2)))

    await asyncio.gather(*(one(f"c{i}") for i in range(3)))
    for i in range(3):
        assert (await llm.spent_for_check(f"c{i}")).prompt_tokens == 20
    assert (await llm.spent_this_month()).prompt_tokens == 60


async def test_monthly_cap_degrades_to_offline_and_resets_next_month(fake, db, inner):
    now = Now(datetime(2026, 11, 30, 23, 0, tzinfo=timezone.utc))
    llm = BudgetedLLM(inner, db, make_settings(llm_monthly_cap_usd=0.25), now=now)
    for _ in range(3):
        fake.reply_json({"ok": True}, prompt_tokens=100, completion_tokens=20)  # $0.14 each
    await llm.structured("s", "u", Answer, name="stance")
    await llm.structured("s", "u", Answer, name="stance")  # $0.28: the cap is crossed by this call
    sent = len(fake.requests)
    with pytest.raises(BudgetExceeded) as info:
        await llm.structured("s", "u", Answer, name="stance")
    assert isinstance(info.value, LLMError)  # so every stage degrades as for any LLM failure
    assert info.value.user_message == OFFLINE_SENTENCE
    assert str(info.value).startswith("the monthly LLM budget is used up; answering in offline mode")
    assert len(fake.requests) == sent  # the API was not called
    now.at = datetime(2026, 12, 1, 0, 0, 1, tzinfo=timezone.utc)
    assert (await llm.structured("s", "u", Answer, name="stance")).ok


async def test_daily_warning_once_per_day(fake, db, inner, caplog):
    now = Now(datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc))
    settings = make_settings(llm_daily_warn_usd=0.2)
    llm = BudgetedLLM(inner, db, settings, now=now)
    for _ in range(6):
        fake.reply_json({"ok": True}, prompt_tokens=100, completion_tokens=20)

    def warnings() -> int:
        return sum("daily warning level" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)

    with caplog.at_level(logging.WARNING, logger="core.llm.budget"):
        await llm.structured("s", "u", Answer, name="stance")  # $0.14
        assert warnings() == 0
        await llm.structured("s", "u", Answer, name="stance")  # $0.28
        await llm.structured("s", "u", Answer, name="stance")
        assert warnings() == 1
        # A restarted process (new wrapper, same db) does not warn again the same day.
        again = BudgetedLLM(inner, db, settings, now=now)
        await again.structured("s", "u", Answer, name="stance")
        assert warnings() == 1
        now.at = datetime(2026, 11, 23, 0, 30, tzinfo=timezone.utc)  # a new day starts from zero
        await again.structured("s", "u", Answer, name="stance")
        assert warnings() == 1
        await again.structured("s", "u", Answer, name="stance")
        assert warnings() == 2
    assert (await llm.spent_on(now.at.date())).calls == 2
