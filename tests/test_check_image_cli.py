"""`tipline check --image PATH [--json] [CAPTION]` as a user runs it: a real process, the real Tesseract and
engine; a picture it cannot read ends in the one sentence a chat user would get, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from evals.bench_ocr import VARIANTS, render
from tests.test_cli import assert_clean_failure, env, run  # noqa: F401 (env is a fixture)

CLAIM = "The 5G rollout caused the coronavirus outbreak"


def test_check_image_prints_the_card_with_the_text_read(env, tmp_path: Path):  # noqa: F811
    shot = tmp_path / "shot.png"
    shot.write_bytes(render(CLAIM, VARIANTS[5]))  # dark mode
    proc = run(["check", "--image", str(shot)], env)
    assert proc.returncode == 0, proc.stderr
    assert f"Text read from the image: “{CLAIM}”" in proc.stdout and "False" in proc.stdout
    proc = run(["check", "--json", "--image", str(shot), "Is", "this", "true?"], env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["image_text"] == CLAIM and data["text"] == f"Is this true?\n\n{CLAIM}"
    assert data["verdict"] == "REFUTED"


def russian_post() -> bytes:
    """A Telegram channel post as a screenshot: the channel's name above, the post, views and time below."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    from evals.bench_ocr import FONT_DIR

    lines = ["Труха⚡️Украина", "", "СРОЧНО! Вышки 5G распространяют", "коронавирус. Перешлите всем,",
             "пока не удалили!!!", "", "👁 15.2K   12:41"]
    font = ImageFont.truetype(str(FONT_DIR / "DejaVuSans.ttf"), 28)
    im = Image.new("RGB", (620, 60 + 42 * len(lines)), "white")
    draw = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        draw.text((20, 20 + 42 * i), line, fill="black", font=font)
    out = io.BytesIO()
    im.save(out, "PNG")
    return out.getvalue()


def test_a_russian_channel_post_screenshot_with_a_call_to_share_is_false(env, tmp_path: Path):  # noqa: F811
    shot = tmp_path / "post.png"
    shot.write_bytes(russian_post())
    proc = run(["check", "--json", "--image", str(shot)], env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["image_text"].startswith("СРОЧНО! Вышки 5G распространяют") and "12:41" not in data["image_text"]
    assert data["verdict"] == "REFUTED" and data["language"] == "ru"


def test_check_image_refusals_are_one_sentence(env, tmp_path: Path):  # noqa: F811
    text_file = tmp_path / "notes.png"
    text_file.write_text("not an image at all")
    assert "only read text from PNG, JPEG or WebP" in assert_clean_failure(run(["check", "--image", str(text_file)], env))
    assert "could not open the image file" in assert_clean_failure(
        run(["check", "--image", str(tmp_path / "missing.png")], env))
    shot = tmp_path / "shot.png"
    shot.write_bytes(render(CLAIM, VARIANTS[0]))
    off = run(["check", "--image", str(shot)], {**env, "TIPLINE_OCR_BINARY": str(tmp_path / "no-tesseract")})
    assert "Image checks are off" in assert_clean_failure(off)
    small = run(["check", "--image", str(shot)], {**env, "TIPLINE_OCR_MAX_PIXELS": "1000"})
    assert "too many pixels" in assert_clean_failure(small)
    assert "TEXT to check, or --image PATH" in assert_clean_failure(run(["check"], env))
