"""SQLite (aiosqlite) storage: fact-check metadata, every check's Result, ingestion runs.

One connection does all the work. aiosqlite runs it on its own thread, so statements never block
the event loop, and a single connection is the single writer: write transactions are serialised
by `_write_lock` so two coroutines can never interleave half-finished transactions.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import aiosqlite
import numpy as np

from schema.models import FactCheck, Result, Verdict, utcnow

# Each entry is one schema version. Never edit a shipped migration: append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE factchecks (
        id TEXT PRIMARY KEY,
        claim TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        url TEXT NOT NULL DEFAULT '',
        publisher TEXT NOT NULL DEFAULT '',
        published_at TEXT,
        rating_text TEXT NOT NULL DEFAULT '',
        verdict TEXT NOT NULL,
        language TEXT NOT NULL DEFAULT 'en',
        claimant TEXT NOT NULL DEFAULT '',
        appearances TEXT NOT NULL DEFAULT '[]',
        source_id TEXT NOT NULL DEFAULT '',
        run_id INTEGER,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX factchecks_publisher ON factchecks(publisher);
    CREATE INDEX factchecks_verdict ON factchecks(verdict);
    -- Every URL that identifies a fact-check (its article and where the claim appeared), normalised,
    -- so a forwarded link can be matched exactly before any similarity search.
    CREATE TABLE factcheck_urls (
        url TEXT NOT NULL,
        factcheck_id TEXT NOT NULL REFERENCES factchecks(id) ON DELETE CASCADE,
        PRIMARY KEY (url, factcheck_id)
    );
    CREATE TABLE checks (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        text TEXT NOT NULL,
        verdict TEXT NOT NULL,
        mode TEXT NOT NULL,
        result TEXT NOT NULL
    );
    CREATE INDEX checks_created ON checks(created_at);
    CREATE TABLE ingest_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL DEFAULT 'running',
        added INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        errors TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE kv (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 2: trusted/untrusted source domains (scope "global" or "<platform>:<chat id>") and the audit trail
    # of admin actions (storage/domains.py).
    """
    CREATE TABLE domain_rules (
        scope TEXT NOT NULL,
        domain TEXT NOT NULL,
        rule TEXT NOT NULL CHECK (rule IN ('allow', 'deny')),
        added_by TEXT,
        added_at TEXT,
        PRIMARY KEY (scope, domain)
    );
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT,
        platform TEXT,
        chat_id TEXT,
        user_id TEXT,
        action TEXT,
        detail TEXT
    );
    CREATE INDEX audit_at ON audit(at);
    """,
    # 3: 👍/👎 on verdict cards (one vote per user and platform per check; a later vote replaces the
    # earlier one) and the queue of checks a person should review (storage/feedback.py).
    """
    CREATE TABLE feedback (
        check_id TEXT NOT NULL,
        platform TEXT NOT NULL,
        user_id TEXT NOT NULL,
        vote INTEGER NOT NULL CHECK (vote IN (-1, 1)),
        at TEXT,
        PRIMARY KEY (check_id, platform, user_id)
    );
    CREATE TABLE review_queue (
        check_id TEXT PRIMARY KEY,
        reason TEXT,
        added_at TEXT,
        resolved_at TEXT
    );
    """,
    # 4: the durable job queue and idempotency keys (storage/jobs.py). `held` = persisted but not yet
    # claimable (its "you are #N in line" notice is being sent); `refused` = answered with a refusal
    # (rate limit, queue full) and kept only so a re-delivery is recognised. `claim_seq` orders claims
    # for round-robin fairness across chats; `reply_ref` is the platform id of the reply message
    # already sent, so a resumed job edits it instead of sending a second one.
    """
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        idem_key TEXT NOT NULL UNIQUE,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        user_id TEXT,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('held', 'pending', 'running', 'done', 'failed', 'refused')),
        attempts INTEGER NOT NULL DEFAULT 0,
        claim_seq INTEGER,
        reply_ref TEXT,
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        check_id TEXT,
        error TEXT
    );
    CREATE INDEX jobs_status_chat ON jobs(status, platform, chat_id, id);
    CREATE INDEX jobs_chat_turn ON jobs(platform, chat_id, claim_seq);
    CREATE INDEX jobs_claim_seq ON jobs(claim_seq);
    """,
    # 5: tracked chats and their stored messages, for "also reported by" (storage/messages.py); chat
    # settings (/track, /auto) and the repeat counter of checked texts (bot/repeats.py).
    """
    CREATE TABLE tracked_chats (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'group',
        title TEXT NOT NULL DEFAULT '',
        handle TEXT NOT NULL DEFAULT '',
        tracking INTEGER NOT NULL DEFAULT 0,
        auto INTEGER NOT NULL DEFAULT 0,
        enabled_by TEXT,
        enabled_at TEXT,
        updated_by TEXT,
        updated_at TEXT,
        PRIMARY KEY (platform, chat_id)
    );
    CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        author TEXT NOT NULL DEFAULT '',
        permalink TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        language TEXT NOT NULL DEFAULT '',
        at TEXT NOT NULL,
        ts REAL NOT NULL,
        story_id TEXT
    );
    CREATE INDEX messages_ts ON messages(ts);
    CREATE INDEX messages_chat ON messages(platform, chat_id);
    CREATE INDEX messages_story ON messages(story_id);
    CREATE TABLE check_repeats (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        text_hash TEXT NOT NULL,
        scope TEXT NOT NULL,
        check_id TEXT NOT NULL,
        platform TEXT,
        chat_id TEXT,
        ts REAL NOT NULL
    );
    CREATE INDEX check_repeats_hash ON check_repeats(text_hash, scope, ts);
    -- story merges (union-find): messages keep the story id they were stored with; this maps old ids on
    CREATE TABLE story_aliases (
        story_id TEXT PRIMARY KEY,
        into_id TEXT NOT NULL
    );
    """,
    # 6: provider response cache (storage/cache.py) and LLM spending (core/llm/budget.py).
    """
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        expires_at REAL NOT NULL  -- epoch seconds (rows outlive the process, so not monotonic)
    );
    CREATE INDEX cache_expires ON cache(expires_at);
    CREATE TABLE llm_usage (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,  -- UTC ISO 8601, so day and month totals are prefix ranges
        check_id TEXT,
        name TEXT NOT NULL DEFAULT '',  -- the structured-output name (which stage spent it)
        model TEXT NOT NULL DEFAULT '',
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        usd REAL NOT NULL,
        ok INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX llm_usage_at ON llm_usage(at);
    CREATE INDEX llm_usage_check ON llm_usage(check_id);
    """,
    # 7: who was told that a claim they asked about has been reviewed (bot/notify.py): one row per
    # asker (platform, chat, checked message), so each asker is notified once.
    """
    CREATE TABLE review_notices (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        target TEXT NOT NULL,
        check_id TEXT NOT NULL,  -- the check the admin reviewed
        job_id INTEGER,
        sent_at TEXT NOT NULL,
        PRIMARY KEY (platform, chat_id, target)
    );
    """,
    # 8: who asked about a claim, found by index instead of reading every finished job's payload
    # (storage/jobs.py `askers`): the fingerprint of the checked text (bot/repeats.py) and the check
    # a job produced. Jobs from before this migration have no fingerprint and are read the old way
    # until they are pruned (a week after they finished).
    """
    ALTER TABLE jobs ADD COLUMN text_hash TEXT;
    CREATE INDEX jobs_text_hash ON jobs(text_hash, status);
    CREATE INDEX jobs_check ON jobs(check_id, status);
    """,
    # 9: digests and alerts (storage/digests.py): each chat's digest schedule and alert threshold, and
    # the stories already alerted in a chat, so a restart never repeats an alert.
    """
    CREATE TABLE digest_schedules (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        period_s REAL NOT NULL,  -- the window and the period: 86400 for daily, N h otherwise
        daily_minute INTEGER,  -- daily digests: minutes after 00:00 UTC; NULL for "every N h"
        top_k INTEGER NOT NULL,
        lang TEXT NOT NULL DEFAULT '',
        thread_id TEXT,
        next_at REAL NOT NULL,  -- epoch seconds of the next digest
        last_at REAL,
        updated_by TEXT,
        updated_at TEXT,
        PRIMARY KEY (platform, chat_id)
    );
    CREATE TABLE alert_settings (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        min_chats INTEGER NOT NULL,
        lang TEXT NOT NULL DEFAULT '',
        thread_id TEXT,
        updated_by TEXT,
        updated_at TEXT,
        PRIMARY KEY (platform, chat_id)
    );
    CREATE TABLE story_alerts (
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        story_id TEXT NOT NULL,
        factcheck_id TEXT NOT NULL,
        chats INTEGER NOT NULL,
        sent_at REAL NOT NULL,
        PRIMARY KEY (platform, chat_id, story_id)
    );
    -- the digest's window read (storage/digests.py) from the index alone: 100,000 rows in 0.21 s instead
    -- of 0.42 s through messages_ts and the table's pages (400-character texts)
    CREATE INDEX messages_window ON messages(ts, platform, chat_id, story_id, id);
    """,
    """
    -- a fact-check's token states (core/encoders/token_align.py): float16 (tokens, 64), row-major, ~4.7 KB. Read for
    -- a Cyrillic message's candidates by id: 100 in 1.4 ms, where the same matrices read back from Qdrant
    -- Edge as a multivector took 15.9 ms (docs/decisions/2026-11-24-matching-measurements.md, "Token alignment").
    CREATE TABLE factcheck_states (
        id TEXT PRIMARY KEY,
        model TEXT NOT NULL,  -- the encoder's states_model: states of another model are not read
        states BLOB NOT NULL
    );
    """,
    # 11: whose data a row is, for `/forget me` and `tipline forget --user` (storage/personal.py), as a
    # pseudonym (`Database.pseudonym`: a keyed hash of "platform:user id"), never the id itself: who asked
    # for a check, who wrote a tracked message. Feedback's user_id holds the pseudonym from now on too.
    """
    ALTER TABLE checks ADD COLUMN asker TEXT;
    CREATE INDEX checks_asker ON checks(asker);
    ALTER TABLE messages ADD COLUMN sender TEXT;
    CREATE INDEX messages_sender ON messages(sender);
    CREATE INDEX feedback_user ON feedback(platform, user_id);
    CREATE INDEX feedback_at ON feedback(at);
    CREATE INDEX jobs_user ON jobs(platform, user_id);
    CREATE INDEX check_repeats_check ON check_repeats(check_id);
    """,
    # 12: watched public Telegram channels and the posts read from their web preview (storage/watched.py,
    # bot/watch.py); IF NOT EXISTS: a development data dir may have made them on first use before.
    """
    CREATE TABLE IF NOT EXISTS watched_channels (
        name TEXT PRIMARY KEY,  -- the channel's public name, lowercase, without the @
        title TEXT NOT NULL DEFAULT '',
        added_by TEXT,
        added_at REAL NOT NULL,
        removed INTEGER NOT NULL DEFAULT 0,  -- removed by `tipline watch remove` while another process ran
        last_post_id INTEGER NOT NULL DEFAULT 0,
        last_post_at REAL,
        last_poll_at REAL,
        last_ok_at REAL,
        status TEXT NOT NULL DEFAULT 'new',
        detail TEXT NOT NULL DEFAULT '',
        retry_at REAL,  -- not read before this (HTTP 429 Retry-After)
        posts INTEGER NOT NULL DEFAULT 0  -- posts stored since it was added
    );
    CREATE TABLE IF NOT EXISTS watched_posts (
        key TEXT PRIMARY KEY,  -- the tracked message's key, "telegram:@<name>:<id>"
        channel TEXT NOT NULL,
        post_id INTEGER NOT NULL,
        ts REAL NOT NULL,
        views INTEGER,
        forwarded_from TEXT NOT NULL DEFAULT '',
        forwarded_link TEXT NOT NULL DEFAULT '',
        origin TEXT NOT NULL DEFAULT '',  -- "<channel>/<id>" of the post it is or repeats: a forward chain once
        stored INTEGER NOT NULL DEFAULT 1  -- 0: not a tracked message (a repeat, a service post, no text, too old)
    );
    CREATE INDEX IF NOT EXISTS watched_posts_channel ON watched_posts(channel, post_id);
    CREATE INDEX IF NOT EXISTS watched_posts_origin ON watched_posts(origin);
    CREATE INDEX IF NOT EXISTS watched_posts_ts ON watched_posts(ts);
    """,
    # 13: perceptual hashes of photos (core/corroboration/photo_hash.py, storage/photos.py): a tracked message's photo (a
    # watched post's), a checked image's, and the photos an admin's /review gave a verdict.
    """
    ALTER TABLE messages ADD COLUMN photo_hash TEXT;  -- 64 hex digits
    CREATE INDEX messages_photo ON messages(ts) WHERE photo_hash IS NOT NULL;
    ALTER TABLE checks ADD COLUMN photo_hash TEXT;
    CREATE TABLE reviewed_photos (
        check_id TEXT PRIMARY KEY,  -- the reviewed check whose image this was
        hash TEXT NOT NULL,  -- the image's pHash, 64 hex digits
        factcheck TEXT NOT NULL,  -- the fact-check the review recorded (JSON), answered to the photo's next forward
        reviewed_at REAL NOT NULL
    );
    """,
    # 14: the account reader of watched channels (core/watch/account_reader.py): which reader a channel is read by,
    # and each public name resolved through the account, kept so it is resolved once (its id and access hash).
    """
    ALTER TABLE watched_channels ADD COLUMN reader TEXT NOT NULL DEFAULT 'preview';  -- 'preview' | 'account'
    CREATE TABLE telegram_peers (
        name TEXT PRIMARY KEY,  -- the public name, lowercase, without the @
        kind TEXT NOT NULL,  -- 'channel', 'not_channel' (a user, bot or group), 'not_found'
        peer_id INTEGER NOT NULL DEFAULT 0,
        access_hash INTEGER NOT NULL DEFAULT 0,
        title TEXT NOT NULL DEFAULT '',
        restricted TEXT NOT NULL DEFAULT '',  -- Telegram's restriction reason, when it gives one
        resolved_at REAL NOT NULL
    );
    """,
    # 15: news outlets' RSS/Atom feeds watched like channels, and the items read from them
    # (storage/watched_feeds.py, bot/watch_feeds.py).
    """
    CREATE TABLE IF NOT EXISTS watched_feeds (
        url TEXT PRIMARY KEY,  -- the feed's canonical address (core/watch/feed_reader.py feed_url)
        title TEXT NOT NULL DEFAULT '',
        added_by TEXT,
        added_at REAL NOT NULL,
        removed INTEGER NOT NULL DEFAULT 0,  -- removed by `tipline watch remove` while another process ran
        etag TEXT NOT NULL DEFAULT '',  -- the last 200's validators, sent back as If-None-Match / If-Modified-Since
        last_modified TEXT NOT NULL DEFAULT '',
        last_item_at REAL,
        last_poll_at REAL,
        last_ok_at REAL,
        status TEXT NOT NULL DEFAULT 'new',
        detail TEXT NOT NULL DEFAULT '',
        retry_at REAL,  -- not read before this (HTTP 429 Retry-After)
        items INTEGER NOT NULL DEFAULT 0,  -- items stored since it was added
        unchanged INTEGER NOT NULL DEFAULT 0  -- reads answered 304 Not Modified
    );
    CREATE TABLE IF NOT EXISTS watched_feed_items (
        key TEXT PRIMARY KEY,  -- the tracked message's key, "feed:<feed address without scheme>:<item id>"
        feed TEXT NOT NULL,
        ts REAL NOT NULL,
        stored INTEGER NOT NULL DEFAULT 1  -- 0: not a tracked message (older than the retention period)
    );
    CREATE INDEX IF NOT EXISTS watched_feed_items_feed ON watched_feed_items(feed);
    CREATE INDEX IF NOT EXISTS watched_feed_items_ts ON watched_feed_items(ts);
    """,
    # 16: the fact-checkers' feeds an operator added (storage/factcheck_feeds.py, bot/feeds.py) and the items
    # already decided, so an article page is read once; IF NOT EXISTS, as 12.
    """
    CREATE TABLE IF NOT EXISTS factcheck_feeds (
        url TEXT PRIMARY KEY,
        name TEXT NOT NULL DEFAULT '',  -- its name in core/data/recommended_feeds.json, '' for another feed
        added_by TEXT,
        added_at REAL NOT NULL,
        etag TEXT NOT NULL DEFAULT '',  -- the last complete read's validators, sent back (conditional GET)
        last_modified TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'new',
        detail TEXT NOT NULL DEFAULT '',
        last_read_at REAL,
        last_ok_at REAL,
        retry_at REAL,  -- not read before this (HTTP 429 Retry-After)
        added INTEGER NOT NULL DEFAULT 0,  -- fact-checks it brought, over its reads
        skipped INTEGER NOT NULL DEFAULT 0  -- items left out (no ClaimReview, no verdict in the title)
    );
    CREATE TABLE IF NOT EXISTS factcheck_feed_items (
        feed TEXT NOT NULL,
        key TEXT NOT NULL,  -- the item's guid / Atom id, else its link
        outcome TEXT NOT NULL,  -- claimreview | title | skipped | pending
        attempts INTEGER NOT NULL DEFAULT 0,  -- page reads that failed for a passing reason
        seen_at REAL NOT NULL,
        PRIMARY KEY (feed, key)
    );
    CREATE INDEX IF NOT EXISTS factcheck_feed_items_seen ON factcheck_feed_items(seen_at);
    """,
    # A fact-check's claim read by e5 as a query, as a message is (core/matching/same_claim.py compares the two):
    # float16 (dim,), computed at ingest, or at its first match for a fact-check stored before.
    """
    CREATE TABLE IF NOT EXISTS factcheck_claim_queries (
        id TEXT PRIMARY KEY,
        model TEXT NOT NULL,  -- the encoder's model: another model's vectors are not read
        vector BLOB NOT NULL
    );
    """,
    # The same read's token states (core/encoders/token_align.py), float16 (tokens, dim): the decision aligns the
    # message's tokens with the claim's as with the passage's.
    """
    CREATE TABLE IF NOT EXISTS factcheck_claim_states (
        id TEXT PRIMARY KEY,
        model TEXT NOT NULL,  -- the encoder's states_model: states of another model are not read
        states BLOB NOT NULL
    );
    """,
)

# A pseudonym: PSEUDONYM_PREFIX and 32 hex digits (128 bits of an HMAC-SHA256).
PSEUDONYM_PREFIX = "p:"
_PSEUDONYM_KEY = "pseudonym_key"  # kv: the data dir's own HMAC key, made on first open
_PSEUDONYMS_DONE = "pseudonyms_v1"  # kv: feedback ids and older checks' askers were turned into pseudonyms


def read_only_rows(path: Path, sql: str) -> list[tuple]:
    """`sql`'s rows from a data dir's database opened read-only, for commands that run beside a bot that may
    be using it (`tipline doctor`, `... list`); [] when there is no database or no such table yet."""
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return []
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error:  # no such table: an older data dir, or nothing added yet
        return []
    finally:
        conn.close()


def hash_to_sql(h: int) -> str:
    """A perceptual hash (core/corroboration/photo_hash.py, 256 bits) as the 64 hex digits SQLite keeps."""
    return f"{h:064x}"


def hash_from_sql(v: str) -> int:
    return int(v, 16)


class StorageError(RuntimeError):
    """The database could not be opened or written; the message is meant for the user."""


@dataclass(frozen=True)
class IngestRun:
    id: int
    source: str
    status: str
    added: int
    skipped: int
    errors: list[str]


def normalize_url(url: str) -> str:
    """The form used for exact URL matching: no scheme, no www., no fragment, no trailing slash."""
    u = url.strip().lower()
    for prefix in ("https://", "http://"):
        if u.startswith(prefix):
            u = u[len(prefix):]
    if u.startswith("www."):
        u = u[4:]
    u = u.split("#", 1)[0]
    return u.rstrip("/")


def _row_to_factcheck(row: sqlite3.Row) -> FactCheck:
    return FactCheck(
        claim=row["claim"], title=row["title"], url=row["url"], publisher=row["publisher"],
        published_at=date.fromisoformat(row["published_at"]) if row["published_at"] else None,
        rating_text=row["rating_text"], verdict=Verdict(row["verdict"]), language=row["language"],
        claimant=row["claimant"], appearances=json.loads(row["appearances"]), source_id=row["source_id"],
    )


class Database:
    def __init__(self, conn: aiosqlite.Connection):
        self._conn = conn
        self._write_lock = asyncio.Lock()
        self._pseudonym_key = b""  # set by open()

    @classmethod
    async def open(cls, path: Path) -> "Database":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(path, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the database at {path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        db = cls(conn)
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA foreign_keys=ON")
            await conn.execute("PRAGMA synchronous=NORMAL")
            # Deleted rows are overwritten with zeros in the database file, not left in free space: a check,
            # vote or message that expired or was forgotten is gone from the file once `scrub()` has moved
            # the write-ahead log in (storage/personal.py). Measured cost: none visible in `bench burst`.
            await conn.execute("PRAGMA secure_delete=ON")
            await db._migrate()
            await db._open_pseudonyms()
        except sqlite3.Error as exc:
            await conn.close()
            raise StorageError(f"cannot use the database at {path}: {exc}") from exc
        except BaseException:
            await conn.close()
            raise
        return db

    async def close(self) -> None:
        await self._conn.close()

    async def _migrate(self) -> None:
        version = await self.count("PRAGMA user_version")
        if version > len(MIGRATIONS):
            raise StorageError(
                f"the database schema (version {version}) is newer than this tipline understands "
                f"({len(MIGRATIONS)}); upgrade tipline"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            # executescript commits first, so wrap the script and the version bump in one transaction.
            await self._conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={number};\nCOMMIT;")

    # --- pseudonyms ----------------------------------------------------------------------------

    async def _open_pseudonyms(self) -> None:
        """Load (or make) the data dir's pseudonym key; once, turn what older versions stored under a user id
        (feedback) into pseudonyms, and give checks made by the queue's jobs still kept their asker."""
        key = await self.get_kv(_PSEUDONYM_KEY)
        if key is None:
            key = secrets.token_hex(32)
            async with self.transaction() as conn:
                await conn.execute("INSERT OR IGNORE INTO kv (key, value) VALUES (?, ?)", (_PSEUDONYM_KEY, key))
            key = await self.get_kv(_PSEUDONYM_KEY) or key
        self._pseudonym_key = bytes.fromhex(key)
        if await self.get_kv(_PSEUDONYMS_DONE) is not None:
            return
        votes = await self.fetchall("SELECT rowid, platform, user_id FROM feedback WHERE user_id NOT LIKE ?",
                                    (PSEUDONYM_PREFIX + "%",))
        askers = await self.fetchall(
            "SELECT j.platform, j.user_id, j.check_id FROM jobs j JOIN checks c ON c.id = j.check_id "
            "WHERE c.asker IS NULL AND j.user_id IS NOT NULL AND j.status = 'done' ORDER BY j.id DESC")
        async with self.transaction() as conn:
            await conn.executemany("UPDATE OR REPLACE feedback SET user_id = ? WHERE rowid = ?",
                                   [(self.pseudonym(r[1], r[2]), r[0]) for r in votes])
            # The first job that made a check asked for it (the latest row written wins, so oldest last).
            await conn.executemany("UPDATE checks SET asker = ? WHERE id = ?",
                                   [(self.pseudonym(r[0], r[1]), r[2]) for r in askers])
            await conn.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, '1')", (_PSEUDONYMS_DONE,))
        if votes:
            await self.scrub()  # the ids the rows held before

    def pseudonym(self, platform: str, user_id: object) -> str:
        """Who a row belongs to without saying who: a keyed hash (HMAC-SHA256, the data dir's own random key
        in `kv`) of "platform:user id". Stable within a data dir, so `/forget me` finds a person's rows; not
        reversible without the key, which lives in the same database: a pseudonym, not anonymity."""
        digest = hmac.new(self._pseudonym_key, f"{platform}:{user_id}".encode(), hashlib.sha256).hexdigest()
        return PSEUDONYM_PREFIX + digest[:32]

    async def scrub(self) -> None:
        """Leave no copy of deleted rows in the data dir: move the write-ahead log into the database and
        truncate it to nothing (its older frames still hold the pages as they were before a delete). With
        `secure_delete` on, the database file itself keeps no deleted content. Runs under the write lock, so
        no transaction is open; a read racing it can leave the log partly moved in, so it is tried again."""
        async with self._write_lock:
            for _ in range(20):
                row = await self.fetchone("PRAGMA wal_checkpoint(TRUNCATE)")
                if row is not None and int(row[0]) == 0 and int(row[1]) <= 0:
                    return
                await asyncio.sleep(0.05)
        raise StorageError("could not empty the database's write-ahead log (another process is reading it?)")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._write_lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.rollback()
                raise
            else:
                await self._conn.commit()

    async def fetchone(self, sql: str, args: Sequence[object] = ()) -> sqlite3.Row | None:
        """One row of a read (for the storage modules' named queries)."""
        return await (await self._conn.execute(sql, args)).fetchone()

    async def count(self, sql: str, args: Sequence[object] = ()) -> int:
        """The first column of the first row of a `SELECT COUNT(*)`-like read, 0 for no row."""
        row = await self.fetchone(sql, args)
        return int(row[0]) if row is not None and row[0] is not None else 0

    async def fetchall(self, sql: str, args: Sequence[object] = ()) -> list[sqlite3.Row]:
        return list(await (await self._conn.execute(sql, args)).fetchall())

    @property
    def schema_version(self) -> int:
        return len(MIGRATIONS)

    # --- fact-checks -------------------------------------------------------------------------

    async def upsert_factchecks(self, factchecks: Sequence[FactCheck], run_id: int | None = None) -> int:
        """Insert or replace fact-checks (and their URLs) in one transaction; returns how many were new."""
        now = utcnow().isoformat()
        async with self.transaction() as conn:
            ids = [fc.id for fc in factchecks]
            existing: set[str] = set()
            for chunk in _chunks(ids, 500):
                cur = await conn.execute(
                    f"SELECT id FROM factchecks WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                existing.update(r[0] for r in await cur.fetchall())
            await conn.executemany(
                """INSERT INTO factchecks (id, claim, title, url, publisher, published_at, rating_text, verdict,
                       language, claimant, appearances, source_id, run_id, updated_at)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                   ON CONFLICT(id) DO UPDATE SET claim=excluded.claim, title=excluded.title, url=excluded.url,
                       publisher=excluded.publisher, published_at=excluded.published_at,
                       rating_text=excluded.rating_text, verdict=excluded.verdict, language=excluded.language,
                       claimant=excluded.claimant, appearances=excluded.appearances,
                       source_id=excluded.source_id, run_id=excluded.run_id, updated_at=excluded.updated_at""",
                [(fc.id, fc.claim, fc.title, fc.url, fc.publisher,
                  fc.published_at.isoformat() if fc.published_at else None, fc.rating_text, fc.verdict.value,
                  fc.language, fc.claimant, json.dumps(fc.appearances), fc.source_id, run_id, now)
                 for fc in factchecks],
            )
            await conn.executemany(
                "INSERT OR IGNORE INTO factcheck_urls (url, factcheck_id) VALUES (?, ?)",
                [(normalize_url(u), fc.id) for fc in factchecks for u in [fc.url, *fc.appearances] if u.strip()],
            )
        return len(set(ids) - existing)

    async def all_factchecks(self) -> list[FactCheck]:
        cur = await self._conn.execute("SELECT * FROM factchecks ORDER BY rowid")
        return [_row_to_factcheck(r) for r in await cur.fetchall()]

    async def count_factchecks(self) -> int:
        return await self.count("SELECT COUNT(*) FROM factchecks")

    async def put_factcheck_states(self, model: str, states: dict[str, np.ndarray]) -> None:
        """Store fact-checks' token states (float16 (tokens, dim)), replacing what they had."""
        await self._put_float16("factcheck_states", "states", model, states)

    async def factcheck_states(self, ids: Sequence[str], model: str, dim: int) -> dict[str, np.ndarray]:
        """The token states of those of `ids` that have them from `model`."""
        return await self._float16("factcheck_states", "states", ids, model, dim)

    async def put_claim_queries(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        """Store fact-checks' claim query vectors (float16), replacing what they had."""
        await self._put_float16("factcheck_claim_queries", "vector", model, vectors)

    async def claim_queries(self, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """The claim query vectors of those of `ids` that have them from `model`."""
        return await self._float16("factcheck_claim_queries", "vector", ids, model)

    async def put_claim_states(self, model: str, states: dict[str, np.ndarray]) -> None:
        """Token states of fact-checks' claims read as queries, `model` the encoder's states_model."""
        await self._put_float16("factcheck_claim_states", "states", model, states)

    async def claim_states(self, ids: Sequence[str], model: str, dim: int) -> dict[str, np.ndarray]:
        """The claim token states of those of `ids` that have them from `model`."""
        return await self._float16("factcheck_claim_states", "states", ids, model, dim)

    async def _put_float16(self, table: str, column: str, model: str, arrays: dict[str, np.ndarray]) -> None:
        """Per fact-check arrays of one model's (a table keyed by id, with `model` and a float16 blob)."""
        async with self.transaction() as conn:
            await conn.executemany(
                f"INSERT OR REPLACE INTO {table} (id, model, {column}) VALUES (?, ?, ?)",
                [(i, model, np.ascontiguousarray(a, dtype=np.float16).tobytes()) for i, a in arrays.items()])

    async def _float16(self, table: str, column: str, ids: Sequence[str], model: str,
                       dim: int | None = None) -> dict[str, np.ndarray]:
        """Those of `ids` that `_put_float16` stored from `model`: flat, or rows of `dim` (token states)."""
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(ids), 500):
            cur = await self._conn.execute(
                f"SELECT id, {column} FROM {table} WHERE model = ? AND id IN ({','.join('?' * len(chunk))})",
                [model, *chunk])
            for row in await cur.fetchall():
                flat = np.frombuffer(row[1], dtype=np.float16)
                out[row[0]] = flat if dim is None else flat.reshape(-1, dim)
        return out

    async def get_factchecks(self, ids: Iterable[str]) -> dict[str, FactCheck]:
        ids = list(ids)
        out: dict[str, FactCheck] = {}
        for chunk in _chunks(ids, 500):
            cur = await self._conn.execute(
                f"SELECT * FROM factchecks WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            for row in await cur.fetchall():
                out[row["id"]] = _row_to_factcheck(row)
        return out

    async def factchecks_by_urls(self, urls: Iterable[str]) -> list[FactCheck]:
        keys = sorted({normalize_url(u) for u in urls if u.strip()})
        if not keys:
            return []
        cur = await self._conn.execute(
            f"""SELECT DISTINCT f.* FROM factcheck_urls u JOIN factchecks f ON f.id = u.factcheck_id
                WHERE u.url IN ({','.join('?' * len(keys))})""", keys)
        return [_row_to_factcheck(r) for r in await cur.fetchall()]

    # --- key/value (small state such as corpus term statistics) ------------------------------

    async def get_kv(self, key: str) -> str | None:
        row = await (await self._conn.execute("SELECT value FROM kv WHERE key = ?", (key,))).fetchone()
        return row[0] if row else None

    async def set_kv(self, key: str, value: str) -> None:
        async with self.transaction() as conn:
            await conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) "
                               "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    # --- checks ------------------------------------------------------------------------------

    async def save_check(self, result: Result, asker: str | None = None, photo_hash: int | None = None) -> None:
        """Store a check; `asker`: the pseudonym of who asked for it (None: nobody known, e.g. the CLI);
        `photo_hash`: the checked image's perceptual hash (core/corroboration/photo_hash.py)."""
        async with self.transaction() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO checks (id, created_at, text, verdict, mode, result, asker, photo_hash) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (result.id, result.created_at.isoformat(), result.text, result.verdict.value, result.mode,
                 result.model_dump_json(), asker, None if photo_hash is None else hash_to_sql(photo_hash)),
            )

    async def get_check(self, check_id: str) -> Result | None:
        row = await (await self._conn.execute("SELECT result FROM checks WHERE id = ?", (check_id,))).fetchone()
        return Result.model_validate_json(row[0]) if row else None

    # --- ingestion runs ----------------------------------------------------------------------

    async def start_ingest_run(self, source: str) -> int:
        async with self.transaction() as conn:
            cur = await conn.execute("INSERT INTO ingest_runs (source, started_at) VALUES (?, ?)",
                                     (source, utcnow().isoformat()))
            return int(cur.lastrowid or 0)  # always set after an INSERT

    async def finish_ingest_run(self, run_id: int, *, status: str, added: int, skipped: int,
                                errors: Sequence[str]) -> None:
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE ingest_runs SET finished_at=?, status=?, added=?, skipped=?, errors=? WHERE id=?",
                (utcnow().isoformat(), status, added, skipped, json.dumps(list(errors)[:1000]), run_id),
            )

    async def ingest_runs(self) -> list[IngestRun]:
        cur = await self._conn.execute("SELECT * FROM ingest_runs ORDER BY id")
        return [IngestRun(r["id"], r["source"], r["status"], r["added"], r["skipped"], json.loads(r["errors"]))
                for r in await cur.fetchall()]


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
