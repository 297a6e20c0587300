"""Photos as stories: watched posts' photos are downloaded from the URL the preview page
names and perceptually hashed (core/corroboration/photo_hash.py, core/watch/preview_photos.py), the same picture in two channels
(one re-encoded) is one story for "also reported by" and the digest, and a photo an admin reviewed answers
the next forward of it at once. Pictures are generated with Pillow; a local t.me (tests/fakes/telegram_preview.py)
serves the preview pages and the image files, a fake Bot API the user's side; the corroborator, SQLite,
Qdrant Edge, the models and Tesseract are the real ones.
"""

from __future__ import annotations

import io
import itertools
import random
import struct
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from PIL import Image, ImageDraw, ImageFilter

from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.check_service import CHECKING
from bot.chat_app import build_digests
from bot.photo_memory import PhotoMemory
from bot.watch import WatchService
from core.intake.image_limits import ImageLimits, NotAnImage, TooManyPixels
from core.corroboration.photo_hash import BITS, MATCH_DISTANCE, distance, photo_hash
from core.corroboration.photo_index import PhotoEntry, PhotoIndex
from core.watch.preview_photos import PreviewPhotos
from core.watch.telegram_preview import PreviewReader, parse_preview
from storage.messages import resolve_story
from storage.watched import WatchStore
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_preview import FakeTelegramPreview, preview_page
from tests.test_telegram import assert_valid_telegram_html

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN, MEMBER = 601, 602
_n = itertools.count(1)


def name(prefix: str = "foto") -> str:
    return f"{prefix}_{next(_n):04d}"


def picture(seed: int, size: tuple[int, int] = (960, 720)) -> Image.Image:
    """A photo-like scene: a sky and ground of their own colours, shapes, texture."""
    rng = random.Random(seed)
    w, h = size
    y = np.linspace(0, 1, h)[:, None, None]
    sky = np.array([rng.randrange(256) for _ in range(3)])
    ground = np.array([rng.randrange(256) for _ in range(3)])
    arr = np.where(y < 0.5, sky * (1 - y), ground * (0.5 + y / 2)) * np.ones((1, w, 1))
    arr += np.random.default_rng(seed).normal(0, 10, (h, w, 3))
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    for _ in range(8):
        x0, y0 = rng.randrange(w), rng.randrange(h)
        box = (x0, y0, x0 + rng.randrange(60, 400), y0 + rng.randrange(60, 300))
        fill = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        (d.ellipse if rng.random() < 0.5 else d.rectangle)(box, fill=fill)
    return img.filter(ImageFilter.GaussianBlur(1.0))


def jpeg(img: Image.Image, quality: int = 90, scale: float = 1.0) -> bytes:
    if scale != 1.0:
        img = img.resize((int(img.width * scale), int(img.height * scale)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def png_bomb(width: int = 30_000, height: int = 30_000) -> bytes:
    """A valid PNG header declaring `width` x `height` pixels (900 MP), with almost no data behind it."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


# --- the hash ----------------------------------------------------------------------------------------


async def test_the_hash_matches_a_photo_re_encoded_and_resized_and_not_another_photo():
    img = picture(1)
    original = photo_hash(jpeg(img, 95))
    for variant in (jpeg(img, 30), jpeg(img, 60, scale=0.5), jpeg(img, 85, scale=2.0), jpeg(img, 40, scale=0.75)):
        assert distance(original, photo_hash(variant)) <= MATCH_DISTANCE
    buf = io.BytesIO()
    img.save(buf, "PNG")
    assert distance(original, photo_hash(buf.getvalue())) <= MATCH_DISTANCE
    for other in range(2, 8):
        assert distance(original, photo_hash(jpeg(picture(other), 95))) > 3 * MATCH_DISTANCE
    assert original.bit_length() <= BITS


async def test_the_hash_refuses_what_is_not_a_bounded_image():
    with pytest.raises(NotAnImage):
        photo_hash(b"<html><body>not a photo</body></html>")
    with pytest.raises(TooManyPixels):  # refused from the header: nothing is decoded
        photo_hash(png_bomb())
    with pytest.raises(NotAnImage):  # a JPEG cut short after its header cannot be decoded
        photo_hash(jpeg(picture(3))[:2000])


async def test_the_preview_parser_reads_a_posts_photo_and_only_its_own():
    fake = FakeTelegramPreview()
    ch = fake.channel("kartinki", "Картинки")
    fake.post("kartinki", "", photo="a.jpg")
    fake.post("kartinki", "Подпись к фото", photo=True)
    fake.post("kartinki", "Без фото", link_preview=("Site", "Title", "Description"))
    page = parse_preview(preview_page(ch, ch.posts, None, "http://127.0.0.1:9"))
    assert [p.photo_url for p in page.posts] == ["http://127.0.0.1:9/file/a.jpg", "https://cdn4.telesco.pe/file/abc.jpg",
                                                 ""]
    photos = PreviewPhotos("https://t.me")
    assert photos.allowed("https://cdn4.telesco.pe/file/abc.jpg") and photos.allowed("https://t.me/i/x.jpg")
    assert photos.allowed("https://cdn1.cdn-telegram.org/file/x.jpg")
    for bad in ("http://cdn4.telesco.pe/file/abc.jpg", "https://evil.example/file/a.jpg", "https://telesco.pe.evil.org/x",
                "file:///etc/passwd", "https://user:pw@cdn4.telesco.pe/x", "https://cdn4.telesco.pe:8443/x",
                "https://127.0.0.1/x", "javascript:alert(1)"):
        assert not photos.allowed(bad), bad
    local = PreviewPhotos("http://127.0.0.1:9")
    assert local.allowed("http://127.0.0.1:9/file/a.jpg") and not local.allowed("http://127.0.0.1:10/file/a.jpg")


async def test_the_photo_index_finds_relabels_and_forgets():
    index = PhotoIndex()
    base = photo_hash(jpeg(picture(11)))
    near = base ^ 0b1011  # 3 bits away
    far = photo_hash(jpeg(picture(12)))
    index.add(PhotoEntry("a:1", "tg:a", 1000.0, "a:1", 1000.0, base, has_text=False))
    index.add(PhotoEntry("b:1", "tg:b", 2000.0, "b:1", 2000.0, near))
    index.add(PhotoEntry("c:1", "tg:c", 2500.0, "c:1", 2500.0, far, has_text=False))
    index.add(PhotoEntry("d:1", "tg:d", 900_000.0, "d:1", 900_000.0, base))  # outside any window below
    assert [(e.key, d) for e, d in index.near(base, t=1500.0, window_s=7 * 86400)] == [("a:1", 0), ("b:1", 3)]
    assert [e.key for e, _ in index.near(base, t=1500.0, window_s=7 * 86400, exclude_chats=["tg:a"])] == ["b:1"]
    assert index.near(base, t=1500.0, window_s=7 * 86400, exclude_key="a:1")[0][0].key == "b:1"
    index.relabel(["b:1"], "a:1", 1000.0)
    assert [e.key for e in index.members(["a:1"], t=1500.0, window_s=86400)] == ["a:1", "b:1"]
    assert [e.key for e in index.members(["a:1"], t=1500.0, window_s=86400, photo_only=True)] == ["a:1"]
    assert index.members(["b:1"], t=1500.0, window_s=86400) == []  # merged away
    assert index.remove_chat("tg:a") == ["a:1"] and index.get("a:1") is None
    assert index.remove_older(2200.0) == ["b:1"] and len(index) == 2
    for i in range(3000):  # many removals compact the arrays; what is left is still found
        index.add(PhotoEntry(f"x:{i}", "tg:x", 2600.0, f"x:{i}", 2600.0, far ^ i))
    index.remove([f"x:{i}" for i in range(2990)])
    assert len(index) == 12 and {e.key for e, _ in index.near(far, t=2600.0, window_s=200)} >= {"c:1", "x:2999"}


# --- watched channels --------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("photos") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


def watcher(app, fake: FakeTelegramPreview, *, timeout_s: float = 10.0, max_bytes: int = 5 * 1024 * 1024,
            **kw) -> WatchService:
    photos = PreviewPhotos(fake.base_url, timeout_s=timeout_s, limits=ImageLimits(max_bytes=max_bytes))
    return WatchService(WatchStore(app.db), app.corroborator, PreviewReader(fake.base_url), request_gap_s=0,
                        photos=photos, **kw)


async def story_of(app, key: str) -> str:
    row = (await app.corroborator.store.get([key]))[key]
    return resolve_story(await app.corroborator.store.story_aliases(), row.story_id or row.id)


async def test_two_channels_posting_the_same_picture_are_one_story(app, tme):
    a, b, c = name(), name(), name()
    now = datetime.now(UTC)
    seed = 100 + next(_n)
    tme.image(f"{a}.jpg", jpeg(picture(seed), 92))
    tme.image(f"{b}.jpg", jpeg(picture(seed), 45, scale=0.6))  # the same picture, re-encoded and smaller
    tme.image(f"{c}.jpg", jpeg(picture(seed + 1), 92))  # another picture
    tme.channel(a, "Канал А")
    tme.post(a, "", photo=f"{a}.jpg", views="5.2K", at=now - timedelta(hours=3))  # a photo without a caption
    tme.channel(b, "Канал Б")
    tme.post(b, "Погода на выходные: солнечно и тепло, до +25", at=now - timedelta(hours=2))
    tme.post(b, "Вот что сейчас происходит", photo=f"{b}.jpg", views="1.1K", at=now - timedelta(hours=1))
    tme.channel(c, "Канал В")
    tme.post(c, "", photo=f"{c}.jpg", at=now - timedelta(minutes=30))
    w = watcher(app, tme)
    lines = await w.add([a, b, c])
    assert lines[0].startswith(f"Watching @{a}: 1 post stored"), lines
    assert lines[1].startswith(f"Watching @{b}: 2 posts stored") and lines[2].startswith(f"Watching @{c}: 1 post"), lines
    rows = await app.corroborator.store.get([f"telegram:@{a}:1", f"telegram:@{b}:2", f"telegram:@{c}:1"])
    assert rows[f"telegram:@{a}:1"].text == "" and rows[f"telegram:@{a}:1"].photo_hash is not None
    assert distance(rows[f"telegram:@{a}:1"].photo_hash, rows[f"telegram:@{b}:2"].photo_hash) <= MATCH_DISTANCE
    assert rows[f"telegram:@{a}:1"].permalink == f"https://t.me/{a}/1"
    story = await story_of(app, f"telegram:@{a}:1")
    assert await story_of(app, f"telegram:@{b}:2") == story  # one story, started by the earlier post
    assert await story_of(app, f"telegram:@{c}:1") != story

    # "Also reported by" for someone who sends the photo (re-encoded once more), without any text.
    asked = photo_hash(jpeg(picture(seed), 70, scale=0.8))
    also = await app.corroborator.lookup("", exclude_chats=[("telegram", 777)], photo=asked)
    assert also is not None and {r.link for r in also.items} == {f"https://t.me/{a}/1", f"https://t.me/{b}/2"}
    assert also.first_seen_in is not None and also.first_seen_in.link == f"https://t.me/{a}/1"
    assert also.tier == "high"  # two chats carry the very picture
    assert await app.corroborator.lookup("", photo=photo_hash(jpeg(picture(seed + 5)))) is None

    # The digest counts the picture's story in both channels, with the posts' links.
    digests = build_digests(app.settings, app)
    assert digests is not None
    until = time.time() + 60
    ranked = await digests.builder.stories(until - 86400, until)
    mine = [s for s in ranked if s.id == story]
    assert mine and set(mine[0].chats) == {f"telegram:@{a}", f"telegram:@{b}"}
    item = await digests.builder.item(mine[0], "ru")
    assert item is not None and item.text == "Вот что сейчас происходит"  # the post with text speaks for it
    assert {r.link for r in [item.first_seen_in, *item.reporters]} == {f"https://t.me/{a}/1", f"https://t.me/{b}/2"}

    # A restart reloads the photos from SQLite: a later post of the picture joins the same story.
    await app.corroborator.open()
    d = name()
    tme.image(f"{d}.jpg", jpeg(picture(seed), 60, scale=1.5))
    tme.channel(d, "Канал Г")
    tme.post(d, "", photo=f"{d}.jpg", at=now - timedelta(minutes=5))
    await w.add([d])
    assert await story_of(app, f"telegram:@{d}:1") == story

    # /watch remove forgets the channel's photos too: a lookup no longer finds them.
    await w.remove([a])
    also = await app.corroborator.lookup("", exclude_chats=[("telegram", 777)], photo=asked)
    assert also is not None and f"https://t.me/{a}/1" not in {r.link for r in also.items}
    await w.aclose()


async def test_photos_that_cannot_be_read_are_bounded_and_the_post_keeps_its_text(app, tme):
    ch = name()
    now = datetime.now(UTC)
    cap = 200_000
    tme.image(f"{ch}-huge.jpg", jpeg(picture(7), 95, scale=2.5))  # over the cap, with Content-Length
    tme.image(f"{ch}-stream.jpg", b"\xff\xd8\xff" + b"\x00" * (3 * cap), chunked=True)  # no Content-Length
    tme.image(f"{ch}-page.jpg", b"<html><body>Not Found</body></html>", content_type="text/html")
    tme.image(f"{ch}-slow.jpg", jpeg(picture(8)), delay=5.0)
    tme.image(f"{ch}-bomb.png", png_bomb(), content_type="image/png")
    tme.image(f"{ch}-error.jpg", b"", status=500)
    tme.image(f"{ch}-ok.jpg", jpeg(picture(9), 80, scale=0.5))
    assert len(jpeg(picture(7), 95, scale=2.5)) > cap
    kinds = ["huge", "stream", "page", "slow", "bomb", "error", "missing", "ok"]
    tme.channel(ch, "Плохие картинки")
    for i, kind in enumerate(kinds):
        ext = "png" if kind == "bomb" else "jpg"
        tme.post(ch, f"Пост {i} с картинкой {kind}: в городе открыли новый мост через реку",
                 photo=f"{ch}-{kind}.{ext}", at=now - timedelta(minutes=60 - i))
        tme.post(ch, "", photo=f"{ch}-{kind}.{ext}", at=now - timedelta(minutes=30 - i))  # the same, photo only
    w = watcher(app, tme, timeout_s=1.0, max_bytes=cap)
    started = time.monotonic()
    [line] = await w.add([ch])
    elapsed = time.monotonic() - started
    assert line.startswith(f"Watching @{ch}: 9 posts stored"), line  # 8 with text, and the one readable photo
    assert elapsed < 8.0, elapsed  # the slow photo waited 1 s, not 5
    keys = [f"telegram:@{ch}:{i}" for i in range(1, 17)]
    rows = await app.corroborator.store.get(keys)
    with_text = [rows[k] for k in keys[::2]]
    assert [r.photo_hash is not None for r in with_text] == [k == "ok" for k in kinds]
    assert [k for k in keys[1::2] if k in rows] == [f"telegram:@{ch}:16"]  # photo-only: only the readable one
    assert (await w.store.get(ch)).status == "ok"
    assert tme.image_requests.count(f"{ch}-ok.jpg") == 2
    await w.aclose()


# --- a reviewed photo answers its next forward --------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module")
async def tg(app, tme):
    fake = await FakeTelegram().start()
    chat = await queued_chat(app.engine, corroborator=app.corroborator,
                             admins=(str(ADMIN),), add_factchecks=app.kb.add, images=app.images, photos=PhotoMemory(app.db))
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    yield fake
    await bot.stop()
    await chat.aclose()
    await fake.stop()


async def answer(fake: FakeTelegram, uid: int, text: str | None = None, **kw) -> str:
    msg = fake.make_message(text, chat=fake.private_chat(uid), sender={"id": uid, "is_bot": False,
                                                                       "first_name": f"U{uid}"}, **kw)
    await fake.queue_message(msg)
    return (await fake.wait_for(lambda: fake.answer_to(msg["message_id"], CHECKING), timeout=90)).params["text"]


async def test_a_reviewed_photo_answers_the_next_forward_at_once(tg, app, tme):
    fake = tg
    seed = 500 + next(_n)
    a, b = name("kanal"), name("kanal")
    now = datetime.now(UTC)
    for ch, quality, scale, hours in ((a, 90, 1.0, 4), (b, 50, 0.7, 2)):  # two channels posted the photo
        tme.image(f"{ch}.jpg", jpeg(picture(seed), quality, scale=scale))
        tme.channel(ch, f"Канал {ch}")
        tme.post(ch, "", photo=f"{ch}.jpg", views="2K", at=now - timedelta(hours=hours))
    w = watcher(app, tme)
    await w.add([a, b])

    first = await answer(fake, MEMBER, caption="Это фото сделано вчера на вокзале в Харькове",
                         photo=jpeg(picture(seed), 85))
    assert_valid_telegram_html(first)
    check_id = first.split("<code>")[-1].split("</code>")[0]
    assert len(check_id) == 10, first
    assert f'<a href="https://t.me/{a}/1">@{a} (2k views)</a>' in first, first  # the same photo, watched
    assert f'<a href="https://t.me/{b}/1">@{b} (2k views)</a>' in first, first

    recorded = await answer(fake, ADMIN, f"/review {check_id} False https://factcheck.example/kharkiv-photo")
    assert recorded.startswith(f"Recorded “False” for check {check_id}") and "Its photo is remembered" in recorded

    # Another user forwards the photo, re-encoded and smaller, without any text: the review answers at once.
    again = await answer(fake, MEMBER + 1, photo=jpeg(picture(seed), 40, scale=0.5))
    assert_valid_telegram_html(again)
    assert "«False»" in again and "https://factcheck.example/kharkiv-photo" in again, again
    assert "Ложь" in again and "Это фото проверили администраторы бота" in again and "Харькове" in again, again  # the
    # review's language: the photo came without a word of the asker's
    assert f'@{a} (2k views)</a>' in again and f'@{b} (2k views)</a>' in again, again
    # With a caption of its own, in Ukrainian: the same verdict, in the asker's language.
    uk = await answer(fake, MEMBER + 2, caption="Це фото з вокзалу", photo=jpeg(picture(seed), 60))
    assert "https://factcheck.example/kharkiv-photo" in uk and "перевірили адміністратори" in uk, uk

    # A photo nobody reviewed, without text, is read by the OCR as before. A plain one: OCR guesses at a busy
    # picture's shapes, and what it guesses would then be matched as text, which is not what this test is about.
    other = await answer(fake, MEMBER + 3, photo=jpeg(Image.new("RGB", (960, 720), (200, 205, 210)), 85))
    assert "factcheck.example" not in other and "администраторы" not in other, other
    assert "Text read from the image" in other or other.startswith("I found no text in that image"), other
    await w.aclose()
