"""An append-only file that records, in microseconds, that a job is about to send its first reply message and
then which platform message that was: the crash window between a send and its record, made as narrow as it can be.

Sending a message is not idempotent on Telegram or Slack. If the process dies after the platform accepted
a "🔎 Checking…" but before its id was stored, the resumed job cannot edit that message and it stays behind
as an orphan. Storing the id in SQLite goes through the single writer (bot/queue.py workers, the result
store, claims all queue there): the id reached the `jobs` row tens of milliseconds after the reply existed.
A line written here with one `os.write` (O_APPEND, no fsync: a SIGKILL does not lose the page cache) is
durable against a killed process as soon as the call returns, so the window shrinks to the moment between
the platform's answer reaching this process and that call.

Lines: `? <job>` before the first send (the intent), `= <job> <ref>` once the platform answered. At start-up
`JobStore.recover` moves every `=` into the `jobs` table and counts intents that never got a `=`: a reply
that may or may not have gone out (logged; docs/reliability.md has the measured rate). Then the file starts
over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Replay:
    refs: dict[int, str] = field(default_factory=dict)  # job id -> platform message id
    uncertain: set[int] = field(default_factory=set)  # intents with no message id after them


class ReplyJournal:
    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def _write(self, line: str) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(self._fd, line.encode())  # one write(2) of a short line under O_APPEND: never interleaved

    def intent(self, job_id: int) -> None:
        self._write(f"? {job_id}\n")

    def sent(self, job_id: int, ref: str) -> None:
        self._write(f"= {job_id} {ref.replace(chr(10), ' ')}\n")

    @property
    def rotated(self) -> Path:
        return self.path.with_name(self.path.name + ".old")

    def rotate(self) -> None:
        """Later lines go to a new file; the old one is read by `replay` until `clear` (a running bot's
        journal would otherwise grow ~30 bytes per check forever). Called on the event loop, like every
        write, so no line lands in between."""
        if self.rotated.exists() or not self.path.exists():
            return
        self.close()
        self.path.rename(self.rotated)

    def replay(self) -> Replay:
        out = Replay()
        text = ""
        for path in (self.rotated, self.path):
            try:
                text += path.read_text(encoding="utf-8", errors="replace") + "\n"
            except FileNotFoundError:
                pass
        for line in text.splitlines():
            parts = line.split(" ", 2)
            try:
                job = int(parts[1])
            except (IndexError, ValueError):
                continue  # a torn last line (the process died inside write): nothing was promised by it
            if parts[0] == "?":
                out.uncertain.add(job)
            elif parts[0] == "=" and len(parts) == 3:
                out.refs[job] = parts[2]
        out.uncertain -= set(out.refs)
        return out

    def clear(self, *, rotated_only: bool = False) -> None:
        """Forget what `replay` returned once it is in the database (`rotated_only`: the old file only,
        while this process keeps writing the new one)."""
        self.rotated.unlink(missing_ok=True)
        if not rotated_only:
            self.close()
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
