"""The account reader of watched channels (core/watch/account_reader.py, core/watch/mtproto.py): public
channels without a web preview read through a logged-in Telegram account, with the real watch service,
corroborator (SQLite, embedded Qdrant, the models) and the local t.me (tests/fakes/telegram_preview.py).

Telegram's side is tests/fakes/telegram_account.py: an in-process stand-in for Telethon's TelegramClient that
answers with Telethon's real TL types and raises its real errors. No MTProto server can run here, so the
wire itself is not tested: the requests tipline builds and the answers it reads are.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import stat
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from telethon import errors
from telethon.tl import functions

from adapters.account_cli import account_command
from adapters.doctor import account_row
from bot.app import build_app
from bot.outflow import describe, outflow
from bot.settings import Settings
from bot.watch import WatchService, build_account, session_path
from core.watch.account_reader import AccountReader
from core.watch.mtproto import TelethonChannels
from core.watch.telegram_preview import PreviewReader
from storage.watched import WatchStore
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_account import FakeAccountTelegram
from tests.fakes.telegram_preview import FakeTelegramPreview

pytestmark = pytest.mark.asyncio(loop_scope="module")

HASH = "0123456789abcdef"
RESOLVE = functions.contacts.ResolveUsernameRequest
HISTORY = functions.messages.GetHistoryRequest
_n = itertools.count(1)


def name(prefix: str = "closed") -> str:
    return f"{prefix}_{next(_n):04d}"


class Clock:
    """Wall time the test moves; `sleep` moves it too, so pacing is checked without waiting."""

    def __init__(self) -> None:
        self.t = time.time()
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("watch_account") / "data"), model_dir,
                                 telegram_api_id=1, telegram_api_hash=HASH)
    async with build_app(settings) as a:
        yield a


def logged_in(tg: FakeAccountTelegram, data_dir: Path) -> Path:
    """A session file as `tipline watch login` leaves it (test_login shows the login itself)."""
    session = data_dir / f"account-{next(_n)}.session"
    session.write_bytes(b"")
    os.chmod(session, 0o600)
    tg.authorized.add(session)
    return session


def watcher(app, tme: FakeTelegramPreview, tg: FakeAccountTelegram, clock: Clock, *, session: Path | None = None,
            gap_s: float = 5.0, **kw) -> WatchService:
    store = WatchStore(app.db)
    session = session or logged_in(tg, app.settings.data_dir)
    account = AccountReader(TelethonChannels(session, 1, HASH, factory=tg.factory), store, gap_s=gap_s, clock=clock,
                            sleep=clock.sleep)
    return WatchService(store, app.corroborator, PreviewReader(tme.base_url), request_gap_s=0, clock=clock,
                        account=account, **kw)


def closed(tme: FakeTelegramPreview, tg: FakeAccountTelegram, posts: int = 0, title: str = "") -> str:
    """A channel whose t.me/s/ page redirects to t.me/<name> (its preview is off), readable by the account."""
    ch = name()
    tme.channel(ch, title or f"Канал {ch}", mode="no_preview")
    tg.channel(ch, title or f"Канал {ch}", posts=posts)
    return ch


async def stored(app, channel: str) -> int:
    return await app.corroborator.store.count("telegram", f"@{channel}")


async def test_a_channel_without_a_preview_is_read_through_the_account(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    ch = closed(tme, tg, posts=30, title="Закрытые новости")
    w = watcher(app, tme, tg, clock)
    [line] = await w.add([f"@{ch}"], by="telegram:1")
    assert line == (f"Watching @{ch}: 20 posts stored through the account (it has no public preview); new posts "
                    "are read every 10 min."), line
    assert await stored(app, ch) == 20  # the newest 20, as the preview's first page would be
    row = (await app.corroborator.store.get([f"telegram:@{ch}:30"]))[f"telegram:@{ch}:30"]
    assert row.permalink == f"https://t.me/{ch}/30" and row.author == f"@{ch}" and row.text.startswith("Сводка №30")
    assert row.ts == tg.channels[ch].posts[-1].at.timestamp()
    post = (await w.store.posts([f"telegram:@{ch}:30"]))[f"telegram:@{ch}:30"]
    assert post.views == 3000 and post.origin == f"{ch}/30" and not post.forwarded_from
    watched = await w.store.get(ch)
    assert watched is not None and watched.reader == "account" and watched.status == "ok"
    assert watched.last_post_id == 30 and watched.title == "Закрытые новости"
    assert w.describe(watched).startswith(f"@{ch} (Закрытые новости) [through the account] — ok: last post")
    # What went out: the name once, then one page of history from the start, 20 posts.
    [resolve] = tg.of(RESOLVE)
    [history] = tg.of(HISTORY)
    assert resolve.username == ch
    assert (history.min_id, history.offset_id, history.limit, history.max_id) == (0, 0, 20, 0)
    assert history.peer.channel_id == tg.channels[ch].id and history.peer.access_hash == tg.channels[ch].access_hash

    preview_asked = len([r for r in tme.requests if ch in r[0]])
    clock.t += 601
    again = await w.poll(ch)  # nothing new: only what is above the last post read is asked for
    assert (again.status, again.read, again.via) == ("ok", 0, "account")
    assert tg.of(HISTORY)[-1].min_id == 30 and len(tg.of(RESOLVE)) == 1
    tg.post(ch, "Срочно: в порту Одессы горит зерновоз, экипаж эвакуирован", views=5400)
    tg.post(ch, "Мост через Днепр закроют на ремонт", views=800)
    clock.t += 601
    assert await w.poll_due() == 1
    assert await stored(app, ch) == 22 and tg.of(HISTORY)[-1].min_id == 30
    assert len([r for r in tme.requests if ch in r[0]]) == preview_asked  # an account channel's preview is not asked
    assert (await w.store.get(ch)).last_post_id == 32  # type: ignore[union-attr]


async def test_each_name_is_resolved_once_and_kept_in_sqlite(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    ch, nobody = closed(tme, tg, posts=3), name("nobody")
    tme.channel(nobody, mode="no_preview")  # t.me shows a page, the account says no one has the name
    w = watcher(app, tme, tg, clock)
    await w.add([f"@{ch}"])
    peer = await w.store.peer(ch)
    assert peer is not None and (peer.kind, peer.peer_id, peer.access_hash) == (
        "channel", tg.channels[ch].id, tg.channels[ch].access_hash)
    [line] = await w.add([f"@{nobody}"])
    assert line.startswith(f"@{nobody} not added: not found"), line
    assert [r.username for r in tg.of(RESOLVE)] == [ch, nobody]

    # Another process (a restart): the kept id and access hash are used, nothing is resolved again.
    w2 = watcher(app, tme, tg, clock)
    clock.t += 601
    assert (await w2.poll(ch)).status == "ok"
    assert [r.username for r in tg.of(RESOLVE)] == [ch, nobody]
    # A name that named no one is asked again only after a day.
    await w2.add([f"@{nobody}"])
    assert len(tg.of(RESOLVE)) == 2
    clock.t += 86401
    tg.channel(nobody, "Теперь канал", posts=2)
    [line] = await w2.add([f"@{nobody}"])
    assert line.startswith(f"Watching @{nobody}: 2 posts stored through the account"), line
    assert [r.username for r in tg.of(RESOLVE)] == [ch, nobody, nobody]


async def test_requests_through_the_account_are_paced(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    channels = [closed(tme, tg, posts=2) for _ in range(3)]
    w = watcher(app, tme, tg, clock, gap_s=7.0)
    for ch in channels:
        await w.store.add(ch, by="cli", now=clock())
    asked: list[float] = []
    answer = tg.answer

    def timed(request):
        asked.append(clock())
        return answer(request)
    tg.answer = timed  # type: ignore[method-assign]
    assert await w.poll_due() == 3
    assert len(asked) == 6  # each: one resolve, one history
    gaps = [b - a for a, b in zip(asked, asked[1:])]
    assert min(gaps) >= 7.0, gaps
    assert clock.slept and all(s <= 7.0 for s in clock.slept)


async def test_the_account_pacing_does_not_hold_up_the_previews(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    slow = [closed(tme, tg, posts=1) for _ in range(2)]
    open_ch = name("open")
    tme.channel(open_ch, "Открытый")
    tme.post(open_ch, "Пост открытого канала о погоде на выходные", views="2K")
    w = watcher(app, tme, tg, clock, gap_s=30.0)
    gate = asyncio.Event()

    async def held(s: float) -> None:  # the account's 30 s wait lasts until the test lets it go
        await gate.wait()
        clock.t += s
    assert w.account is not None
    w.account.sleep = held
    for ch in (*slow, open_ch):
        await w.store.add(ch, by="cli", now=clock())
        if ch in slow:
            await w.store.set_reader(ch, "account")
    cycle = asyncio.create_task(w.poll_due())
    for _ in range(200):
        if (await w.store.get(open_ch)).status == "ok":  # type: ignore[union-attr]
            break
        await asyncio.sleep(0.05)
    assert (await w.store.get(open_ch)).status == "ok"  # type: ignore[union-attr]  # read while the account waits
    assert not cycle.done() and len(tg.requests) == 1
    gate.set()
    assert await asyncio.wait_for(cycle, 30) == 3
    assert {(await w.store.get(ch)).status for ch in slow} == {"ok"}  # type: ignore[union-attr]


async def test_a_flood_wait_pauses_every_account_read_until_it_passes(app, tme, caplog):
    tg, clock = FakeAccountTelegram(), Clock()
    a, b = closed(tme, tg, posts=2), closed(tme, tg, posts=2)
    open_ch = name("open")
    tme.channel(open_ch, "Открытый")
    tme.post(open_ch, "Пост открытого канала о ремонте моста", views="1K")
    w = watcher(app, tme, tg, clock, gap_s=1.0)
    for ch in (a, b, open_ch):
        await w.store.add(ch, by="cli", now=clock())
    await w.store.set_reader(a, "account")
    await w.store.set_reader(b, "account")
    tg.fail(errors.FloodWaitError(None, capture=300))
    with caplog.at_level(logging.WARNING):
        await w.poll_due()
    sent = len(tg.requests)
    assert sent == 1  # the flooded request, and nothing after it through the account
    first = await w.store.get(a) if tg.requests[0].username == a else await w.store.get(b)
    assert first is not None and first.status == "slowed" and first.retry_at == pytest.approx(clock() + 300, abs=2)
    assert w.describe(first).endswith(f"slowed down by Telegram until {datetime.fromtimestamp(first.retry_at, UTC):%H:%M} UTC")
    assert (await w.store.get(open_ch)).status == "ok"  # type: ignore[union-attr]  # the preview is not paused
    assert w.paused_until == 0.0 and w.account is not None and w.account.paused_until > clock()
    assert sum("asked to wait 300 s" in r.getMessage() for r in caplog.records) == 1

    clock.t += 120
    for ch in (a, b):
        assert (await w.poll(ch)).status == "slowed"
    assert len(tg.requests) == sent  # still paused: no request at all
    clock.t += 181
    await w.poll_due()
    assert {(await w.store.get(ch)).status for ch in (a, b)} == {"ok"}  # type: ignore[union-attr]
    assert await stored(app, a) == 2 and await stored(app, b) == 2


async def test_after_downtime_it_pages_back_above_the_last_post_up_to_the_limit(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    ch = closed(tme, tg, posts=5)
    w = watcher(app, tme, tg, clock, gap_s=1.0, backfill_pages=2)
    await w.add([f"@{ch}"])
    now = datetime.now(UTC)
    for i in range(70):  # 70 posts while tipline was down: 6..75
        tg.post(ch, f"Пост {i} после простоя канала {ch}", at=now - timedelta(minutes=70 - i))
    clock.t += 601
    report = await w.poll(ch)
    assert (report.status, report.pages) == ("ok", 3)
    pages = tg.of(HISTORY)[-3:]
    assert [(p.min_id, p.offset_id) for p in pages] == [(5, 0), (5, 56), (5, 36)]
    assert await stored(app, ch) == 5 + 60  # posts 16..75; 6..15 were past the limit
    watched = await w.store.get(ch)
    assert watched is not None and watched.detail == "older posts than the last 3 page(s) were skipped"
    # A short gap is read whole, and a full page that reaches the last post read asks no further.
    for i in range(25):
        tg.post(ch, f"Ещё пост {i} канала {ch}")
    clock.t += 601
    report = await w.poll(ch)
    assert (report.read, report.pages) == (25, 2) and await stored(app, ch) == 90


async def test_forwards_and_service_posts_as_the_preview_reads_them(app, tme):
    tg, clock = FakeAccountTelegram(), Clock()
    origin, ch = closed(tme, tg, posts=3, title="Первоисточник"), closed(tme, tg)
    tg.post(ch, "Репост: новости первоисточника", forward=(origin, 2), views=50)
    tg.post(ch, "Слова скрытого пользователя о наводнении", hidden_forward="Иван")
    tg.post(ch, "", service=True)
    w = watcher(app, tme, tg, clock)
    await w.add([f"@{origin}"])
    [line] = await w.add([f"@{ch}"])
    assert line.startswith(f"Watching @{ch}: 1 post stored"), line  # the repost of a stored post counts once
    posts = await w.store.posts([f"telegram:@{ch}:{i}" for i in (1, 2, 3)])
    fwd, hidden, service = (posts[f"telegram:@{ch}:{i}"] for i in (1, 2, 3))
    assert (fwd.forwarded_from, fwd.forwarded_link, fwd.origin, fwd.stored) == (
        "Первоисточник", f"https://t.me/{origin}/2", f"{origin}/2", False)
    assert (hidden.forwarded_from, hidden.origin, hidden.stored) == ("Иван", "", True)
    assert not service.stored


async def test_statuses_of_the_account_reader(app, tme, caplog):
    tg, clock = FakeAccountTelegram(), Clock()
    person, group, hidden, restricted = name("person"), name("group"), closed(tme, tg, posts=2), closed(tme, tg, 1)
    tme.channel(person, mode="no_preview")
    tme.channel(group, mode="no_preview")
    tg.user(person)
    tg.group(group)
    tg.channels[restricted].restricted = "This channel can't be displayed because it violated local laws."
    w = watcher(app, tme, tg, clock, gap_s=1.0)
    lines = await w.add([f"@{person}", f"@{group}", f"@{restricted}"])
    assert lines[0].startswith(f"@{person} not added: not a channel (a user, a bot or a group"), lines
    assert lines[1].startswith(f"@{group} not added: not a channel"), lines
    assert lines[2].startswith(f"@{restricted} not added: restricted by Telegram [This channel can't be displayed"), lines

    await w.add([f"@{hidden}"])
    tg.channels[hidden].private = True  # made private, or the account banned from it
    clock.t += 601
    with caplog.at_level(logging.WARNING):
        assert (await w.poll(hidden)).status == "private"
        clock.t += 601
        assert (await w.poll(hidden)).status == "private"
    assert sum(f"@{hidden}" in r.getMessage() for r in caplog.records) == 1  # one line per change

    # The kept access hash stops working: forgotten, resolved again on the next read.
    tg.channels[hidden].private = False
    tg.channels[hidden].access_hash += 1
    clock.t += 601
    assert (await w.poll(hidden)).status == "unreachable"
    assert await w.store.peer(hidden) is None
    clock.t += 601
    assert (await w.poll(hidden)).status == "ok" and tg.of(RESOLVE)[-1].username == hidden

    # Logged out elsewhere (the session revoked): a status, one log line, and the preview still asked.
    tg.authorized.clear()
    clock.t += 601
    with caplog.at_level(logging.WARNING):
        report = await w.poll(hidden)
        clock.t += 601
        again = await w.poll(hidden)
    assert report.status == again.status == "logged_out", (report, again)
    assert "logged out" in (await w.store.get(hidden)).detail  # type: ignore[union-attr]
    assert sum("account is logged out" in r.getMessage() for r in caplog.records) == 2  # the reader's, the channel's
    assert tg.connects == 1  # the refused session is not connected again until a new login
    assert w.account is not None and not w.account.ready


async def test_without_a_logged_in_account_a_channel_without_a_preview_is_refused(app, tme, tmp_path):
    tg, clock = FakeAccountTelegram(), Clock()
    ch = closed(tme, tg, posts=2)
    plain = WatchService(WatchStore(app.db), app.corroborator, PreviewReader(tme.base_url), request_gap_s=0)
    [line] = await plain.add([f"@{ch}"])
    assert line.startswith(f"@{ch} not added: no public preview") and "`tipline watch login`" in line, line
    nobody = watcher(app, tme, tg, clock, session=tmp_path / "never.session")  # configured, never logged in
    [line] = await nobody.add([f"@{ch}"])
    assert line.startswith(f"@{ch} not added: no public preview") and "no account is logged in" in line, line
    assert tg.requests == [] and tg.connects == 0  # no session file: nothing connects

    off = isolated_settings(tmp_path, app.settings.embed_model_dir)
    assert build_account(off, WatchStore(app.db)) is None  # not configured: no account reader at all
    on = isolated_settings(tmp_path, app.settings.embed_model_dir, telegram_api_id=1, telegram_api_hash=HASH)
    assert build_account(on, WatchStore(app.db)) is not None
    offline = isolated_settings(tmp_path, app.settings.embed_model_dir, telegram_api_id=1, telegram_api_hash=HASH,
                                offline=True)
    assert build_account(offline, WatchStore(app.db)) is None


# --- tipline watch login / logout ----------------------------------------------------------------------


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(data_dir=tmp_path, _env_file=None, **kw)  # type: ignore[call-arg]


def answers(*given: str):
    asked: list[str] = []
    queue = list(given)

    def ask(prompt: str) -> str:
        asked.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)
    return ask, asked


async def test_login_asks_phone_code_and_password_and_keeps_the_session_owner_only(tmp_path, capsys):
    tg = FakeAccountTelegram(api_id=4242, api_hash=HASH, password="s3cret")
    s = _settings(tmp_path, telegram_api_id=4242, telegram_api_hash=HASH)
    ask, asked = answers("+380501112233", "00000", "12345")
    secret, secret_asked = answers("wrong", "s3cret")
    assert await account_command("login", s, ask=ask, ask_secret=secret, factory=tg.factory) == 0
    out = capsys.readouterr().out
    assert "Use a dedicated number" in out and "That code is not right; try again." in out
    assert "That password is not right; try again." in out
    assert "Logged in as Tipline Reader (@tipline_reader)." in out
    assert [a.split(" (")[0] for a in asked] == ["Phone number of the dedicated account", "The code Telegram sent",
                                                 "The code Telegram sent"]
    assert len(secret_asked) == 2
    session = session_path(s)
    assert session.exists() and stat.S_IMODE(session.stat().st_mode) == 0o600
    assert session in tg.authorized
    assert "s3cret" not in out and "12345" not in out
    # Again: already logged in, nothing asked.
    ask2, asked2 = answers()
    assert await account_command("login", s, ask=ask2, ask_secret=ask2, factory=tg.factory) == 0
    assert "Already logged in as Tipline Reader" in capsys.readouterr().out and asked2 == []
    # Logout ends it at Telegram and deletes the file.
    assert await account_command("logout", s, factory=tg.factory) == 0
    assert "Logged out" in capsys.readouterr().out and not session.exists() and not tg.authorized


@pytest.mark.parametrize(("kw", "inputs", "failure", "said"), [
    ({"telegram_api_id": None}, [], None, "Set TIPLINE_TELEGRAM_API_ID and TIPLINE_TELEGRAM_API_HASH first"),
    ({"offline": True}, [], None, "TIPLINE_OFFLINE=true"),
    ({"telegram_api_hash": "ffffffffffffffff"}, ["+380501112233"], None, "Telegram refused TIPLINE_TELEGRAM_API_ID"),
    ({}, ["+1 555"], None, "Telegram does not know that phone number"),
    ({}, [""], None, "No phone number given: login cancelled."),
    ({}, [], None, "Login cancelled."),  # stdin closed (EOF) at the first question
    ({}, ["+380501112233", "1", "2", "3"], None, "The login code was wrong or expired"),
    ({}, ["+380501112233"], errors.FloodWaitError(None, capture=3600), "Telegram asks to wait 3600 s"),
])
async def test_login_refusals_are_one_sentence_and_leave_no_session(tmp_path, capsys, kw, inputs, failure, said):
    tg = FakeAccountTelegram(api_id=4242, api_hash=HASH)
    if failure is not None:
        tg.fail(failure)
    s = _settings(tmp_path, **{"telegram_api_id": 4242, "telegram_api_hash": HASH, **kw})
    ask, _ = answers(*inputs)
    code = await account_command("login", s, ask=ask, ask_secret=ask, factory=tg.factory)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and said in out[-1], out
    assert "Traceback" not in "\n".join(out)
    assert not session_path(s).exists() and not tg.authorized


async def test_doctor_row_and_what_leaves_the_machine(tmp_path):
    none = _settings(tmp_path)
    assert "Telegram" not in describe(outflow(none))
    s = _settings(tmp_path, telegram_api_id=4242, telegram_api_hash=HASH)
    assert describe(outflow(s)) == ("nothing from messages leaves the machine; watched channels' public names "
                                    "(nothing from messages) go to Telegram through a dedicated account")
    assert "через отдельный аккаунт" in describe(outflow(s), "ru") and "через окремий акаунт" in describe(outflow(s), "uk")
    assert "Telegram" not in describe(outflow(_settings(tmp_path, telegram_api_id=4242, telegram_api_hash=HASH,
                                                         offline=True)))
    assert account_row(s).status == "warn" and "tipline watch login" in account_row(s).detail
    session = session_path(s)
    session.write_bytes(b"")
    os.chmod(session, 0o644)
    assert account_row(s).status == "warn" and "chmod 600" in account_row(s).detail
    os.chmod(session, 0o600)
    row = account_row(s)
    assert row.status == "ok" and "one request per 5 s at most" in row.detail
    half = _settings(tmp_path, telegram_api_id=4242)
    assert account_row(half).status == "warn" and "both" in account_row(half).detail
