"""What every ingestion parser yields, and the one error that rejects a whole file.

Parsers are pure (bytes/text in, rows out) so the CLI, the HTTP upload and tests share them.
A bad record never stops a file: it becomes a `ParsedRow` with an `error` and its position, so the
person importing can fix exactly those rows. Only a file that cannot be read at all raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from schema.models import FactCheck


class IngestFormatError(Exception):
    """The file as a whole is unreadable (binary, bad encoding, bad JSON, nothing recognisable).

    The message is one sentence meant for the person who supplied the file.
    """


@dataclass
class ParsedRow:
    # 1-based physical line for line-oriented formats (CSV/TSV/JSONL), 1-based record index for
    # JSON and feeds; None when the record has no meaningful position.
    line: int | None
    factcheck: FactCheck | None
    error: str | None
    # Stored, but the person importing should know: "line 7: unknown rating 'Banana', stored as unrated".
    # Written as errors are, "<where>: <what>".
    warning: str | None = None

    @property
    def reason(self) -> str | None:
        """The error without its position ("no rating"), to count skipped rows by cause. Every
        parser writes errors as "<where>: <reason>", and no <where> holds ": "."""
        if self.error is None:
            return None
        return self.error.split(": ", 1)[1] if ": " in self.error else self.error

    @property
    def ok(self) -> bool:
        return self.factcheck is not None and self.error is None


class RowError(ValueError):
    """Raised by per-record builders; parsers turn it into a `ParsedRow` with `error` set."""
