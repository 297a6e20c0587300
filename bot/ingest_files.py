"""`tipline ingest`: read files or URLs of previously fact-checked claims into the knowledge base.

Each source is parsed whole before anything is written, so a bad file changes nothing; bad rows are
reported with their line number and skipped. URLs here are given by the operator on the command line,
so they are trusted (the SSRF guard is for links that arrive in messages).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from core.ingest import MAX_BYTES, IngestFormatError, parse_bytes
from core.matching.knowledge_base import KnowledgeBase, Progress

FETCH_TIMEOUT_S = 60


@dataclass
class SourceReport:
    source: str
    added: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    failed: str | None = None
    reasons: Counter[str] = field(default_factory=Counter)  # why rows were skipped: "no rating" -> 3
    # Rows stored as unrated, because their rating could not be read ("unknown rating 'Banana'"): one
    # sentence each, with its position, as errors are.
    warnings: list[str] = field(default_factory=list)

    @property
    def unrated(self) -> int:
        return len(self.warnings)

    def to_json(self, max_errors: int = 50) -> dict:
        """The report as the REST API answers it (POST /v1/factchecks); the first `max_errors` row errors and
        as many warnings."""
        return {"source": self.source, "added": self.added, "updated": self.updated, "skipped": self.skipped,
                "reasons": dict(self.reasons.most_common()), "errors": self.errors[:max_errors],
                "unrated": self.unrated, "warnings": self.warnings[:max_errors], "summary": self.summary()}

    def summary(self) -> str:
        """`3 new, 0 updated, 2 skipped (1 no rating, 1 rating without a source URL); 1 stored unrated (rating
        not understood)`."""
        why = ", ".join(f"{n} {reason}" for reason, n in self.reasons.most_common())
        return (f"{self.added} new, {self.updated} updated, {self.skipped} skipped"
                + (f" ({why})" if why else "")
                + (f"; {self.unrated} stored unrated (rating not understood)" if self.unrated else ""))


async def read_source(source: str, max_bytes: int = MAX_BYTES) -> tuple[str, bytes]:
    if source.startswith(("http://", "https://")):
        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session, session.get(source) as resp:
                if resp.status != 200:
                    raise IngestFormatError(f"{source} answered HTTP {resp.status}.")
                data = await resp.content.read(max_bytes + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise IngestFormatError(f"could not download {source}: {exc.__class__.__name__} {exc}".strip()) from exc
        name = source.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or "download"
        return name, data
    path = Path(source)
    try:
        if path.stat().st_size > max_bytes:
            raise IngestFormatError(f"{source} is larger than the {max_bytes // 2**20} MB limit; split it.")
        return path.name, path.read_bytes()
    except FileNotFoundError as exc:
        raise IngestFormatError(f"{source}: no such file.") from exc
    except IsADirectoryError as exc:
        raise IngestFormatError(f"{source} is a directory; name the files inside it.") from exc
    except PermissionError as exc:
        raise IngestFormatError(f"{source} cannot be read (permission denied).") from exc


async def ingest_source(kb: KnowledgeBase, source: str, mapping: dict[str, str] | None = None,
                        progress: Progress | None = None,
                        on_row_error: Callable[[str], None] | None = None,
                        on_row_warning: Callable[[str], None] | None = None) -> SourceReport:
    try:
        name, data = await read_source(source)
    except IngestFormatError as exc:
        report = SourceReport(source, failed=str(exc))
        run_id = await kb.db.start_ingest_run(source)
        await kb.db.finish_ingest_run(run_id, status="failed", added=0, skipped=0, errors=[str(exc)])
        return report
    return await ingest_bytes(kb, source, name, data, mapping, progress=progress, on_row_error=on_row_error,
                              on_row_warning=on_row_warning)


async def ingest_bytes(kb: KnowledgeBase, source: str, name: str, data: bytes, mapping: dict[str, str] | None = None,
                       progress: Progress | None = None,
                       on_row_error: Callable[[str], None] | None = None,
                       on_row_warning: Callable[[str], None] | None = None) -> SourceReport:
    """One file's bytes (`name` for its format: .json, .csv, .tsv, …) into the knowledge base, reported as
    `source`: what `tipline ingest`, the REST API (POST /v1/factchecks) and a file sent to the Telegram
    bot share."""
    report = SourceReport(source)
    run_id = await kb.db.start_ingest_run(source)
    try:
        # Parsing a 200 MB file takes seconds of CPU: off the event loop, so a bot that ingests keeps answering.
        rows = await asyncio.to_thread(parse_bytes, name, data, mapping)
    except IngestFormatError as exc:
        report.failed = str(exc)
        await kb.db.finish_ingest_run(run_id, status="failed", added=0, skipped=0, errors=[str(exc)])
        return report
    good = [r.factcheck for r in rows if r.factcheck is not None]
    for r in rows:
        if r.error:
            msg = f"{source}:{r.line}: {r.error}" if r.line else f"{source}: {r.error}"
            report.errors.append(msg)
            report.reasons[r.reason or r.error] += 1
            if on_row_error:
                on_row_error(msg)
        elif r.warning:  # stored, as unrated
            msg = f"{source}:{r.line}: {r.warning}" if r.line else f"{source}: {r.warning}"
            report.warnings.append(msg)
            if on_row_warning:
                on_row_warning(msg)
    report.skipped = len(report.errors)
    unique = len({fc.id for fc in good})
    report.added = await kb.add(good, run_id=run_id, progress=progress)
    report.updated = unique - report.added
    await kb.db.finish_ingest_run(run_id, status="done", added=report.added, skipped=report.skipped,
                                  errors=report.errors)
    return report
