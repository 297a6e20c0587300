"""Reading Telegram's public web preview (core/watch/telegram_preview.py): channel names, the page's posts, and what
each answer of t.me says about a channel, against the local t.me of tests/fakes/telegram_preview.py.
No models: these are the parser's and the reader's own tests (bot/watch.py's are in tests/test_watch.py)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import pytest_asyncio
from aiohttp import web

from core.watch.telegram_preview import (
    MAX_RETRY_S,
    NotAChannel,
    PreviewReader,
    channel_name,
    parse_preview,
    parse_views,
    retry_after_s,
    short_count,
)
from tests.fakes.loopback import serve_on_loopback
from tests.fakes.telegram_preview import FakeTelegramPreview, plain_page, preview_page

RU = "Взрывы в Одессе этой ночью: дрон попал в зерновоз в порту, экипаж эвакуирован 🚢"
UK = "Вибухи в Одесі цієї ночі: дрон влучив у зерновоз у порту, екіпаж евакуйовано"


@pytest.mark.parametrize("ref, name", [
    ("@Novosti_24", "novosti_24"), ("novosti_24", "novosti_24"), ("t.me/novosti_24", "novosti_24"),
    ("https://t.me/novosti_24", "novosti_24"), ("https://t.me/s/Novosti_24", "novosti_24"),
    ("https://t.me/novosti_24/1234", "novosti_24"), ("https://t.me/s/novosti_24?before=77", "novosti_24"),
    ("http://telegram.me/novosti_24", "novosti_24"), ("<https://t.me/novosti_24>", "novosti_24"),
    ("tg://resolve?domain=novosti_24", "novosti_24"),
])
def test_a_channel_is_named_by_handle_or_link(ref, name):
    assert channel_name(ref) == name


@pytest.mark.parametrize("ref, private", [
    ("https://t.me/+AbCdEf123", True), ("t.me/joinchat/AbCdEf", True), ("https://t.me/c/1234567/89", True),
    ("https://t.me/addstickers/pack", False), ("https://example.org/novosti", False), ("@ab", False),
    ("", False), ("@1channel", False), ("новости", False), ("https://t.me/", False),
])
def test_what_names_no_public_channel_is_refused_with_a_reason(ref, private):
    with pytest.raises(NotAChannel) as caught:
        channel_name(ref)
    assert caught.value.private is private and str(caught.value)


def test_views_as_shown_and_as_the_card_shows_them():
    assert parse_views("12.4K") == 12400 and parse_views("987") == 987 and parse_views("1.2M") == 1_200_000
    assert parse_views("") is None and parse_views("views") is None
    assert short_count(12400) == "12.4k" and short_count(987) == "987" and short_count(1_200_000) == "1.2M"
    assert short_count(3000) == "3k" and short_count(154_000) == "154k"


def test_retry_after_in_seconds_or_as_a_date_within_bounds():
    now = time.time()
    assert retry_after_s("120") == 120.0
    date = format_datetime(datetime.fromtimestamp(now + 300, UTC), usegmt=True)
    assert 290 <= retry_after_s(date, now) <= 301
    assert retry_after_s(None) == retry_after_s("soon") == 60.0
    assert retry_after_s("99999999") == MAX_RETRY_S and retry_after_s("0") == 1.0


def fake_channel() -> FakeTelegramPreview:
    fake = FakeTelegramPreview()
    ch = fake.channel("novosti_24", "Новости 24", description="Главное за день")
    now = datetime.now(UTC)
    fake.post("novosti_24", "Канал создан", service=True, at=now - timedelta(hours=5))
    fake.post("novosti_24", RU, views="12.4K", at=now - timedelta(hours=2),
              reply_to=(1, "Цитата из старого поста, не текст этого"))
    fake.post("novosti_24", "", photo=True, views="3.1K", at=now - timedelta(hours=1))
    fake.post("novosti_24", UK + "\n\nДжерело: @kanal_b", views="1.2M",
              forwarded=("Канал Б", "https://t.me/kanal_b/77"), at=now - timedelta(minutes=30),
              link_preview=("Сайт", "Заголовок", "Описание страницы, не текст поста"))
    fake.post("novosti_24", "Переслано от скрытого автора", forwarded=("Иван", ""), at=now - timedelta(minutes=5))
    assert ch.posts
    return fake


def test_a_preview_page_gives_each_post_its_id_time_text_views_and_forward():
    fake = fake_channel()
    ch = fake.channels["novosti_24"]
    page = parse_preview(preview_page(ch, ch.posts, None))
    assert page.title == "Новости 24" and page.username == "@novosti_24" and page.channel_header
    service, ru, photo, fwd, hidden = page.posts
    assert [p.post_id for p in page.posts] == [1, 2, 3, 4, 5]
    assert service.service and service.text == "Канал создан"
    assert ru.text == RU and ru.views == 12400 and not ru.forwarded and ru.origin == "novosti_24/2"
    assert ru.link == "https://t.me/novosti_24/2" and ru.at == ch.posts[1].at
    assert photo.text == "" and photo.views == 3100
    assert fwd.text == UK + "\n\nДжерело: @kanal_b" and fwd.views == 1_200_000  # the preview's description is not it
    assert fwd.forwarded_from == "Канал Б" and fwd.forwarded_link == "https://t.me/kanal_b/77"
    assert fwd.origin == "kanal_b/77"
    assert hidden.forwarded and hidden.forwarded_from == "Иван" and hidden.origin == ""
    assert page.before is None  # the first post is on the page: nothing older to load


def test_the_older_posts_link_and_the_plain_pages():
    fake = fake_channel()
    ch = fake.channels["novosti_24"]
    page = parse_preview(preview_page(ch, ch.posts[2:], None))
    assert page.before == 3
    exists = parse_preview(plain_page(ch, "novosti_24"))
    assert exists.page_title == "Новости 24" and not exists.posts
    nobody = parse_preview(plain_page(None, "nobody_here"))
    assert nobody.page_title == "" and not nobody.posts


def test_bad_markup_is_read_as_far_as_it_goes_and_never_raises():
    fake = fake_channel()
    ch = fake.channels["novosti_24"]
    html = preview_page(ch, ch.posts, None)
    cut = parse_preview(html[: html.index("data-post=\"novosti_24/4\"") + 400])  # cut in the middle of post 4
    assert [p.post_id for p in cut.posts][:3] == [1, 2, 3]
    deep = parse_preview("<div>" * 50_000 + "text" + "</span>" * 10 + "<p>")
    assert deep.posts == [] and deep.message_blocks == 0
    assert parse_preview("\x00<<<>>>&#xffffff;</div></div>").posts == []
    scripts = parse_preview("<script>" + "<div class='tgme_widget_message' data-post='x/1'>" * 100 + "</script>")
    assert scripts.message_blocks == 0


@pytest_asyncio.fixture
async def tme():
    fake = fake_channel()
    await fake.start()
    reader = PreviewReader(fake.base_url)
    yield fake, reader
    await reader.aclose()
    await fake.stop()


async def test_the_reader_tells_each_answer_of_tme_apart(tme):
    fake, reader = tme
    ok = await reader.read("novosti_24")
    assert ok.status == "ok" and ok.page is not None and len(ok.page.posts) == 5
    fake.channel("a_person", "Иван Петров", mode="no_preview")  # a user: /s/ redirects to /a_person
    fake.channel("renamed_ch", "Old", mode="gone")
    fake.channel("locked_ch", "Locked", mode="private")
    fake.channel("blocked_ch", "Blocked", mode="restricted")
    fake.channel("empty_ch", "Пусто", mode="empty")
    fake.channel("newlayout", "Новый", mode="layout")
    expected = {"a_person": "no_preview", "renamed_ch": "not_found", "never_existed": "not_found",
                "locked_ch": "private", "blocked_ch": "restricted", "empty_ch": "no_preview", "newlayout": "layout"}
    for name, status in expected.items():
        assert (await reader.read(name)).status == status, name
    assert ("/a_person", {}) in fake.requests  # the redirect's page was read to tell "exists" from "nobody"
    fake.slow_down("42")
    slowed = await reader.read("novosti_24")
    assert slowed.status == "slowed" and slowed.retry_after == 42.0
    assert (await reader.read("novosti_24", before=3)).page.posts[-1].post_id == 2  # ?before= pages back
    assert fake.requests[-1] == ("/s/novosti_24", {"before": "3"})


async def test_unreachable_and_huge_pages_are_outcomes_not_errors():
    async def huge(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        await resp.prepare(request)
        await resp.write(b"<html><body>" + b"<div class='x'>" * 20_000)
        for _ in range(100):
            await resp.write(b"<p>filler</p>" * 8000)  # ~10 MB, never read past the bound
        return resp

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=502, text="Bad Gateway")
    app = web.Application()
    app.router.add_get("/s/huge_page", huge)
    app.router.add_get("/s/broken_one", broken)
    runner, port = await serve_on_loopback(app)
    reader = PreviewReader(f"http://127.0.0.1:{port}", max_bytes=256 * 1024, timeout_s=10)
    try:
        started = time.monotonic()
        assert (await reader.read("huge_page")).status == "layout"
        assert time.monotonic() - started < 5
        assert (await reader.read("broken_one")).detail == "HTTP 502"
    finally:
        await reader.aclose()
        await runner.cleanup()
    gone = PreviewReader("http://127.0.0.1:9", timeout_s=2)
    outcome = await gone.read("novosti_24")
    await gone.aclose()
    assert outcome.status == "unreachable" and "127.0.0.1" in outcome.detail
