"""The engine entry point: `Engine.check(text)` runs every stage and returns one `Result`.

This is where a check's verdict is decided. Stages are timed into `Result.steps`, and reported to a
`ProgressSink` so chat adapters can edit their "Checking…" message in place.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol

from core.intake import intake
from core.matching import ClaimMatcher
from core.models import Result, Step, new_check_id
from core.offline_verdict import decide
from storage.sqlite import Database


class ProgressSink(Protocol):
    async def stage(self, name: str, detail: str = "") -> None: ...


class SourcePolicy(Protocol):
    """The admins' source rules for a chat (bot/domains.py implements it over the domain tables)."""

    async def denied_filter(self, scope: str) -> Callable[[str], bool]: ...


class NullProgress:
    async def stage(self, name: str, detail: str = "") -> None:
        return None


class Engine:
    def __init__(self, db: Database, matcher: ClaimMatcher, *, max_input_chars: int = 4096,
                 source_policy: SourcePolicy | None = None):
        self.db = db
        self.matcher = matcher
        self.max_input_chars = max_input_chars
        self.source_policy = source_policy

    async def check(self, raw: str | bytes, progress: ProgressSink | None = None, *, save: bool = True,
                    scope: str = "global") -> Result:
        """Raises `core.intake.EmptyInput` when there is nothing to check; everything else ends in a Result.

        `scope` selects the admins' source rules (global, or a chat's): denied domains are never cited."""
        progress = progress or NullProgress()
        steps: list[Step] = []

        @asynccontextmanager
        async def step(name: str) -> AsyncIterator[list[str]]:
            await progress.stage(name)
            detail: list[str] = []
            t0 = time.perf_counter()
            try:
                yield detail
            finally:
                steps.append(Step(name=name, ms=round((time.perf_counter() - t0) * 1000, 2),
                                  detail="; ".join(detail)))

        async with step("intake") as d:
            msg = intake(raw, self.max_input_chars)
            d.append(f"{len(msg.text)} chars, language {msg.language}, {len(msg.urls)} link(s)")
        async with step("match") as d:
            matches = await self.matcher.match(msg.text, msg.urls, language=msg.language)
            d.append(", ".join(f"{m.similarity:.2f}/{m.tier}" for m in matches) or "no candidates")
            policy_notes: list[str] = []
            if self.source_policy is not None:
                denied = await self.source_policy.denied_filter(scope)
                kept = [m for m in matches if not (m.url and denied(m.url))]
                if len(kept) < len(matches):
                    d.append(f"{len(matches) - len(kept)} from denied domains left out")
                    policy_notes.append(f"{len(matches) - len(kept)} fact-check(s) from domains an admin "
                                        "denied were left out.")
                matches = kept
        async with step("verdict") as d:
            decided = decide(msg.text, matches)
            d.append(f"{decided.verdict.value} ({decided.confidence:.2f}), offline")

        result = Result(
            id=new_check_id(), text=msg.text, language=msg.language, verdict=decided.verdict,
            label=decided.verdict.label, confidence=decided.confidence, reasoning=decided.reasoning,
            citations=decided.citations, matches=decided.matches, mode="offline",
            notes=[*msg.notes, *policy_notes, *decided.notes], steps=steps,
        )
        if save:
            await self.db.save_check(result)
        return result
