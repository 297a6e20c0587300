"""Retention and `/forget me` (bot/personal.py, storage/personal.py): after a person is forgotten, no file of
the data dir holds their text (SQLite's database and write-ahead log, Qdrant Edge's segments and logs: every
file is read as bytes), and another person's data stays.

End to end: the real engine, SQLite and Qdrant Edge, the durable queue, real PTB and bolt against the fake
Telegram and Slack servers.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.main import main
from adapters.slack import SlackBot, SlackConfig
from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.check_service import CheckService
from bot.chat_app import ChatApp
from bot.chat_settings import CheckExtras
from bot.evidence import callback_data
from bot.personal import Privacy
from bot.queue import JobQueue
from schema.models import Result, Verdict, new_check_id
from storage.feedback import FeedbackStore
from storage.jobs import JobStore
from storage.reply_journal import ReplyJournal
from storage.sqlite import Database
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.slack_api import TEAM_ID, FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.test_review_notify import person, tg_card
from tests.test_slack import SECRET, post

X, Y, ADMIN = 6001, 6002, 6099
GROUP = {"id": -1006006, "type": "supergroup", "title": "Town talk"}
# Made-up words no seed fact-check, model file or test fixture contains. A tracked message's entities go
# into Qdrant lower-cased, so the data dir is searched for both spellings.
X_MARKER = "Zorblaxquintvale"
Y_MARKER = "Pemberwickstone"


def holding(data_dir: Path, marker: str) -> list[str]:
    """Every file under `data_dir` whose bytes contain `marker` (UTF-8), as written or lower-cased."""
    needles = {marker.encode(), marker.lower().encode()}
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if any(n in data for n in needles):
                found.append(str(path.relative_to(data_dir)))
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def f_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("forget") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def tg():
    server = await FakeTelegram().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def sl():
    server = await FakeSlack().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def bots(f_app, tg: FakeTelegram, sl: FakeSlack):
    """Both adapters on one durable queue with tracking, as `tipline run` wires them."""
    journal = ReplyJournal(f_app.settings.data_dir / "reply-refs.journal")
    queue = JobQueue(JobStore(f_app.db, journal), CheckService(f_app.engine, progress_interval=0.0, extras=CheckExtras(f_app.db, None, f_app.corroborator)),
                     workers=2)
    chat = ChatApp(queue, admins=(str(ADMIN),), add_factchecks=f_app.kb.add,
                   corroborator=f_app.corroborator)
    tb = TelegramBot(TelegramConfig(token=tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url,
                                    poll_timeout=1.0), chat)
    sb = SlackBot(SlackConfig(bot_token=sl.token, signing_secret=SECRET, api_url=sl.base_url, port=0), chat)
    await tb.start()
    await sb.start()
    await queue.start()
    yield tb, sb, chat
    await queue.stop()
    await tb.stop()
    await sb.stop()


async def eventually(check: Any, timeout: float = 30.0) -> Any:
    async def loop() -> Any:
        while not (found := await check()):
            await asyncio.sleep(0.05)
        return found
    return await asyncio.wait_for(loop(), timeout)


async def check_ids(db: Database, marker: str) -> list[str]:
    rows = await db.fetchall("SELECT id FROM checks WHERE text LIKE ?", (f"%{marker}%",))
    return [str(r[0]) for r in rows]


async def askers(db: Database, check_id: str) -> list[str]:
    return [str(r[0]) for r in await db.fetchall("SELECT asker FROM checks WHERE id = ?", (check_id,))]


pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_forget_me_on_telegram_leaves_no_byte_of_the_text_in_the_data_dir(f_app, tg, bots):
    db, data_dir, store = f_app.db, f_app.settings.data_dir, f_app.corroborator.store
    # Each asks for a check in a private chat; each votes on both cards.
    x_msg = await tg.send_user_message(f"The mayor {X_MARKER} of Springfield secretly banned bicycles on Sundays",
                                       chat=FakeTelegram.private_chat(X), sender=person(X))
    y_msg = await tg.send_user_message(f"The mayor {Y_MARKER} of Springfield secretly banned kites on Mondays",
                                       chat=FakeTelegram.private_chat(Y), sender=person(Y))
    await tg_card(tg, x_msg)
    await tg_card(tg, y_msg)
    [x_check] = await check_ids(db, X_MARKER)
    [y_check] = await check_ids(db, Y_MARKER)
    for voter in (X, Y):
        for check in (x_check, y_check):
            await tg.press_button(x_msg, callback_data("up", check), sender=person(voter))
    await eventually(lambda: _votes_are(db, 4))
    # Votes are kept under a pseudonym, never the platform's user id.
    voters = {r[0] for r in await db.fetchall("SELECT user_id FROM feedback")}
    assert voters == {db.pseudonym("telegram", X), db.pseudonym("telegram", Y)}
    assert all(v.startswith("p:") and str(X) not in v for v in voters)
    # Both write in a tracked group: their texts are stored, and embedded in Qdrant with their entities.
    tg.chat_admins[GROUP["id"]] = {ADMIN: "administrator"}
    await tg.send_user_message("/track on", chat=GROUP, sender=person(ADMIN))
    await eventually(lambda: store.is_tracked("telegram", GROUP["id"]))
    await tg.send_user_message(f"Senator {X_MARKER} was arrested in Springfield yesterday, officials say",
                               chat=GROUP, sender=person(X))
    await tg.send_user_message(f"Senator {Y_MARKER} was arrested in Shelbyville yesterday, officials say",
                               chat=GROUP, sender=person(Y))
    await eventually(lambda: _messages_are(store, 2))
    assert await f_app.corroborator.vectors.count() == 2
    before = holding(data_dir, X_MARKER)
    assert any(p.endswith(".sqlite3") or p.endswith("-wal") for p in before), before
    assert any(p.startswith("qdrant-edge/") for p in before), before  # the entity is in a segment, or the log

    forget = await tg.send_user_message("/forget me", chat=FakeTelegram.private_chat(X), sender=person(X))
    [answer] = await tg.wait_for(lambda: tg.replies_to(forget["message_id"]), timeout=60)
    assert answer.params["text"] == ("Deleted everything I kept about you: 1 check you asked for, 2 votes, "
                                     "1 message in tracked chats.")

    assert holding(data_dir, X_MARKER) == []
    # The other person's check, votes and tracked message stay (a vote on X's check went with the check).
    assert await check_ids(db, Y_MARKER) == [y_check] and await db.get_check(x_check) is None
    assert [v.user_id for v in await FeedbackStore(db).votes(y_check)] == [db.pseudonym("telegram", Y)]
    assert await store.count("telegram", GROUP["id"]) == 1
    assert await f_app.corroborator.vectors.count() == 1
    assert holding(data_dir, Y_MARKER)
    # A second /forget me finds nothing; the forgetting is audited under the pseudonym, not the id.
    again = await tg.send_user_message("/forget me", chat=FakeTelegram.private_chat(X), sender=person(X))
    [answer] = await tg.wait_for(lambda: tg.replies_to(again["message_id"]), timeout=60)
    assert answer.params["text"].startswith("I have nothing stored about you")
    audit = await db.fetchall("SELECT user_id, chat_id FROM audit WHERE action = 'forget.me'")
    assert [tuple(r) for r in audit] == [(db.pseudonym("telegram", X), None)] * 2
    # The rewritten collection serves as before: Y's message is still found by its vector.
    [vec] = await f_app.embedder.embed([f"Senator {Y_MARKER} was arrested in Shelbyville yesterday"])
    near = await f_app.corroborator.vectors.nearest(vec, t=None, window_s=0, floor=0.5, limit=5)
    assert [m.chat for m in near] == [f"telegram:{GROUP['id']}"]


async def _votes_are(db: Database, n: int) -> bool:
    return await db.count("SELECT COUNT(*) FROM feedback") == n


async def _messages_are(store: Any, n: int) -> bool:
    return await store.count("telegram", GROUP["id"]) == n


async def test_forget_me_as_a_slack_slash_command(f_app, sl, bots):
    db, data_dir = f_app.db, f_app.settings.data_dir
    marker = "Quillowhaventhorpe"

    def command(text: str, name: str, user: str) -> str:
        return urlencode({"team_id": TEAM_ID, "channel_id": "C0FORGET", "channel_name": "general", "user_id": user,
                          "command": name, "text": text, "response_url": sl.response_url(name.strip("/") + user),
                          "trigger_id": f"1.{time.monotonic_ns()}", "api_app_id": "A0TIPLINE"})

    status, _ = await post(bots[1], command(f"The harbour of {marker} was sold to pirates last week", "/check",
                                            "U0CAROL"), content_type="application/x-www-form-urlencoded")
    assert status == 200
    [check] = await eventually(lambda: check_ids(db, marker), timeout=60)
    assert await askers(db, check) == [db.pseudonym("slack", "U0CAROL")]
    await eventually(lambda: _done(db), timeout=60)

    status, body = await post(bots[1], command("me", "/forget", "U0CAROL"),
                              content_type="application/x-www-form-urlencoded")
    assert status == 200 and json.loads(body)["text"] == "Deleting what I keep about you…"
    [answer] = await sl.wait_for(lambda: sl.responses.get("forgetU0CAROL"), timeout=60)
    assert answer["text"].startswith("Deleted everything I kept about you: 1 check you asked for")
    assert await db.get_check(check) is None and holding(data_dir, marker) == []


async def _done(db: Database) -> bool:
    return not await db.count("SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'held', 'running')")


# --- without the bots -------------------------------------------------------------------------------


def result(text: str, days_ago: float = 0.0) -> Result:
    from datetime import datetime, timedelta, timezone

    return Result(id=new_check_id(), text=text, verdict=Verdict.NOT_ENOUGH_EVIDENCE, label="Unverified", reasoning="",
                  confidence=0.2, created_at=datetime.now(timezone.utc) - timedelta(days=days_ago))


@pytest.mark.asyncio
async def test_checks_and_votes_expire_after_the_retention_period(tmp_path: Path):
    db = await Database.open(tmp_path / "t.sqlite3")
    try:
        old, new = result("Grimbleshanks ate the old moon", days_ago=91), result("A new moon rose", days_ago=1)
        for r in (old, new):
            await db.save_check(r, asker=db.pseudonym("telegram", 1))
            await FeedbackStore(db).record(r.id, "telegram", 2, -1)
        async with db.transaction() as conn:  # a vote cast long ago on a check made lately
            await conn.execute("UPDATE feedback SET at = '2000-01-01T00:00:00+00:00' WHERE check_id = ?", (new.id,))
        privacy = Privacy(db, check_retention_days=90)
        assert await privacy.expire() == 3  # the old check and its vote; the new check's old vote
        assert await db.get_check(old.id) is None and await db.get_check(new.id) is not None
        assert await db.count("SELECT COUNT(*) FROM feedback") == 0
        assert holding(tmp_path, "Grimbleshanks") == []
        assert await Privacy(db, check_retention_days=0).expire() == 0  # 0: kept for ever
    finally:
        await db.close()


@pytest.mark.asyncio
async def test_votes_stored_by_user_id_become_pseudonyms_once(tmp_path: Path):
    path = tmp_path / "t.sqlite3"
    db = await Database.open(path)
    r = result("Snorfwiggle is a planet")
    await db.save_check(r)
    await db.close()
    # As an older version stored it: the voter's id itself, and a job that knew who asked.
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO feedback (check_id, platform, user_id, vote, at) VALUES (?, 'telegram', '4242', 1, "
                     "'2026-01-01T00:00:00+00:00')", (r.id,))
        conn.execute("INSERT INTO jobs (idem_key, platform, chat_id, user_id, payload, status, created_at, check_id) "
                     "VALUES ('k', 'telegram', '4242', '4242', '{}', 'done', '2026-01-01', ?)", (r.id,))
        conn.execute("DELETE FROM kv WHERE key = 'pseudonyms_v1'")
    db = await Database.open(path)
    try:
        who = db.pseudonym("telegram", 4242)
        assert [v.user_id for v in await FeedbackStore(db).votes(r.id)] == [who]
        assert await askers(db, r.id) == [who]
        assert not await db.count("SELECT COUNT(*) FROM feedback WHERE user_id = '4242'")
    finally:
        await db.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")  # the module's asyncio mark; this one runs main()
def test_tipline_forget_user_on_a_stopped_bot(tmp_path: Path, model_dir: Path, seeded: SeededDataDir,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    data_dir = seeded.copy_to(tmp_path / "data")
    settings = isolated_settings(data_dir, model_dir)

    async def store() -> tuple[str, str]:
        db = await Database.open(settings.sqlite_path)
        try:
            mine, theirs = result("Wobblefrotz owns the bridge"), result("Kettlewhistle owns the tower")
            await db.save_check(mine, asker=db.pseudonym("slack", "U0DAVE"))
            await db.save_check(theirs, asker=db.pseudonym("slack", "U0ERIN"))
            await FeedbackStore(db).record(theirs.id, "slack", "U0DAVE", 1)
            return mine.id, theirs.id
        finally:
            await db.close()
    mine, theirs = asyncio.run(store())
    for key in [k for k in __import__("os").environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("TIPLINE_MODEL_CACHE_DIR", str(settings.models_dir))
    assert main(["--data-dir", str(data_dir), "forget", "--user", "slack:U0DAVE"]) == 0
    out = capsys.readouterr().out
    assert "Deleted everything stored of slack:U0DAVE (checks: 1, votes: 1, queued requests: 0, tracked messages: 0)" in out
    assert holding(data_dir, "Wobblefrotz") == [] and holding(data_dir, "Kettlewhistle")
    assert main(["--data-dir", str(data_dir), "forget", "--user", "U0DAVE"]) == 2  # no platform
