"""The reply journal (storage/reply_journal.py): a reply message's id recorded the moment it exists reaches the
job at the next start, so the resumed job edits that message instead of leaving it behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.jobs import JobStore
from storage.reply_journal import ReplyJournal
from storage.sqlite import Database

pytestmark = pytest.mark.asyncio


async def _store(tmp_path: Path) -> tuple[Database, JobStore, ReplyJournal]:
    db = await Database.open(tmp_path / "t.sqlite3")
    journal = ReplyJournal(tmp_path / "reply-refs.journal")
    return db, JobStore(db, journal), journal


async def test_an_id_only_in_the_journal_reaches_the_job_at_recovery(tmp_path: Path):
    db, store, journal = await _store(tmp_path)
    try:
        a, _ = await store.enqueue("k1", "telegram", 1, 1, {"where": {}}, status="running")
        b, _ = await store.enqueue("k2", "telegram", 1, 1, {"where": {}}, status="running")
        c, _ = await store.enqueue("k3", "telegram", 1, 1, {"where": {}}, status="running")
        # What a killed process leaves: a's id written to the journal but not yet to SQLite, b between intent
        # and answer, c never started sending; and half a line from a write cut short.
        journal.intent(a.id)
        journal.sent(a.id, "1042")
        journal.intent(b.id)
        journal.close()
        with open(journal.path, "a") as f:
            f.write("= 9")
        assert await store.recover() == 3
        assert (await store.get_id(a.id)).reply_ref == "1042"
        assert (await store.get_id(b.id)).reply_ref is None
        assert store.uncertain_replies == 1  # b may have sent a message nobody recorded
        assert not journal.path.exists()
        assert (await store.get_id(c.id)).status == "pending"
    finally:
        await db.close()


async def test_set_reply_ref_writes_the_journal_first_and_never_overwrites_a_stored_id(tmp_path: Path):
    db, store, journal = await _store(tmp_path)
    try:
        a, _ = await store.enqueue("k1", "telegram", 1, 1, {"where": {}})
        store.note_reply_intent(a.id)
        await store.set_reply_ref(a.id, "77")
        assert journal.replay().refs == {a.id: "77"} and not journal.replay().uncertain
        journal.sent(a.id, "78")  # a stale line must not replace the id the job already has
        await store.recover()
        assert (await store.get_id(a.id)).reply_ref == "77"
    finally:
        await db.close()


async def test_compaction_while_running_keeps_lines_written_after_it(tmp_path: Path):
    db, store, journal = await _store(tmp_path)
    try:
        a, _ = await store.enqueue("k1", "telegram", 1, 1, {"where": {}}, status="running")
        b, _ = await store.enqueue("k2", "telegram", 1, 1, {"where": {}}, status="running")
        journal.intent(a.id)
        journal.sent(a.id, "5")
        await store.compact_journal()
        assert not journal.rotated.exists() and not journal.path.exists()
        journal.intent(b.id)
        journal.sent(b.id, "6")  # after compaction: a new file
        await db._conn.execute("UPDATE jobs SET reply_ref = NULL")  # as if only the journal had it
        await db._conn.commit()
        await store.recover()
        assert (await store.get_id(a.id)).reply_ref is None  # compacted: its line is gone (it was in SQLite)
        assert (await store.get_id(b.id)).reply_ref == "6"
    finally:
        await db.close()
