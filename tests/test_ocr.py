"""Reading screenshots: the real Tesseract on images rendered here, the limits checked from headers before
anything decodes, the time budget, a missing engine, and what a check request with an image becomes in
the durable queue."""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import pytest
from aiohttp import web
from PIL import Image

from bot.requests import CheckRequest, IncomingMessage

from bot.router import route
from bot.images import ImageRef, combine, read_image_file, refusal_text, tidy
from bot.queue import request_from_payload, request_to_payload
from bot.settings import Settings
from core.intake.image_limits import ImageLimits, ImageTooLarge, NotAnImage, TooManyPixels, inspect_image, mime_is_image
from core.intake.ocr import OcrTimeout, OcrUnavailable, TesseractOcr, fix_homoglyphs
from evals.bench_ocr import VARIANTS, cer, render
from tests.fakes.loopback import serve_on_loopback

CLEAN = VARIANTS[0]


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header declares width x height, with one tiny IDAT: what a decompression bomb looks
    like to anything that reads the header first."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def png_bomb(side: int = 20_000) -> bytes:
    """A real one: side x side 1-bit pixels of zeros, ~50 MB of rows deflated to ~50 KB."""
    comp = zlib.compressobj(9)
    row = b"\0" * (side // 8 + 1)
    body = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    head = png_header_only(side, side)
    ihdr_end = 8 + 25
    idat = struct.pack(">I", len(body)) + b"IDAT" + body + struct.pack(">I", zlib.crc32(b"IDAT" + body))
    return head[:ihdr_end] + idat + head[-12:]


# --- limits, from the header -----------------------------------------------------------------------


def test_formats_and_dimensions_come_from_the_header() -> None:
    info = inspect_image(render("Hello", CLEAN), ImageLimits())
    assert info.format == "PNG" and info.width == 900
    jpeg = io.BytesIO()
    Image.new("RGB", (640, 480), "white").save(jpeg, "JPEG")
    assert inspect_image(jpeg.getvalue(), ImageLimits()).format == "JPEG"
    webp = io.BytesIO()
    Image.new("RGB", (320, 200), "white").save(webp, "WEBP")
    assert (inspect_image(webp.getvalue(), ImageLimits()).width, inspect_image(webp.getvalue(), ImageLimits()).height) \
        == (320, 200)


@pytest.mark.parametrize("data", [b"", b"just text", b"%PDF-1.7\n...", b"GIF89a\x01\x00\x01\x00",
                                  b"http://127.0.0.1:9/x.png\n"])
def test_anything_but_png_jpeg_webp_is_not_an_image(data: bytes) -> None:
    with pytest.raises(NotAnImage):
        inspect_image(data, ImageLimits())


def test_a_decompression_bomb_is_refused_before_decoding() -> None:
    bomb = png_bomb()
    assert len(bomb) < 200_000  # small on the wire, 400 megapixels once decoded
    with pytest.raises(TooManyPixels) as caught:
        inspect_image(bomb, ImageLimits(max_pixels=25_000_000))
    assert "25 megapixels" in refusal_text(caught.value)
    # past Pillow's own bomb threshold too: still our sentence, not Pillow's exception
    with pytest.raises(TooManyPixels):
        inspect_image(png_header_only(60_000, 60_000), ImageLimits())


def test_bytes_over_the_cap_are_refused_with_the_limit_in_the_sentence() -> None:
    with pytest.raises(ImageTooLarge) as caught:
        inspect_image(render("Hello", CLEAN), ImageLimits(max_bytes=1000))
    assert refusal_text(caught.value) == "That image is too large for me to read: the limit is 0.00095 MB."
    with pytest.raises(ImageTooLarge) as caught:
        ImageLimits(max_bytes=10 * 1024 * 1024).refuse_size(11 * 1024 * 1024)
    assert "10 MB" in refusal_text(caught.value) and "10 МБ" in refusal_text(caught.value, "ru")


def test_declared_types() -> None:
    assert mime_is_image("image/png") and mime_is_image("image/jpeg") and mime_is_image("image/webp")
    assert mime_is_image("") and mime_is_image(None)  # unknown: the bytes decide
    assert not mime_is_image("application/pdf") and not mime_is_image("image/gif")


# --- the real engine ----------------------------------------------------------------------------------


async def test_tesseract_reads_english_russian_and_ukrainian() -> None:
    ocr = TesseractOcr()
    assert await ocr.languages() == ["eng", "rus", "ukr"]
    for text in ("The 5G rollout caused the coronavirus outbreak in several large cities.",
                 "Прививки вызывают аутизм у детей, сообщается в докладе.",
                 "ТЕРМІНОВО: уряд вимкне інтернет на тиждень у березні."):
        read = await ocr.read(render(text, CLEAN))
        assert cer(text, read.text) <= 0.05, read.text
        assert read.width == 900 and read.seconds > 0


async def test_tesseract_never_sees_what_is_not_an_image() -> None:
    """Tesseract opens input it cannot decode as a list of file names or URLs (it links libcurl): a
    "photo" that is a URL must be refused before it, so the server here is never asked."""
    hits: list[str] = []

    async def probe(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(body=render("fetched", CLEAN), content_type="image/png")

    app = web.Application()
    app.router.add_get("/{name}", probe)
    runner, port = await serve_on_loopback(app)
    try:
        with pytest.raises(NotAnImage):
            await TesseractOcr().read(f"http://127.0.0.1:{port}/probe.png\n".encode())
    finally:
        await runner.cleanup()
    assert hits == []


async def test_the_time_budget_kills_tesseract() -> None:
    page = render(" ".join(["The bridge was closed after engineers found cracks in its pillars."] * 60), CLEAN)
    ocr = TesseractOcr(timeout_s=0.05)
    with pytest.raises(OcrTimeout) as caught:
        await ocr.read(page)
    assert "took too long" in refusal_text(caught.value)


async def test_a_missing_tesseract_turns_image_checks_off(tmp_path: Path) -> None:
    ocr = TesseractOcr(str(tmp_path / "no-such-tesseract"))
    assert not await ocr.available()
    with pytest.raises(OcrUnavailable) as caught:
        await ocr.read(render("Hello", CLEAN))
    assert "Image checks are off" in refusal_text(caught.value)
    assert "выключена" in refusal_text(caught.value, "ru") and "вимкнено" in refusal_text(caught.value, "uk")


async def test_only_installed_languages_are_asked_for() -> None:
    assert await TesseractOcr(langs="eng+klingon").languages() == ["eng"]
    assert not await TesseractOcr(langs="klingon").available()


def test_cyrillic_words_spelled_in_latin_look_alikes_are_fixed() -> None:
    assert fix_homoglyphs("TEPMIHOBO: вода з лимоном вилікує грип") == "ТЕРМІНОВО: вода з лимоном вилікує грип"
    # `I` is the Ukrainian `І` only in a text with Ukrainian letters: here it may be a Latin word's
    assert fix_homoglyphs("TEPMIHOBO: вода с лимоном") == "TEPMIHOBO: вода с лимоном"
    assert fix_homoglyphs("у п'ятницю на пiвночi країни") == "у п'ятницю на півночі країни"  # mixed scripts
    assert fix_homoglyphs("Прививки вызывают аутизм y детей") == "Прививки вызывают аутизм у детей"
    assert fix_homoglyphs("у п'ятницю Ha півночі") == "у п'ятницю На півночі"
    assert fix_homoglyphs("Вакцины от COVID, сообщает BBC, OK") == "Вакцины от COVID, сообщает BBC, OK"
    assert fix_homoglyphs("The 5G rollout caused the coronavirus outbreak") == \
        "The 5G rollout caused the coronavirus outbreak"


def test_tidy_and_combine() -> None:
    assert tidy("  Line  one \f\n\n\n  line two  \n") == "Line one\n\nline two"
    assert tidy("©® Daily News @daily · 2h\n♡ 12 — ok") == "Daily News @daily · 2h\n12 — ok"
    assert combine("  caption ", "image text") == "caption\n\nimage text"
    assert combine("", "image text") == "image text" and combine("caption", "") == "caption"


async def test_a_russian_text_is_read_again_without_ukrainian() -> None:
    from tests.test_check_image_cli import russian_post

    read = await TesseractOcr().read(russian_post())
    assert "Вышки 5G распространяют" in read.text, read.text  # with Ukrainian loaded: "Вьшки 5С"
    ukrainian = "ТЕРМІНОВО: уряд вимкне інтернет на тиждень у березні."
    assert cer(ukrainian, (await TesseractOcr().read(render(ukrainian, CLEAN))).text) <= 0.05


def test_a_posts_frame_is_not_its_text() -> None:
    post = "Труха Украина\n\nСРОЧНО! Вышки 5G распространяют\nкоронавирус. Перешлите всем,\n\n015.2К 12:41"
    assert tidy(post) == "СРОЧНО! Вышки 5G распространяют\nкоронавирус. Перешлите всем,"
    assert tidy("👁 15.2K 12:41\nedited 9:05") == ""
    # a line that only looks short, and one sentence with a time in it, stay
    assert tidy("Это фейк.\nВышки 5G распространяют коронавирус") == "Это фейк.\nВышки 5G распространяют коронавирус"
    assert tidy("Взрыв в Киеве в 12:41, сообщают местные") == "Взрыв в Киеве в 12:41, сообщают местные"


async def test_an_image_file_from_disk(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, ocr_max_bytes=10_000)  # type: ignore[call-arg]
    small = tmp_path / "a.png"
    small.write_bytes(render("Hi", CLEAN))
    assert await read_image_file(small, settings) == small.read_bytes()
    big = tmp_path / "big.png"
    big.write_bytes(b"\0" * 20_000)
    with pytest.raises(ImageTooLarge):
        await read_image_file(big, settings)
    with pytest.raises(Exception) as caught:
        await read_image_file(tmp_path / "missing.png", settings)
    assert "could not open the image file" in refusal_text(caught.value)  # type: ignore[arg-type]


# --- requests ------------------------------------------------------------------------------------------


def test_an_image_request_survives_the_durable_queue() -> None:
    ref = ImageRef("telegram", "BQACAgIAAxkBAAI0001", mime="image/png", size=1234, name="shot.png")
    req = CheckRequest(text="", chat_id=42, target_id=7, image=ref)
    payload = json.loads(json.dumps(request_to_payload(req, {"chat_id": 42})))
    assert request_from_payload(payload) == req
    old = {"request": {"text": "hi", "chat_id": 1, "target_id": 2}, "where": {}}  # a job from before images
    assert request_from_payload(old).image is None


def test_route_checks_images_with_or_without_a_caption() -> None:
    ref = ImageRef("telegram", "F1", mime="image/jpeg")
    photo = IncomingMessage("telegram", 1, "private", 10, "", image=ref)
    action = route(photo, "tipline_bot")
    assert isinstance(action, CheckRequest) and action.image == ref and action.text == ""
    group_photo = IncomingMessage("telegram", -5, "group", 11, "", image=ref)
    assert route(group_photo, "tipline_bot") is None  # group chatter, even with a picture
    reply = IncomingMessage("telegram", -5, "group", 12, "/check", reply_to=group_photo)
    action = route(reply, "tipline_bot")
    assert isinstance(action, CheckRequest) and action.image == ref and action.target_id == 11
    captioned = IncomingMessage("telegram", -5, "group", 13, "/check", image=ref)
    action = route(captioned, "tipline_bot")
    assert isinstance(action, CheckRequest) and action.image == ref and action.target_id == 13
