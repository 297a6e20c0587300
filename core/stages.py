"""What the engine's stages hand each other (core/engine.py), as typed records:

    raw text -> intake -> Admitted -> claims -> Claimed -> evidence -> Gathered -> adjudication -> Result

A stage either returns the next record or, when the message turns out to hold nothing to check, the
answer itself (a `Result`). `CheckRun` is one check's running record: its id, its clock, the steps timed
so far and the notes for the user, which every stage appends to.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from core.intake.claims import Claim
from core.evidence.base import Evidence
from core.intake.message import Intake
from core.llm.client import LLM
from core.verdict.verify import ClaimVerdict
from schema.models import Match, SourceTrace, Step


class ProgressSink(Protocol):
    async def stage(self, name: str, detail: str = "") -> None: ...


class NullProgress:
    async def stage(self, name: str, detail: str = "") -> None:
        return None


@dataclass
class CheckRun:
    """One check on its way through the stages."""

    check_id: str
    progress: ProgressSink
    started: float = field(default_factory=time.monotonic)
    steps: list[Step] = field(default_factory=list)  # Result.steps: every stage, timed
    notes: list[str] = field(default_factory=list)  # for the user, in the order they arose

    @asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[list[str]]:
        """Report `name` to the progress sink and time the block into `steps`; the block appends details."""
        await self.progress.stage(name)
        detail: list[str] = []
        t0 = time.perf_counter()
        try:
            yield detail
        finally:
            self.steps.append(Step(name=name, ms=round((time.perf_counter() - t0) * 1000, 2),
                                   detail="; ".join(detail)))

    def elapsed(self) -> float:
        """Seconds since the check started (the deadline counts from here)."""
        return time.monotonic() - self.started


@dataclass(frozen=True)
class Admitted:
    """Intake's output: the cleaned message and the LLM to use (None offline or over the budget)."""

    msg: Intake
    llm: LLM | None


@dataclass(frozen=True)
class Claimed:
    """The claims stage's output: what to check, and the knowledge base's matches for the whole message."""

    msg: Intake
    llm: LLM | None
    claims: list[Claim]
    matches: list[Match]  # those from denied domains already left out
    denied: Callable[[str], bool]  # the scope's denied domains: never cited


@dataclass(frozen=True)
class ClaimEvidence:
    """One claim through the evidence stage: its verdict (None offline: nothing judges the evidence),
    the evidence found and every source's trace."""

    verdict: ClaimVerdict | None
    evidence: list[Evidence]
    traces: list[SourceTrace]


@dataclass(frozen=True)
class Gathered:
    """The evidence stage's output: the claims' verdicts and, per claim, the evidence found."""

    claimed: Claimed
    judged: list[ClaimVerdict]
    found: list[tuple[str, list[Evidence]]]  # (claim, its evidence)
    traces: list[SourceTrace]

    def worth_keeping(self) -> list[tuple[str, list[Evidence]]]:
        """The evidence to index for later checks."""
        if not self.judged:
            return self.found
        # On the LLM path only what was ranked is embedded (core/evidence/ranking.py: the shortlist); of that,
        # what was judged relevant is worth keeping. Indexing everything found would embed the
        # rest in the background, the largest CPU cost of a check, for items nobody found relevant.
        relevant = {j.url for cv in self.judged for j in cv.stances}
        return [(claim, [e for e in evs if e.url in relevant]) for claim, evs in self.found]
