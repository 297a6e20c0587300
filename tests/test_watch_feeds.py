"""News outlets' RSS/Atom feeds as watched sources (bot/watch_feeds.py), against a local news site
serving RSS 2.0 and Atom with ETag / Last-Modified and the refusals a reader meets (tests/fakes/news_feeds.py),
with the real corroborator (SQLite, embedded Qdrant, the ONNX models) and, end to end, the fake Bot API and PTB.

One app per module; every test watches feeds of its own names, so tests do not see each other's items.
"""

from __future__ import annotations

import re

import itertools
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.check_service import CHECKING
from bot.chat_app import build_digests
from bot.watch import WatchService
from bot.watch_feeds import FeedWatch, chat_id_of, item_key
from core.evidence.ssrf import SSRFGuard
from core.watch.feed_reader import FeedItem, FeedReader, feed_url, is_feed_ref, parse_feed
from core.watch.telegram_preview import PreviewReader
from storage.watched import WatchStore
from storage.watched_feeds import FeedStore
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.news_feeds import FakeNewsFeeds
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_preview import FakeTelegramPreview
from tests.test_telegram import assert_valid_telegram_html

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN, MEMBER = 601, 602
_n = itertools.count(1)
RU = ("Ночью дрон атаковал зерновоз «Анна Мария» в порту Одессы",
      "<p>Экипаж из <b>12 человек</b> эвакуирован, пожар потушен, сообщили в администрации порта.</p>")
UK = "Вночі дрон атакував зерновоз «Анна Марія» в порту Одеси, екіпаж із 12 людей евакуйовано, пожежу загасили"
ASKED = "В порту Одессы дрон атаковал зерновоз Анна Мария, экипаж 12 человек эвакуировали"
OTHER = [("Погода на выходные", "<p>Солнечно и тепло, до +25</p>"),
         ("Футбол", "<p>Местная команда выиграла со счётом 3:1</p>"),
         ("Концерт перенесён", "<p>Концерт в филармонии перенесён на следующую неделю</p>")]


def name(prefix: str = "outlet") -> str:
    return f"{prefix}{next(_n):04d}"


class Clock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("feeds") / "data"), model_dir,
                                 fetch_allow_hosts=["127.0.0.1"])
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site():
    fake = await FakeNewsFeeds().start()
    yield fake
    await fake.stop()


def feeds(app, clock=None, *, guard: SSRFGuard | None = None, max_bytes: int = 2 * 1024 * 1024) -> FeedWatch:
    return FeedWatch(FeedStore(app.db), app.corroborator,
                     FeedReader(guard or SSRFGuard(["127.0.0.1"]), timeout_s=10, max_bytes=max_bytes),
                     request_gap_s=0, clock=clock or time.time)


def watcher(app, tme: FakeTelegramPreview, clock=None, **kw) -> WatchService:
    return WatchService(WatchStore(app.db), app.corroborator, PreviewReader(tme.base_url), request_gap_s=0,
                        clock=clock or time.time, feeds=feeds(app, clock, **kw))


async def stored(app, url: str) -> int:
    return await app.corroborator.store.count("feed", chat_id_of(url))


async def test_feed_addresses():
    assert is_feed_ref("https://outlet.example/rss.xml") and is_feed_ref("outlet.example/feed")
    assert is_feed_ref("<https://outlet.example/rss|outlet.example/rss>")  # as Slack writes a link
    assert not any(is_feed_ref(r) for r in ("@novosti", "novosti", "https://t.me/novosti", "t.me/s/novosti",
                                            "tg://resolve?domain=novosti"))
    assert feed_url("HTTPS://Outlet.Example/RSS.xml#top") == "https://outlet.example/RSS.xml"
    assert feed_url("outlet.example/feed?lang=ru") == "https://outlet.example/feed?lang=ru"
    assert chat_id_of("https://outlet.example/feed?lang=ru") == "outlet.example/feed?lang=ru"


async def test_parsing_is_bounded_and_refuses_entities():
    assert "entities" in parse_feed(b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]><rss version="2.0">'
                                    b"<channel><item><title>&a;</title></item></channel></rss>").problem
    nested = b"<html><body>" + b"<div>" * 50_000 + b"</body></html>"
    assert parse_feed(nested, "text/html").problem.startswith("no RSS or Atom feed")
    many = ('<?xml version="1.0"?><rss version="2.0"><channel><title>Many</title>'
            + "".join(f"<item><title>Item {i}</title><link>https://m.example/{i}</link></item>" for i in range(500))
            + "</channel></rss>").encode()
    page = parse_feed(many)
    assert page.entries == 500 and len(page.items) == 200  # MAX_ITEMS
    long = parse_feed(('<rss version="2.0"><channel><item><title>T</title><description>'
                       + "слово " * 5000 + "</description></item></channel></rss>").encode())
    assert len(long.items[0].text) == 4000  # MAX_TEXT
    scripted = parse_feed(b'<rss version="2.0"><channel><item><title>T</title><description>&lt;script&gt;alert(1)'
                          b'&lt;/script&gt;&lt;p onclick="x()"&gt;Text&lt;/p&gt;</description></item></channel></rss>')
    assert scripted.items[0].text == "T\nText"


async def test_an_rss_feed_is_read_once_then_answers_304_and_only_new_items_are_stored(app, site):
    out = name()
    site.feed(out, "Южные Новости")
    now = datetime.now(UTC)
    site.item(out, *RU, at=now - timedelta(hours=3))
    for i, (title, summary) in enumerate(OTHER):
        site.item(out, title, summary, at=now - timedelta(hours=2, minutes=i))
    site.item(out, "Архив", "<p>Старая новость</p>", at=now - timedelta(days=40))  # older than retention
    url = site.url(out)
    fw = feeds(app)
    line = await fw.add(url, by="telegram:1")
    assert line == f"Watching Южные Новости ({url}): 4 items stored from its feed; new items are read every 10 min."
    assert await stored(app, url) == 4
    assert site.requests[-1] == (f"/feeds/{out}.xml", {})  # the first read asks unconditionally
    first = site.feeds[out].items[0]
    key = item_key(url, FeedItem(first.guid, first.link, first.title, "", None).message_id)
    row = (await app.corroborator.store.get([key]))[key]
    assert row.text == RU[0] + "\nЭкипаж из 12 человек эвакуирован, пожар потушен, сообщили в администрации порта."
    assert row.permalink == first.link and row.author == "Южные Новости" and row.ts == first.at.timestamp()
    assert row.language == "ru"
    chat = await app.corroborator.store.chat("feed", chat_id_of(url))
    assert chat is not None and chat.tracking and chat.kind == "channel" and chat.title == "Южные Новости"
    watched = await fw.store.get(url)
    assert watched is not None and watched.status == "ok" and watched.items == 4 and watched.etag.startswith('"')
    assert watched.last_item_at == max(i.at for i in site.feeds[out].items).timestamp()

    # Nothing changed: the validators go back, the site answers 304, nothing is parsed or stored.
    again = await fw.poll(url)
    assert (again.status, again.detail, again.read, again.stored) == ("ok", "HTTP 304", 0, 0)
    path, conditional = site.requests[-1]
    assert conditional == {"If-None-Match": watched.etag, "If-Modified-Since": watched.last_modified}
    assert site.answers[-1] == (f"/feeds/{out}.xml", 304) and await stored(app, url) == 4
    unchanged = await fw.store.get(url)
    assert unchanged.unchanged == 1 and "1 read unchanged (304)" in fw_line(unchanged)

    # One new item: a 200 with a new ETag; the items read before are not stored twice.
    site.item(out, "Мост закроют на ремонт", "<p>С понедельника на три недели</p>")
    newer = await fw.poll(url)
    assert (newer.status, newer.read, newer.stored) == ("ok", 1, 1) and await stored(app, url) == 5
    assert (await fw.store.get(url)).etag != watched.etag
    site.feeds[out].items[1].summary = "<p>Обновлено: солнечно, до +27</p>"  # an edited item keeps its guid
    assert (await fw.poll(url)).stored == 0 and await stored(app, url) == 5
    await fw.aclose()


def fw_line(feed) -> str:
    from bot.watch_feeds import describe_feed

    return describe_feed(feed, time.time())


async def test_an_atom_feed_with_last_modified_only(app, site):
    out = name("atom")
    site.feed(out, "Новини Півдня", kind="atom").validators = "last-modified"
    site.item(out, UK[:60], f"<p>{UK}</p>")
    site.item(out, "Погода", "<p>Сонячно</p>")
    url = site.url(out)
    fw = feeds(app)
    assert (await fw.add(url)).startswith(f"Watching Новини Півдня ({url}): 2 items stored")
    watched = await fw.store.get(url)
    assert watched.etag == "" and watched.last_modified
    assert (await fw.poll(url)).detail == "HTTP 304"
    assert site.requests[-1][1] == {"If-Modified-Since": watched.last_modified}
    assert await stored(app, url) == 2
    await fw.aclose()


async def test_refusals_are_statuses_and_never_stop_the_poller(app, site, caplog):
    caplog.set_level(logging.INFO, logger="bot.watch_feeds")
    fw = feeds(app, max_bytes=256 * 1024)
    gone, page, huge, closed, broken, moved = (name(p) for p in ("gone", "html", "huge", "closed", "broken", "moved"))
    site.feed(gone, mode="gone")
    site.feed(page, mode="html")
    site.feed(huge, mode="huge")
    site.feed(closed, mode="forbidden")
    site.feed(broken, mode="layout")
    site.feed(moved, "Moved", mode="moved")
    site.item(moved, "Переехали", "<p>Новый адрес ленты</p>")
    assert (await fw.add(site.url(gone))).startswith(f"{site.url(gone)} not added: not found (the address answers 404")
    assert (await fw.add(site.url(page))).startswith(f"{site.url(page)} not added: not a feed")
    started = time.monotonic()
    big = await fw.add(site.url(huge))
    assert big.startswith(f"{site.url(huge)} not added: not a feed") and "cut at 256 KB" in big, big
    assert time.monotonic() - started < 10
    assert (await fw.add(site.url(closed))).startswith(f"{site.url(closed)} not added: refused")
    assert not {f.url for f in await fw.store.feeds()} & {site.url(x) for x in (gone, page, huge, closed)}
    layout = await fw.add(site.url(broken))
    assert layout.startswith(f"Watching {site.url(broken)}, but the first read failed: feed not understood")
    assert (await fw.add(site.url(moved))).startswith(f"Watching Moved ({site.url(moved)}): 1 item stored")
    assert (await fw.add("https://")).startswith("“https://” not added:")
    private = feeds(app, guard=SSRFGuard())  # no loopback allowed: the production guard
    assert "not added: not a public address" in await private.add(site.url(moved) + "?x=1")
    await private.aclose()

    # 429 with Retry-After: that feed waits, then is read again.
    clock = Clock()
    fw.clock = clock
    ok = name("slow")
    site.item(ok, "Первая новость", "<p>Текст</p>")
    url = site.url(ok)
    await fw.add(url)
    site.slow_down("300")
    clock.t += 601
    await fw.poll(url)
    slowed = await fw.store.get(url)
    assert slowed.status == "slowed" and slowed.retry_at == pytest.approx(clock.t + 300)
    assert "slowed down by the site until" in fw_line(slowed)
    seen = len(site.requests)
    clock.t += 299
    await fw.poll_due()
    assert not [r for r in site.requests[seen:] if r[0] == f"/feeds/{ok}.xml"]
    clock.t += 2
    await fw.poll_due()
    assert [r for r in site.requests[seen:] if r[0] == f"/feeds/{ok}.xml"]
    assert (await fw.store.get(url)).status == "ok"
    site.feeds[ok].mode = "gone"  # the outlet drops its feed: a status and one log line
    for _ in range(2):
        clock.t += 601
        await fw.poll_due()
    assert (await fw.store.get(url)).status == "not_found"
    assert sum(f"feed {url}: not found" in r.getMessage() for r in caplog.records) == 1
    site.feeds[ok].mode = "feed"
    clock.t += 601
    await fw.poll_due()
    assert (await fw.store.get(url)).status == "ok"
    assert any(f"feed {url} is read again" in r.getMessage() for r in caplog.records)
    await fw.aclose()


async def test_watch_add_list_remove_take_feeds_beside_channels(app, site, tme):
    w = watcher(app, tme)
    out, chan = name(), name("kanal_")
    site.feed(out, "Outlet")
    site.item(out, "Новость дня", "<p>Текст новости</p>")
    tme.channel(chan, "Канал")
    tme.post(chan, "Пост канала о новостях дня в городе")
    lines = await w.add([f"@{chan}", site.url(out)])
    assert lines[0].startswith(f"Watching @{chan}: 1 post stored") and lines[1].startswith("Watching Outlet (")
    listing = await w.listing()
    assert "Watched channels (" in listing and "Watched feeds (" in listing
    assert f"• {site.url(out)} (Outlet) — ok: last item" in listing
    removed = await w.remove([site.url(out)])
    assert removed == [f"Stopped watching {site.url(out)}; its 1 stored item deleted."]
    assert await stored(app, site.url(out)) == 0 and await w.feeds.store.get(site.url(out)) is None
    assert await w.remove([site.url(out)]) == [f"{site.url(out)} is not watched."]
    await w.aclose()


async def test_the_cli_and_doctor_with_feeds_while_the_bot_holds_the_data_dir(app, site, capsys):
    from adapters.doctor import watch_rows
    from adapters.watch_cli import watch_command

    settings = app.settings
    out, gone = name(), name("gone")
    site.item(out, "Новость", "<p>Текст</p>")
    site.feed(gone, mode="gone")
    code = await watch_command("add", [site.url(out), site.url(gone)], settings)
    lines = capsys.readouterr().out.splitlines()
    assert code == 1 and lines[0] == f"Watching {site.url(out)}: the running tipline reads it within 30 s."
    assert lines[1].startswith(f"{site.url(gone)} not added: not found")
    assert await watch_command("list", [], settings) == 0
    assert f"{site.url(out)} — not read yet" in capsys.readouterr().out
    rows = {r.service: r for r in watch_rows(settings)}
    assert rows[f"watch {site.url(out)}"].status == "ok" and rows[f"watch {site.url(out)}"].detail == "not read yet"
    fw = feeds(app)
    await fw.poll_due()  # the running bot's next cycle reads it
    assert await stored(app, site.url(out)) == 1
    await FeedStore(app.db).record(site.url(out), status="not_feed", detail="no RSS", now=time.time())
    row = {r.service: r for r in watch_rows(settings)}[f"watch {site.url(out)}"]
    assert row.status == "warn" and row.detail.startswith("not a feed")
    assert await watch_command("remove", [site.url(out)], settings) == 0
    assert "the running tipline deletes its stored items on its next cycle" in capsys.readouterr().out
    await fw.poll_due()
    assert await stored(app, site.url(out)) == 0 and await fw.store.get(site.url(out)) is None
    await fw.aclose()


# --- end to end: Telegram, "also reported by", the digest -----------------------------------------


async def reply(fake: FakeTelegram, text: str, *, uid: int = ADMIN, chat: dict | None = None) -> str:
    msg = fake.make_message(text, chat=chat or fake.private_chat(uid),
                            sender={"id": uid, "is_bot": False, "first_name": f"U{uid}"})
    await fake.queue_message(msg)
    return (await fake.wait_for(lambda: fake.answer_to(msg["message_id"], CHECKING), timeout=60)).params["text"]


async def test_an_outlet_is_also_reported_by_and_in_the_digest(app, site, tme):
    fake = await FakeTelegram().start()
    chat = await queued_chat(app.engine, corroborator=app.corroborator,
                             digests=build_digests(app.settings, app), admins=(str(ADMIN),))
    chat.attach_watch(watcher(app, tme))
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    try:
        out, uk = name(), name("novyny_")
        now = datetime.now(UTC)
        site.feed(out, "Южные Новости")
        story = site.item(out, *RU, at=now - timedelta(hours=3))
        tme.channel(uk, "Новини Півдня")
        tme.post(uk, UK, views="3.1K", at=now - timedelta(hours=2))
        added = await reply(fake, f"/watch add {site.url(out)} @{uk}")
        assert f"Watching @{uk}: 1 post stored" in added and f"Watching Южные Новости ({site.url(out)}): 1 item" \
            in added, added
        card = await reply(fake, ASKED, uid=MEMBER)
        assert_valid_telegram_html(card)
        assert f'<a href="{story.link}">Южные Новости</a>' in card, card
        assert f'<a href="https://t.me/{uk}/1">@{uk} (3.1k views)</a>' in card, card
        digest = await reply(fake, "/digest now", chat={"id": -1009990102, "type": "supergroup", "title": "Редакция"})
        assert f'<a href="{story.link}">Южные Новости</a>' in digest and f'<a href="https://t.me/{uk}/1">@{uk}</a>' \
            in digest, digest
        # Earlier tests of this module fed the same story to other outlets (in Russian and Ukrainian): they may join it.
        chats = re.search(r"(\d+) chats \((\d+) channels\)", digest)
        assert chats and int(chats[1]) >= 2 and chats[1] == chats[2], digest
    finally:
        await bot.stop()
        await chat.aclose()
        await fake.stop()


async def test_the_poller_reads_what_falls_due_without_waiting_for_its_tick(app, site, tme):
    """`run` sleeps until the next channel or feed is due, not a whole tick: with a one-second interval and
    a one-minute tick, both are read again within seconds."""
    import asyncio

    out, chan = name(), name("kanal_")
    site.item(out, "Новость", "<p>Текст</p>")
    tme.channel(chan, "Канал")
    tme.post(chan, "Пост канала о новостях")
    w = watcher(app, tme)
    w.interval_s = w.feeds.interval_s = 1.0
    w.tick_s = 60.0
    await w.add([f"@{chan}", site.url(out)])
    # Only this test's channel and feed: the others of this module's data dir are not due within a minute.
    for c in await w.store.channels():
        if c.name != chan:
            await w.store.record(c.name, status=c.status, detail=c.detail, now=time.time() + 3600)
    for f in await w.feeds.store.feeds():
        if f.url != site.url(out):
            await w.feeds.store.record(f.url, status=f.status, detail=f.detail, now=time.time() + 3600)
    feed_reads = len([r for r in site.requests if r[0] == f"/feeds/{out}.xml"])
    chan_reads = len([r for r in tme.requests if r[0] == f"/s/{chan}"])
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    try:
        for _ in range(200):
            if len([r for r in site.requests if r[0] == f"/feeds/{out}.xml"]) >= feed_reads + 3 and \
                    len([r for r in tme.requests if r[0] == f"/s/{chan}"]) >= chan_reads + 3:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the poller waited for its tick")
        assert 0 < await w.until_due() <= 1.0
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await w.aclose()
