"""Text is made safe once, where it enters (schema/text.py): lone surrogates, bytes that are not UTF-8,
NUL and control characters never reach the tokenizer, SQLite or the platforms (issue: hostile input)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.requests import CheckRequest, IncomingMessage
from core.intake.message import EmptyInput, intake
from schema.models import FactCheck
from schema.text import REPLACEMENT, decode_bytes, safe_text
from storage.messages import StoredMessage
from tests.conftest import model_cache
from tests.test_http_api import TOKEN, server  # noqa: F401  (fixture)


@pytest.mark.parametrize("raw, want", [
    ("plain text", "plain text"),
    ("\ud800 5G", f"{REPLACEMENT} 5G"),
    ("a\x00b\x07c\x9fd", "abcd"),
    ("tab\tand\nnewline", "tab\tand\nnewline"),
    ("emoji 🙂 and кириллица", "emoji 🙂 and кириллица"),
])
def test_safe_text(raw, want):
    out = safe_text(raw)
    assert out == want
    out.encode("utf-8")  # valid everywhere downstream


def test_bytes_that_are_not_utf8_decode_with_replacement():
    assert decode_bytes(b"\xff\xfe 5G causes covid") == f"{REPLACEMENT}{REPLACEMENT} 5G causes covid"


def test_intake_cleans_surrogates_and_refuses_binary_with_a_sentence():
    assert intake("\ud800 5G towers cause COVID").text.endswith("5G towers cause COVID")
    assert intake(b"\xff\xfe 5G towers cause COVID").text.endswith("5G towers cause COVID")
    noise = bytes(range(128, 256)) * 50
    with pytest.raises(EmptyInput, match="binary data"):
        intake(noise)


def test_every_entry_type_is_safe():
    msg = IncomingMessage(platform="telegram", chat_id=1, chat_kind="private", message_id=1,
                          text="\ud800hi\x00", forwarded_from="\udcffchan")
    assert msg.text == f"{REPLACEMENT}hi" and msg.forwarded_from == f"{REPLACEMENT}chan"
    assert CheckRequest(text="x\ud800", chat_id=1, target_id=1).text == f"x{REPLACEMENT}"
    fc = FactCheck(claim="Vaccines\x00 cause \ud800autism", url="https://e.org/\ud800", appearances=["\udc00"])
    assert fc.claim == f"Vaccines cause {REPLACEMENT}autism" and fc.appearances == [REPLACEMENT]
    stored = StoredMessage(id="t:1:1", platform="t", chat_id="1", message_id="1", text="\ud800", ts=0.0)
    assert stored.text == REPLACEMENT


def test_cli_reads_bytes_that_are_not_text_and_answers_in_a_sentence(tmp_path, model_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(tmp_path / "data"), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                "TIPLINE_GDELT_URL": "", "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir))})
    run = [sys.executable, "-m", "adapters.main", "check", "-"]
    noise = subprocess.run(run, input=bytes(range(128, 256)) * 100, capture_output=True, env=env, timeout=300,
                           cwd=Path(__file__).resolve().parent.parent)
    assert noise.returncode != 0 and b"binary data" in noise.stderr and b"Traceback" not in noise.stderr


async def test_rest_body_with_a_lone_surrogate_is_checked_not_a_500(server):  # noqa: F811
    base, http = server
    body = b'{"text": "\\ud800 Vaccines cause autism"}'
    async with http.post(f"{base}/v1/checks", data=body, headers={
            "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}) as r:
        assert r.status in (201, 202), await r.text()
