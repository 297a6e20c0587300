"""Watched public Telegram channels (bot/watch.py): /watch, the poller and what watched posts feed,
against a local t.me serving preview pages in Telegram's markup (tests/fakes/telegram_preview.py), with
the real corroborator (SQLite, embedded Qdrant, the ONNX models) and, end to end, the fake Bot API and PTB.

One app per module; every test watches channels of its own names, so tests do not see each other's posts.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.telegram import TelegramBot, TelegramConfig
from bot.admins import Admins
from bot.app import build_app
from bot.check_service import CHECKING
from bot.requests import IncomingMessage
from bot.router import route
from bot.chat_app import build_digests
from bot.watch import WatchService
from bot.watch_commands import NOT_AVAILABLE, REFUSED, WatchCommands, WatchRequest
from core.watch.telegram_preview import PreviewReader
from storage.domains import DomainStore
from storage.watched import WatchStore, read_channels
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_preview import FakeTelegramPreview
from tests.test_telegram import assert_valid_telegram_html

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN, MEMBER = 501, 502
_n = itertools.count(1)
# One story, told by a Russian channel and a Ukrainian one.
RU = "Ночью дрон атаковал зерновоз «Анна Мария» в порту Одессы, экипаж из 12 человек эвакуирован, пожар потушен"
UK = "Вночі дрон атакував зерновоз «Анна Марія» в порту Одеси, екіпаж із 12 людей евакуйовано, пожежу загасили"
BRIDGE = "Мост через Днепр в Запорожье закроют на ремонт с понедельника на три недели, объезд через плотину"
ASKED = "В порту Одессы дрон атаковал зерновоз Анна Мария, экипаж 12 человек эвакуировали"
OTHER = ("Рецепт дня: как испечь хлеб на закваске дома", "Погода на выходные: солнечно и тепло, до +25",
         "Футбол: местная команда выиграла со счётом 3:1", "Концерт в филармонии перенесён на следующую неделю")


def name(prefix: str = "kanal") -> str:
    return f"{prefix}_{next(_n):04d}"


class Clock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("watch") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


def watcher(app, fake: FakeTelegramPreview, clock: Clock | None = None, **kw) -> WatchService:
    return WatchService(WatchStore(app.db), app.corroborator, PreviewReader(fake.base_url), request_gap_s=0,
                        clock=clock or time.time, **kw)


def fill(fake: FakeTelegramPreview, channel: str, n: int, *, start: int = 0, title: str = "") -> None:
    fake.channel(channel, title or f"Канал {channel}")
    now = datetime.now(UTC)
    for i in range(start, start + n):
        fake.post(channel, f"Сводка №{i}: {OTHER[i % len(OTHER)]} ({channel})", views=f"{i + 1}.{i % 10}K",
                  at=now - timedelta(minutes=(start + n - i) * 3))


async def stored(app, channel: str) -> int:
    return await app.corroborator.store.count("telegram", f"@{channel}")


async def test_the_first_read_takes_the_first_page_then_only_new_posts(app, tme):
    ch = name()
    fill(tme, ch, 30)
    w = watcher(app, tme)
    [line] = await w.add([f"https://t.me/{ch}"], by="telegram:1")
    assert line.startswith(f"Watching @{ch}: 20 posts stored") and "every 10 min" in line
    assert await stored(app, ch) == 20  # the preview's first page: posts 11-30
    watched = await w.store.get(ch)
    assert watched is not None and watched.status == "ok" and watched.last_post_id == 30 and watched.posts == 20
    assert watched.title == f"Канал {ch}" and watched.last_post_at == tme.channels[ch].posts[-1].at.timestamp()
    row = (await app.corroborator.store.get([f"telegram:@{ch}:30"]))[f"telegram:@{ch}:30"]
    assert row.permalink == f"https://t.me/{ch}/30" and row.author == f"@{ch}" and row.text.startswith("Сводка №29")
    assert row.ts == tme.channels[ch].posts[-1].at.timestamp() and row.language == "ru"
    settings = await app.corroborator.store.chat("telegram", f"@{ch}")
    assert settings is not None and settings.tracking and settings.kind == "channel" and settings.handle == f"@{ch}"
    post = (await w.store.posts([f"telegram:@{ch}:30"]))[f"telegram:@{ch}:30"]
    assert post.views == 30_900 and post.origin == f"{ch}/30" and post.stored

    again = await w.poll(ch)  # nothing new: nothing stored twice
    assert (again.status, again.read, again.stored) == ("ok", 0, 0) and await stored(app, ch) == 20
    fill(tme, ch, 2, start=30)
    tme.channels[ch].posts[29].views = "45.1K"  # views of a post read before move on
    newer = await w.poll(ch)
    assert (newer.read, newer.stored) == (2, 2) and await stored(app, ch) == 22
    assert (await w.store.posts([f"telegram:@{ch}:30"]))[f"telegram:@{ch}:30"].views == 45_100
    assert (await w.add([f"@{ch}"]))[0].startswith(f"@{ch} is already watched: @{ch} (Канал {ch}) — ok: last post")

    # The name now belongs to a new channel, whose post ids start again: its posts are new all the same.
    tme.channels[ch].posts.clear()
    fill(tme, ch, 3)
    reborn = await w.poll(ch)
    assert (reborn.read, reborn.stored) == (3, 3) and await stored(app, ch) == 25
    assert (await w.poll(ch)).stored == 0
    await w.aclose()


async def test_after_downtime_it_pages_back_with_before_up_to_the_limit(app, tme):
    ch, short = name(), name()
    fill(tme, ch, 5)
    fill(tme, short, 5)
    w, w1 = watcher(app, tme), watcher(app, tme, backfill_pages=1)
    await w.add([ch])
    await w1.add([short])
    fill(tme, ch, 45, start=5)  # 45 posts while the bot was down: posts 6-50
    fill(tme, short, 60, start=5)
    seen = len(tme.requests)
    report = await w.poll(ch)
    assert (report.read, report.stored, report.pages, report.detail) == (45, 45, 3, "")
    asked = [q for p, q in tme.requests[seen:] if p == f"/s/{ch}"]
    assert asked == [{}, {"before": "31"}, {"before": "11"}]
    assert await stored(app, ch) == 50
    limited = await w1.poll(short)  # one older page: 40 of the 60 missed posts, and the status says so
    assert (limited.stored, limited.pages) == (40, 2) and "skipped" in limited.detail
    assert await stored(app, short) == 45
    assert "older posts than the last 2 page(s) were skipped" in w1.describe(await w1.store.get(short))
    await w.aclose()
    await w1.aclose()


async def test_a_forward_chain_counts_once_and_service_and_photo_posts_are_not_stored(app, tme):
    a, b, c, d = name("orig"), name("repost"), name("first"), name("second")
    now = datetime.now(UTC)
    tme.channel(a, "Оригинал")
    tme.post(a, BRIDGE, views="7K", at=now - timedelta(hours=2))
    tme.post(a, "Канал создан", service=True, at=now - timedelta(hours=1))
    tme.post(a, "", photo=True, at=now - timedelta(minutes=50))
    tme.channel(b, "Репост")
    tme.post(b, BRIDGE, forwarded=("Оригинал", f"https://t.me/{a}/1"),
             at=now - timedelta(hours=1))
    for chan in (c, d):  # both forward the same post of a channel nobody watches
        tme.channel(chan, chan)
        tme.post(chan, "Срочно: в Херсоне отключили свет во всех районах после обстрела подстанции",
                 forwarded=("Херсон онлайн", "https://t.me/kherson_unwatched/900"), views="2.5K",
                 at=now - timedelta(minutes=20 if chan == c else 10))
    w = watcher(app, tme)
    lines = await w.add([a, b, c, d])
    assert all(line.startswith("Watching") for line in lines), lines
    assert [await stored(app, x) for x in (a, b, c, d)] == [1, 0, 1, 0]
    rows = await w.store.posts([f"telegram:@{b}:1", f"telegram:@{c}:1", f"telegram:@{a}:2", f"telegram:@{a}:3"])
    assert not rows[f"telegram:@{b}:1"].stored and rows[f"telegram:@{b}:1"].origin == f"{a}/1"
    assert rows[f"telegram:@{c}:1"].forwarded_from == "Херсон онлайн" and rows[f"telegram:@{c}:1"].stored
    assert not rows[f"telegram:@{a}:2"].stored and not rows[f"telegram:@{a}:3"].stored  # service, photo only
    assert (await w.store.get(a)).last_post_id == 3  # read all the same: never read again

    # A channel the bot reads as its admin (/track on, under its numeric id) is not stored a second time.
    own = name("own")
    await app.corroborator.store.set_flag("telegram", "-1009990099", "tracking", True, kind="channel",
                                          handle=f"@{own}")
    tme.channel(own, "Свой канал")
    tme.post(own, "Свежая новость, которую бот уже получает как администратор канала")
    assert (await w.add([own]))[0].startswith(f"Watching @{own}: 0 posts stored")
    assert await stored(app, own) == 0
    await w.aclose()


async def test_each_status_is_shown_logged_once_and_never_stops_the_poller(app, tme, caplog):
    caplog.set_level(logging.INFO, logger="bot.watch")
    clock = Clock()
    w = watcher(app, tme, clock)
    ch = name()
    fill(tme, ch, 3)
    assert (await w.add([ch]))[0].startswith(f"Watching @{ch}")

    async def tick(seconds: float) -> None:  # the poller's cycle, `seconds` later (every channel due is read)
        clock.t += seconds
        await w.poll_due()

    async def poll(seconds: float = 601) -> None:  # one read of this channel
        clock.t += seconds
        await w.poll(ch)

    tme.channels[ch].mode = "gone"  # renamed or deleted
    await poll()
    await poll()
    gone = await w.store.get(ch)
    assert gone.status == "not_found" and "not found" in w.describe(gone) and "last read fine" in w.describe(gone)
    tme.channels[ch].mode = "layout"  # t.me answers 200 with a page tipline cannot read
    await poll()
    await tick(601)
    assert (await w.store.get(ch)).status == "layout"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and f"@{ch}" in r.getMessage()]
    assert len(warnings) == 2 and "layout" in warnings[1], warnings  # one line per change, not per poll
    tme.channels[ch].mode = "preview"
    await poll()
    assert (await w.store.get(ch)).status == "ok"
    assert any(f"@{ch} is read again" in r.getMessage() for r in caplog.records)

    tme.slow_down("300")  # HTTP 429, Retry-After: 300
    await poll()
    slowed = await w.store.get(ch)
    assert slowed.status == "slowed" and slowed.retry_at == pytest.approx(clock.t + 300)
    assert "slowed down by Telegram until" in w.describe(slowed)
    seen = len(tme.requests)
    await tick(200)  # the interval has passed, Retry-After has not: Telegram is not asked
    await tick(99)
    assert len(tme.requests) == seen
    await tick(2)
    assert len(tme.requests) > seen and (await w.store.get(ch)).status == "ok"

    refused = {name("user"): "no_preview", name("gone"): "gone", name("blocked"): "restricted"}
    for chan, mode in refused.items():
        tme.channel(chan, chan, mode=mode)
    lines = await w.add([*refused, "https://t.me/+AbCdEf123", "not a channel!"])
    assert lines[0] == "“https://t.me/+AbCdEf123” not added: private: it is an invite link or a private channel's " \
                       "link: only public channels (with a @name) can be watched."
    assert lines[1].startswith("“not a channel!” not added:")
    assert "not added: no public preview" in lines[2] and "not added: not found" in lines[3]
    assert "not added: restricted by Telegram" in lines[4]
    assert not {c.name for c in await w.store.channels()} & set(refused)

    def broken(name: str, before: int | None = None):
        raise RuntimeError("a bug in the reader")
    w.reader.read = broken  # type: ignore[method-assign]
    w.tick_s = 0.01
    clock.t += 601
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    for _ in range(200):
        if (await w.store.get(ch)).status == "error":
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # more cycles: still running
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 5)
    assert (await w.store.get(ch)).status == "error"
    assert sum(f"reading @{ch} failed" in r.getMessage() and r.exc_info is not None for r in caplog.records) == 1
    assert [c for c in read_channels(app.settings.sqlite_path) if c.name == ch][0].status == "error"
    await w.aclose()


async def test_watch_commands_are_for_admins(app, tme):
    w = watcher(app, tme)
    cmds = WatchCommands(app.db, w, Admins(["1"]))
    ch = name()
    fill(tme, ch, 2)
    refused = await cmds.handle(WatchRequest("telegram", -100777, 10, 2, f"add @{ch}"))
    assert refused == REFUSED and await w.store.get(ch) is None
    assert await cmds.handle(WatchRequest("telegram", 2, 11, 2, "list")) == REFUSED
    audit = [(e.action, e.detail) for e in await DomainStore(app.db).audit_entries(2)]
    assert audit == [("watch.list.refused", ""), ("watch.add.refused", f"@{ch}")]
    async def yes() -> bool:
        return True

    async def no() -> bool:
        return False
    group = WatchRequest("telegram", -100777, 16, 3, "list")
    assert await cmds.handle(group, is_chat_admin=no) == REFUSED  # a group's member
    assert (await cmds.handle(group, is_chat_admin=yes)).startswith(("Watched channels", "No channels"))  # its admin
    assert (await cmds.handle(WatchRequest("telegram", 1, 12, 1, f"add @{ch}"))).startswith(f"Watching @{ch}")
    listing = await cmds.handle(WatchRequest("telegram", 1, 13, 1, ""))
    assert listing.startswith("Watched channels (") and f"• @{ch} (Канал {ch}) — ok: last post" in listing
    assert (await cmds.handle(WatchRequest("slack", "D1", "t", "1", "bogus"))).startswith("Usage:")
    for more in [name("many") for _ in range(12)]:  # enough channels to need the cut, whatever ran before
        fill(tme, more, 1)
        assert (await cmds.handle(WatchRequest("telegram", 1, 15, 1, f"add @{more}"))).startswith("Watching @")
    short = await w.listing(limit=400)  # one chat message: cut, the rest counted, those in trouble first
    assert len(short) <= 400 and short.splitlines()[-1].startswith("(+") and "more: `tipline watch list`" in short
    everyone = (await w.listing(limit=100_000)).splitlines()[1:]
    ok_at = [i for i, line in enumerate(everyone) if " — ok:" in line]
    assert ok_at and all(" — ok:" in line for line in everyone[ok_at[0]:])
    removed = await cmds.handle(WatchRequest("telegram", 1, 14, 1, f"remove t.me/{ch}"))
    assert removed == f"Stopped watching @{ch}; its 2 stored posts deleted."
    assert await stored(app, ch) == 0 and not await app.corroborator.store.is_tracked("telegram", f"@{ch}")
    assert await cmds.handle(WatchRequest("telegram", 1, 15, 1, f"remove @{ch}")) == f"@{ch} is not watched."
    assert await WatchCommands(app.db, None, Admins(["1"])).handle(WatchRequest("telegram", 1, 1, 1)) == NOT_AVAILABLE

    def incoming(text: str, kind: str = "private") -> IncomingMessage:
        return IncomingMessage("telegram", -1001 if kind != "private" else 1, kind, 5, text, sender_id=1)  # type: ignore[arg-type]
    routed = route(incoming("/watch add @one t.me/two"), "tipline_bot")
    assert isinstance(routed, WatchRequest) and routed.args == "add @one t.me/two"
    assert isinstance(route(incoming("/watch@tipline_bot list", "group"), "tipline_bot"), WatchRequest)
    assert route(incoming("/watch@other_bot list", "group"), "tipline_bot") is None
    assert route(incoming("/watch add @one", "channel"), "tipline_bot") is None
    await w.aclose()


async def test_cli_added_channels_and_pending_removals_are_picked_up(app, tme):
    """`tipline watch add|remove` while `tipline run` holds the data dir: only rows change; the running poller
    reads a new channel on its next cycle and deletes a removed one's posts."""
    clock = Clock()
    w = watcher(app, tme, clock)
    ch, later = name(), name()
    fill(tme, ch, 3)
    fill(tme, later, 2)
    await w.add([ch])
    assert await w.store.add(later, by="cli", now=clock.t)  # what the CLI writes
    assert await w.store.mark_removed(ch)
    await w.poll_due()
    assert await w.store.get(ch) is None and await stored(app, ch) == 0
    assert (await w.store.get(later)).status == "ok" and await stored(app, later) == 2
    await w.aclose()


# --- end to end: Telegram, "also reported by", the digest -----------------------------------------


@pytest_asyncio.fixture(loop_scope="module")
async def tg(app, tme):
    fake = await FakeTelegram().start()
    clock = Clock()
    digests = build_digests(app.settings, app)
    chat = await queued_chat(app.engine, corroborator=app.corroborator,
                             digests=digests, admins=(str(ADMIN),))
    chat.attach_watch(watcher(app, tme, clock))
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    yield fake, chat
    await bot.stop()
    await chat.aclose()
    await fake.stop()


async def reply(fake: FakeTelegram, text: str, *, uid: int = ADMIN, chat: dict | None = None) -> str:
    msg = fake.make_message(text, chat=chat or fake.private_chat(uid),
                            sender={"id": uid, "is_bot": False, "first_name": f"U{uid}"})
    await fake.queue_message(msg)
    return (await fake.wait_for(lambda: fake.answer_to(msg["message_id"], CHECKING), timeout=60)).params["text"]


async def test_watched_channels_are_also_reported_by_and_in_the_digest(tg, app, tme):
    fake, chat = tg
    ru, uk = name("novosti"), name("novyny")
    now = datetime.now(UTC)
    tme.channel(ru, "Новости Юга")
    tme.post(ru, OTHER[0], at=now - timedelta(hours=5), views="900")
    tme.post(ru, RU, views="12.4K", at=now - timedelta(hours=3))
    tme.channel(uk, "Новини Півдня")
    tme.post(uk, UK, views="3.1K", at=now - timedelta(hours=2))

    member = await reply(fake, f"/watch add @{ru}", uid=MEMBER)
    assert member == REFUSED
    added = await reply(fake, f"/watch add @{ru} https://t.me/{uk}")
    assert added.startswith(f"Watching @{ru}: 2 posts stored") and f"Watching @{uk}: 1 post stored" in added
    listing = await reply(fake, "/watch list")
    assert f"@{ru} (Новости Юга) — ok: last post 3 h ago" in listing and f"@{uk} (Новини Півдня) — ok" in listing

    card = await reply(fake, ASKED, uid=MEMBER)  # a user asks about the story
    assert_valid_telegram_html(card)
    assert f'<a href="https://t.me/{ru}/2">@{ru} (12.4k views)</a>' in card, card
    assert f'<a href="https://t.me/{uk}/1">@{uk} (3.1k views)</a>' in card, card
    # A forward from one of the channels: the other is "also", the forward's own origin is where it started.
    fwd = fake.make_message(RU, sender={"id": MEMBER, "is_bot": False, "first_name": "M"},
                            chat=fake.private_chat(MEMBER),
                            forward_origin={"type": "channel", "date": int(now.timestamp()) - 3600, "message_id": 2,
                                            "chat": {"id": -1009990001, "type": "channel", "title": "Новости Юга",
                                                     "username": ru}})
    await fake.queue_message(fwd)
    card = (await fake.wait_for(lambda: fake.answer_to(fwd["message_id"], CHECKING), timeout=60)).params["text"]
    assert f"Also reported by: <a href=\"https://t.me/{uk}/1\">@{uk} (3.1k views)</a>" in card, card
    assert f'first seen 3 h ago in <a href="https://t.me/{ru}/2">@{ru} (12.4k views)</a>' in card, card

    group = {"id": -1009990002, "type": "supergroup", "title": "Редакция"}
    digest = await reply(fake, "/digest now", chat=group)
    assert f'<a href="https://t.me/{ru}/2">@{ru}</a>' in digest and f'<a href="https://t.me/{uk}/1">@{uk}</a>' in digest
    assert chat.digests is not None

    tme.channels[uk].mode = "gone"  # the channel disappears: a status, and nothing breaks
    assert chat.watch is not None
    chat.watch.clock.t += 601  # type: ignore[attr-defined]
    await chat.watch.poll_due()
    assert f"@{uk} (Новини Півдня) — not found" in await reply(fake, "/watch")


async def test_watch_needs_the_service(app):
    chat = await queued_chat(app.engine, corroborator=app.corroborator, admins=("1",))
    assert await chat.answer(WatchRequest("telegram", 1, 1, 1, "list")) == NOT_AVAILABLE


async def test_the_cli_and_doctor_while_the_bot_holds_the_data_dir(app, tme, capsys):
    """`tipline watch` while this module's app holds the data dir (as `tipline run` would): only rows change,
    and `tipline doctor` shows each channel's status from them."""
    from adapters.doctor import watch_rows
    from adapters.watch_cli import watch_command

    settings = app.settings.model_copy(update={"telegram_preview_url": tme.base_url})
    ch, person = name(), name("person")
    fill(tme, ch, 2)
    tme.channel(person, "Иван", mode="no_preview")
    code = await watch_command("add", [f"@{ch}", f"t.me/{person}", "https://t.me/+Secret1"], settings)
    out = capsys.readouterr().out.splitlines()
    assert code == 1 and out[0] == f"Watching @{ch}: the running tipline reads it within 30 s."
    assert out[1].startswith(f"@{person} not added: no public preview") and "not added: private" in out[2]
    assert (await WatchStore(app.db).get(ch)).status == "new"
    assert await watch_command("list", [], settings) == 0
    assert f"@{ch} — not read yet" in capsys.readouterr().out
    rows = {r.service: r for r in watch_rows(settings)}
    assert rows[f"watch @{ch}"].status == "ok" and rows[f"watch @{ch}"].detail == "not read yet"
    vanished = name("vanished")
    await WatchStore(app.db).add(vanished, by="test", now=time.time())
    await WatchStore(app.db).record(vanished, status="not_found", detail="HTTP 404", now=time.time())
    row = {r.service: r for r in watch_rows(settings)}[f"watch @{vanished}"]
    assert row.status == "warn" and row.detail.startswith("not found (no public channel by that name") and \
        "[HTTP 404]; read just now" in row.detail
    assert await watch_command("remove", [f"@{ch}", "@never_watched"], settings) == 0
    out = capsys.readouterr().out
    assert f"Stopped watching @{ch}; the running tipline deletes" in out and "@never_watched is not watched." in out
    assert (await WatchStore(app.db).get(ch)).removed


async def test_slack_watch_slash_command(app, tme):
    """`/watch` on Slack: configured admins only, answered to the admin alone; `add` is acked at once and the
    outcome follows (here through chat.postEphemeral: the request has no response_url)."""
    import json

    from adapters.slack import SlackBot, SlackConfig
    from tests.fakes.slack_api import FakeSlack
    from tests.test_slack import SECRET, post
    from tests.test_tracking_chat import slash

    fake = await FakeSlack().start()
    chat = await queued_chat(app.engine, corroborator=app.corroborator, admins=("U0BOSS",))
    chat.attach_watch(watcher(app, tme))
    bot = SlackBot(SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0), chat)
    await bot.start()
    ch = name()
    fill(tme, ch, 3)
    form = "application/x-www-form-urlencoded"
    try:
        status, body = await post(bot, slash("/watch", f"add <https://t.me/{ch}>", "C0NEWS", "U0BOB"), content_type=form)
        assert status == 200 and json.loads(body)["text"] == REFUSED
        status, body = await post(bot, slash("/watch", f"add <https://t.me/{ch}>", "C0NEWS", "U0BOSS"),
                                  content_type=form)
        assert json.loads(body)["text"] == "⏳ Reading the channels…"
        [told] = await fake.wait_for(lambda: fake.called("chat.postEphemeral"))
        assert told.params["user"] == "U0BOSS" and told.params["text"].startswith(f"Watching @{ch}: 3 posts stored")
        status, body = await post(bot, slash("/watch", "list", "C0NEWS", "U0BOSS"), content_type=form)
        assert f"@{ch} (Канал {ch}) — ok: last post" in json.loads(body)["text"]
        assert await stored(app, ch) == 3
    finally:
        await bot.stop()
        await chat.aclose()
        await fake.stop()
