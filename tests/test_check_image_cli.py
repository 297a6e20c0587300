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
