"""Screenshots end to end: a picture of a claim sent to the bot on Telegram (photo or file, private chat or
`/check` as a reply in a group) and on Slack (a file shared in a DM, an upload with a mention) is downloaded
through the platform's real API calls on the fakes (getFile and the file URL; files.info and url_private
with the bot token), read by the real Tesseract, and checked by the real engine; the card says the text
was read from the image. Bad images get one sentence, and a missing Tesseract turns image checks off
with a sentence instead of a failure.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.slack import SlackBot, SlackConfig
from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app, build_image_reader
from bot.check_service import CHECKING, CheckService
from bot.chat_app import ChatApp
from bot.queue import JobQueue
from evals.bench_ocr import VARIANTS, render
from schema.models import Verdict
from storage.jobs import JobStore
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.fakes.telegram_api import FakeTelegram
from tests.test_slack import event_body, post

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIM_EN = "The 5G rollout caused the coronavirus outbreak"
CLAIM_RU = "Вышки 5G распространяют коронавирус"
TG_CHECK_ID = re.compile(r"(?:Check id|Номер проверки): <code>([0-9a-f]+)</code>")
SLACK_CHECK_ID = re.compile(r"Check id: `([0-9a-f]+)`")
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def screenshot(text: str, variant: int = 0) -> bytes:
    return render(text, VARIANTS[variant])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("images") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


# --- Telegram ---------------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tg():
    """One fake for the module's queued bot: the queue's idempotency keys (update id, chat, message id)
    must not repeat across tests, as a fresh fake's counters would."""
    server = await FakeTelegram().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def tg_alone():
    """A fake of its own, for a test that runs a bot with other settings."""
    server = await FakeTelegram().start()
    yield server
    await server.stop()


async def _telegram(tg: FakeTelegram, chat: ChatApp, queue: JobQueue | None = None):
    bot = TelegramBot(TelegramConfig(token=tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    if queue is not None:
        await queue.start()
    return bot


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tg_bot(tg: FakeTelegram, app):
    """As `tipline run` runs it: every check a job in the durable queue (the image goes in as a reference)."""
    queue = JobQueue(JobStore(app.db), CheckService(app.engine, progress_interval=0.0, images=app.images), workers=2)
    bot = await _telegram(tg, ChatApp(queue, add_factchecks=app.kb.add), queue)
    yield bot
    await queue.stop()
    await bot.stop()


def tg_answer(tg: FakeTelegram, message_id: int):
    """The last text of the bot's reply to `message_id` once it is no longer a progress message."""
    def find():
        for sent in tg.replies_to(message_id):
            if not isinstance(sent.result, dict):
                continue
            texts = [sent.params["text"]] + [e.params["text"] for e in tg.edits_of(sent.result["message_id"])]
            if not texts[-1].startswith(CHECKING):
                return texts
        return None
    return find


async def test_telegram_private_photo_without_caption_is_read_and_checked(tg, tg_bot, app):
    msg = await tg.send_user_message(photo=screenshot(CLAIM_EN))
    texts = await tg.wait_for(tg_answer(tg, msg["message_id"]), timeout=60)
    assert texts[0] == f"{CHECKING} reading the text in the image"  # said at once, before the OCR
    card = texts[-1]
    assert f"Text read from the image: “{CLAIM_EN}”" in card
    assert "Checked:" not in card  # no caption: only what was read is quoted
    stored = await app.db.get_check(TG_CHECK_ID.search(card)[1])
    assert stored.verdict == Verdict.REFUTED and stored.image_text == CLAIM_EN and stored.text == CLAIM_EN
    # the largest of the photo's sizes was downloaded, through getFile and the file URL
    largest, thumbnail = msg["photo"][-1]["file_id"], msg["photo"][0]["file_id"]
    asked = [c.params["file_id"] for c in tg.called("getFile")]
    assert largest in asked and thumbnail not in asked
    assert tg.files[largest][0] in tg.downloads and tg.files[thumbnail][0] not in tg.downloads


async def test_telegram_image_file_with_a_russian_caption_gets_a_russian_card(tg, tg_bot, app):
    msg = await tg.send_user_message(caption="Это правда?", document=(screenshot(CLAIM_RU, 5), "image/png", "s.png"))
    card = (await tg.wait_for(tg_answer(tg, msg["message_id"]), timeout=60))[-1]
    assert "Текст, распознанный на изображении: «Вышки 5G распространяют коронавирус»" in card
    assert "Проверено: «Это правда?»" in card
    stored = await app.db.get_check(TG_CHECK_ID.search(card)[1])
    assert stored.language == "ru" and stored.text == f"Это правда?\n\n{CLAIM_RU}"


async def test_telegram_check_as_a_reply_to_a_photo_in_a_group(tg, tg_bot, app):
    group = tg.group_chat()
    original = tg.make_message(chat=group, sender={"id": 55, "is_bot": False, "first_name": "Uncle"},
                               photo=screenshot(CLAIM_EN, 7))
    await tg.send_user_message("/check", chat=group, reply_to=original)
    card = (await tg.wait_for(tg_answer(tg, original["message_id"]), timeout=60))[-1]
    assert "Text read from the image" in card and "False" in card


@pytest.mark.parametrize("document, sentence", [
    ((b"%PDF-1.7\n%...", "application/pdf", "claim.pdf"), "I can only read text from PNG, JPEG or WebP images"),
    ((b"GIF89a-not-really", "image/png", "lying.png"), "I can only read text from PNG, JPEG or WebP images"),
    ((screenshot(" "), "image/png", "blank.png"), "I found no text in that image"),
])
async def test_telegram_files_that_cannot_be_checked_get_one_sentence(tg, tg_bot, document, sentence):
    msg = await tg.send_user_message(document=document)
    texts = await tg.wait_for(tg_answer(tg, msg["message_id"]), timeout=60)
    assert texts[-1].startswith(sentence) and texts[-1].count(".") == 1
    if document[1] == "application/pdf":  # refused by its declared type, never downloaded
        assert msg["document"]["file_id"] not in [c.params["file_id"] for c in tg.called("getFile")]


async def test_telegram_a_file_over_the_size_cap_is_not_downloaded(tg_alone, app, tmp_path: Path):
    tg = tg_alone
    settings = app.settings.model_copy(update={"ocr_max_bytes": 1000})
    chat = await queued_chat(app.engine, images=build_image_reader(settings))
    bot = await _telegram(tg, chat)
    try:
        msg = await tg.send_user_message(document=(screenshot(CLAIM_EN), "image/png", "big.png"))
        texts = await tg.wait_for(tg_answer(tg, msg["message_id"]), timeout=60)
    finally:
        await bot.stop()
    assert texts[-1] == "That image is too large for me to read: the limit is 0.00095 MB."
    assert not tg.downloads


async def test_telegram_without_tesseract_image_checks_are_off(tg_alone, app, tmp_path: Path):
    tg = tg_alone
    settings = app.settings.model_copy(update={"ocr_binary": str(tmp_path / "no-tesseract-here")})
    chat = await queued_chat(app.engine, images=build_image_reader(settings))
    bot = await _telegram(tg, chat)
    try:
        bare = await tg.send_user_message(photo=screenshot(CLAIM_EN))
        captioned = await tg.send_user_message(caption="Drinking bleach cures COVID-19", photo=screenshot(CLAIM_EN))
        off = (await tg.wait_for(tg_answer(tg, bare["message_id"]), timeout=60))[-1]
        card = (await tg.wait_for(tg_answer(tg, captioned["message_id"]), timeout=60))[-1]
    finally:
        await bot.stop()
    assert off.startswith("Image checks are off on this server")
    # with a caption, the caption is checked and the card says why the image was not
    assert "Checked: “Drinking bleach cures COVID-19”" in card and "Image checks are off" in card
    assert "Text read from the image" not in card
    assert not tg.downloads  # nothing fetched that nobody could read


# --- Slack ------------------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module")
async def slack():
    server = await FakeSlack().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def slack_bot(slack: FakeSlack, app):
    config = SlackConfig(bot_token=slack.token, signing_secret=SECRET, api_url=slack.base_url, port=0)
    bot = SlackBot(config, await queued_chat(app.engine, add_factchecks=app.kb.add, images=app.images))
    await bot.start()
    yield bot
    await bot.stop()


def _ts() -> str:
    return f"{time.time():.6f}"


def slack_answer(slack: FakeSlack, channel: str, thread_ts: str):
    def find():
        for sent in slack.posts_in_thread(channel, thread_ts):
            texts = [sent.params.get("text", "")] + [u.params.get("text", "") for u in
                                                       slack.updates_of(channel, sent.result.get("ts", ""))]
            blocks = [json.dumps(u.params.get("blocks", []), ensure_ascii=False)
                      for u in slack.updates_of(channel, sent.result.get("ts", ""))]
            if not texts[-1].startswith(CHECKING):
                return texts, blocks
        return None
    return find


async def test_slack_screenshot_shared_in_a_dm_is_read_and_checked(slack, slack_bot, app):
    file = slack.add_file(screenshot(CLAIM_EN), "image/png", "Screenshot 2026-11-24.png")
    ts = _ts()
    event = {"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0ALICE",
             "user": "U0ALICE", "text": "", "ts": ts, "team": TEAM_ID, "files": [file], "upload": True}
    status, _ = await post(slack_bot, event_body(event))
    assert status == 200
    texts, blocks = await slack.wait_for(slack_answer(slack, "D0ALICE", ts), timeout=60)
    assert texts[0] == f"{CHECKING} reading the text in the image"
    assert f"Text read from the image: “{CLAIM_EN}”" in texts[-1] and "Text read from the image" in blocks[-1]
    stored = await app.db.get_check(SLACK_CHECK_ID.search(blocks[-1])[1])
    assert stored.verdict == Verdict.REFUTED and stored.image_text == CLAIM_EN
    assert [c.params["file"] for c in slack.called("files.info")] == [file["id"]]
    assert slack.downloads == [(file["id"], f"Bearer {slack.token}")]  # url_private with the bot token


async def test_slack_mention_with_an_uploaded_image(slack, slack_bot):
    file = slack.add_file(screenshot(CLAIM_RU), "image/jpeg", "photo.jpg")
    ts = _ts()
    event = {"type": "app_mention", "user": "U0ALICE", "text": f"<@{BOT_USER_ID}>", "ts": ts,
             "channel": "C0GENERAL", "team": TEAM_ID, "files": [file]}
    await post(slack_bot, event_body(event))
    texts, _ = await slack.wait_for(slack_answer(slack, "C0GENERAL", ts), timeout=60)
    assert "Вышки 5G распространяют коронавирус" in texts[-1]


async def test_slack_a_non_image_file_gets_a_sentence_and_is_not_downloaded(slack, slack_bot):
    file = slack.add_file(b"a,b\n1,2\n", "text/csv", "data.csv")
    ts = _ts()
    event = {"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0ALICE",
             "user": "U0ALICE", "text": "", "ts": ts, "team": TEAM_ID, "files": [file]}
    await post(slack_bot, event_body(event))
    texts, _ = await slack.wait_for(slack_answer(slack, "D0ALICE", ts), timeout=60)
    assert texts[-1] == "I can only read text from PNG, JPEG or WebP images, and this file is not one."
    assert not slack.downloads


async def test_slack_a_file_larger_than_slack_says_is_cut_off(slack, app):
    """files.info says 500 bytes, url_private serves 60 KB: the download stops at the cap."""
    settings = app.settings.model_copy(update={"ocr_max_bytes": 4096})
    config = SlackConfig(bot_token=slack.token, signing_secret=SECRET, api_url=slack.base_url, port=0)
    bot = SlackBot(config, await queued_chat(app.engine, images=build_image_reader(settings)))
    await bot.start()
    try:
        data = screenshot(" ".join([CLAIM_EN] * 20))
        assert len(data) > 4096
        file = slack.add_file(data, "image/png", "big.png", size=500)
        ts = _ts()
        event = {"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0ALICE",
                 "user": "U0ALICE", "text": "", "ts": ts, "team": TEAM_ID, "files": [file]}
        await post(bot, event_body(event))
        texts, _ = await slack.wait_for(slack_answer(slack, "D0ALICE", ts), timeout=60)
    finally:
        await bot.stop()
    assert texts[-1] == "That image is too large for me to read: the limit is 0.0039 MB."


async def test_slack_check_this_message_on_a_screenshot(slack, slack_bot):
    """The message shortcut on someone's message that is only an image: the image is what gets checked."""
    from urllib.parse import urlencode

    from adapters.slack import SHORTCUT_CHECK

    file = slack.add_file(screenshot(CLAIM_EN, 6), "image/png", "rumour.png")
    ts = _ts()
    message = {"type": "message", "user": "U0CAROL", "text": "", "ts": ts, "team": TEAM_ID, "files": [file]}
    payload = {"type": "message_action", "token": "legacy", "action_ts": _ts(), "callback_id": SHORTCUT_CHECK,
               "trigger_id": f"{ts}.shortcut", "response_url": "", "team": {"id": TEAM_ID, "domain": "t"},
               "channel": {"id": "C0GENERAL", "name": "rumours"},
               "user": {"id": "U0ALICE", "username": "alice", "team_id": TEAM_ID}, "message_ts": ts,
               "message": message}
    status, _ = await post(slack_bot, urlencode({"payload": json.dumps(payload)}),
                           content_type="application/x-www-form-urlencoded")
    assert status == 200
    texts, _ = await slack.wait_for(slack_answer(slack, "C0GENERAL", ts), timeout=60)
    assert f"Text read from the image: “{CLAIM_EN}”" in texts[-1]
