"""A fact-check file (.json/.csv/.tsv) an admin sends the Telegram bot in a private chat is ingested
while the bot runs, through the real getFile and file download on the fake Bot API, and answered with
the report; anyone else's file, or a file in a group, is not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.telegram import TelegramBot, TelegramConfig
from bot.admins import Admins
from bot.app import App, build_app
from bot.check_service import CheckService
from bot.chat_app import ChatApp
from bot.factcheck_files import FactCheckFiles
from bot.queue import JobQueue
from storage.jobs import JobStore
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_api import FakeTelegram

ADMIN = {"id": 4242, "is_bot": False, "first_name": "Alice", "username": "alice", "language_code": "en"}
STRANGER = {"id": 5151, "is_bot": False, "first_name": "Bob", "username": "bob", "language_code": "en"}
CSV = ("claim,url,rating,publisher,date\n"
       "Eating carrots lets you see in total darkness,https://fc.example/carrots,False,FC Example,2021-02-03\n"
       ",https://fc.example/empty,False,FC Example,2021-02-03\n"
       "A second claim about tides and the moon,https://fc.example/tides,True,FC Example,2022-01-01\n").encode()


@pytest.fixture
async def app(tmp_path: Path, model_dir: Path, seeded: SeededDataDir) -> AsyncIterator[App]:
    async with build_app(isolated_settings(seeded.copy_to(tmp_path / "data"), model_dir, admins=["4242"])) as a:
        yield a


@pytest.fixture
async def tg(app: App) -> AsyncIterator[FakeTelegram]:
    fake = await FakeTelegram().start()
    queue = JobQueue(JobStore(app.db), CheckService(app.engine, progress_interval=0.0), workers=1)
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0),
                      ChatApp(queue, add_factchecks=app.kb.add),
                      files=FactCheckFiles(app.kb, Admins(app.settings.admins)))
    await bot.start()
    await queue.start()
    yield fake
    await queue.stop()
    await bot.stop()
    await fake.stop()


def _replies(tg: FakeTelegram, message_id: int, n: int) -> Any:
    """The bot's reply to `message_id` and its edits ("Adding…" becomes the report), once there are `n`."""
    def find() -> list[str] | None:
        texts: list[str] = []
        for sent in tg.replies_to(message_id):
            texts.append(sent.params["text"])
            if isinstance(sent.result, dict):
                texts += [e.params["text"] for e in tg.edits_of(sent.result["message_id"])]
        return texts if len(texts) >= n else None
    return find


async def test_an_admins_csv_is_ingested_and_matched_at_once(tg: FakeTelegram, app: App) -> None:
    before = await app.kb.count()
    msg = await tg.send_user_message(document=(CSV, "text/csv", "checks.csv"), sender=ADMIN)
    texts = await tg.wait_for(_replies(tg, msg["message_id"], 2), timeout=60)
    assert texts[0] == "Adding the fact-checks in checks.csv…"
    assert texts[1].startswith(f"checks.csv: 2 new, 0 updated, 1 skipped. The knowledge base now has {before + 2} "
                               "fact-checks.\ntelegram:checks.csv:3: ")
    assert [c.params["file_id"] for c in tg.called("getFile")] == [msg["document"]["file_id"]]
    result = await app.engine.check("You can see in total darkness if you eat carrots")
    assert result.matches[0].url == "https://fc.example/carrots"


async def test_a_bad_file_gets_one_sentence_in_the_admins_language(tg: FakeTelegram, app: App) -> None:
    before = await app.kb.count()
    msg = await tg.send_user_message(document=(b'{"@type": "ClaimReview", "claimReviewed": "x"', "application/json",
                                               "broken.json"), sender={**ADMIN, "language_code": "ru"})
    texts = await tg.wait_for(_replies(tg, msg["message_id"], 2), timeout=60)
    assert texts[0] == "Добавляю фактчеки из broken.json…"
    assert texts[1].startswith("Из broken.json ничего не добавлено: ") and "\n" not in texts[1]
    assert await app.kb.count() == before


async def test_only_admins_and_only_in_private(tg: FakeTelegram, app: App) -> None:
    before = await app.kb.count()
    mine = await tg.send_user_message(document=(CSV, "text/csv", "checks.csv"), sender=STRANGER)
    group = tg.group_chat()
    tg.chat_admins[group["id"]] = {ADMIN["id"]: "creator"}
    in_group = await tg.send_user_message(document=(CSV, "text/csv", "checks.csv"), sender=ADMIN, chat=group)
    # the stranger's file is an ordinary message (a file that is not an image gets its sentence)
    answer = await tg.wait_for(_replies(tg, mine["message_id"], 1), timeout=60)
    assert "fact-checks" not in answer[-1]
    assert tg.called("getFile") == [] or all(c.params["file_id"] != in_group["document"]["file_id"]
                                             for c in tg.called("getFile"))
    assert not any("fact-checks in" in c.params.get("text", "") for c in tg.called("sendMessage"))
    assert await app.kb.count() == before


async def test_a_file_past_the_download_limit_is_refused_before_downloading(app: App, tg: FakeTelegram) -> None:
    msg = tg.make_message(document=(CSV, "text/csv", "huge.csv"), sender=ADMIN)
    msg["document"]["file_size"] = 25 * 1024 * 1024  # what Telegram would say of a 25 MB file
    await tg.queue_message(msg)
    texts = await tg.wait_for(_replies(tg, msg["message_id"], 1), timeout=60)
    assert texts[0].startswith("huge.csv is over the 20 MB Telegram lets bots download")
    assert tg.called("getFile") == []
