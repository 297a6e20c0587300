"""Run every evidence source for one claim, in parallel, and never fail.

    evidence, reports = await gather_all(sources, query, limit=8, timeout=settings.source_timeout_s)

Each source runs under its own `timeout`. A source that raises, hangs or returns something that is not a
list of Evidence gives a `SourceReport(ok=False, error=<one sentence>)` and no evidence; the others are
unaffected. Typed errors (core/evidence/errors.py, or anything with a `sentence`) supply the sentence;
anything else is logged with its traceback and reported generically, so no raw exception text (URLs with
keys, hosts) reaches a user. Evidence comes back in source order, at most `limit` per source.
Cancelling the caller cancels every source (nothing is left running).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from pydantic import ValidationError

from core.evidence.base import ClaimQuery, Evidence, EvidenceSource, SourceReport

log = logging.getLogger(__name__)


async def _run(source: EvidenceSource, query: ClaimQuery, limit: int,
               timeout: float) -> tuple[list[Evidence], SourceReport]:
    name = str(getattr(source, "name", type(source).__name__))
    start = time.perf_counter()
    notes: list[str] = []

    def report(ok: bool, found: int = 0, error: str = "") -> SourceReport:
        return SourceReport(source=name, ok=ok, ms=round((time.perf_counter() - start) * 1000, 1), found=found,
                            error=error, notes=notes)

    try:
        async with asyncio.timeout(timeout):
            noted = getattr(source, "gather_noted", None)
            if noted is not None:
                result, notes = await noted(query, limit=limit)
                notes = [str(n) for n in notes]
            else:
                result = await source.gather(query, limit=limit)
        if not isinstance(result, list):
            raise TypeError(f"{name} returned {type(result).__name__}, not a list")
        evidence = [e if isinstance(e, Evidence) else Evidence.model_validate(e) for e in result][:limit]
    except TimeoutError:
        return [], report(False, error=f"No answer within {timeout:g} s.")
    except (TypeError, ValidationError):
        log.warning("evidence source %s returned malformed results", name, exc_info=True)
        return [], report(False, error="The source returned results in an unexpected shape.")
    except Exception as exc:  # a source must never fail the check
        sentence = getattr(exc, "sentence", None)
        if isinstance(sentence, str) and sentence:
            log.info("evidence source %s failed: %s", name, sentence)
            return [], report(False, error=sentence)
        log.warning("evidence source %s failed", name, exc_info=True)
        return [], report(False, error="The source failed unexpectedly.")
    if not evidence and notes:
        # Nothing usable and a reason for each item (every link refused, say): that is a failed source.
        return [], report(False, error=" ".join(notes)[:500])
    return evidence, report(True, found=len(evidence))


async def gather_all(sources: Sequence[EvidenceSource], query: ClaimQuery, *, limit: int,
                     timeout: float) -> tuple[list[Evidence], list[SourceReport]]:
    results = await asyncio.gather(*(_run(s, query, limit, timeout) for s in sources))
    evidence = [e for found, _ in results for e in found]
    return evidence, [r for _, r in results]
