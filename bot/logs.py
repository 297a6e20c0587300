"""Structured JSON logs (opt-in: `tipline --log-json run`), one object per line.

Every line logged while a queue worker runs a job carries that job's id (`job_id`), whatever module
logs it (engine, evidence sources, adapters), through a context variable; once the check is made the
worker's lines carry its `check_id` too, and the `jobs` table links the two for the lines before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone

_job_id: ContextVar[int | None] = ContextVar("tipline_job_id", default=None)
_check_id: ContextVar[str | None] = ContextVar("tipline_check_id", default=None)


@contextmanager
def job_context(job_id: int) -> Iterator[None]:
    """Tag every log line inside with `job_id` (and the check id once `set_check_id` is called)."""
    job_token = _job_id.set(job_id)
    check_token = _check_id.set(None)
    try:
        yield
    finally:
        _check_id.reset(check_token)
        _job_id.reset(job_token)


def set_check_id(check_id: str | None) -> None:
    _check_id.set(check_id)


class ContextFilter(logging.Filter):
    """Copies the job and check ids of the running task onto each record (a handler filter, so it
    applies to records from every logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "job_id", None) is None:
            record.job_id = _job_id.get()
        if getattr(record, "check_id", None) is None:
            record.check_id = _check_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in ("job_id", "check_id"):
            if (value := getattr(record, key, None)) is not None:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def from_environment(environ: Mapping[str, str]) -> tuple[int | None, bool]:
    """TIPLINE_LOG_LEVEL (debug|info|warning|error) and TIPLINE_LOG_JSON (1/true/yes), the `log_level` and
    `log_json` settings: logging starts before the settings are read, so it reads these two itself. An
    unknown level is left to the settings' own check to report."""
    level = _LEVELS.get(environ.get("TIPLINE_LOG_LEVEL", "").strip().lower())
    return level, environ.get("TIPLINE_LOG_JSON", "").strip().lower() in ("1", "true", "yes", "on")


def configure(level: int, *, json_lines: bool) -> None:
    """Root logging to stderr: the human format, or JSON lines."""
    if not json_lines:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
