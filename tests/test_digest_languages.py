"""Stories across languages end to end: a Russian and an English post of one event in two tracked chats are
one story in `/digest now`; another event of the same city, or of the same person, stays apart. Fake Telegram
Bot API on loopback, real PTB, the real models (MiniLM, e5 with its token states), SQLite and embedded
Qdrant, as tests/test_digest_chat.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.telegram import TelegramBot, TelegramConfig
from bot.app import build_app
from bot.chat_app import build_digests
from core.i18n import t
from tests.chat_support import queued_chat
from tests.conftest import SeededDataDir, isolated_settings
from tests.fakes.telegram_api import FakeTelegram
from tests.test_digest_chat import ADMIN, ManualClock, command, user
from tests.test_tracking_chat import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

MEMBER = 94
RU = {"id": -1004450001, "type": "supergroup", "title": "Новости Киева"}
EN = {"id": -1004450002, "type": "supergroup", "title": "Kyiv Wire"}
UA = {"id": -1004450003, "type": "supergroup", "title": "Столиця"}
CURFEW_RU = "В Киеве с понедельника вводят комендантский час с 22:00 до 6:00"
CURFEW_EN = "Kyiv city hall says a curfew from 10pm to 6am starts on Monday"
METRO_RU = "В Киеве открыли новую станцию метро"
MACRON_RU = "Зеленский встретился с Макроном"
LAW_EN = "Zelensky signs a law on mobilisation"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("digest-languages") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def tg(app):
    fake = await FakeTelegram().start()
    digests = build_digests(app.settings, app, ManualClock(time.time() + 600))  # the posts fall inside its window
    assert digests is not None
    chat = await queued_chat(app.engine, corroborator=app.corroborator,
                             digests=digests)
    bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                     poll_timeout=1.0), chat)
    await bot.start()
    yield fake
    await bot.stop()
    await fake.stop()


async def _post(fake: FakeTelegram, app, chat: dict, text: str, stored: int) -> None:
    await fake.queue_message(fake.make_message(text, chat=chat, sender=user(MEMBER)))
    await eventually(lambda: _stored(app, stored))


async def _stored(app, n: int) -> bool:
    return await app.corroborator.store.count() >= n


async def _story(app, chat: dict, text: str) -> str:
    c = app.corroborator
    [m] = [m for m in await c.store.since(0) if m.chat_id == str(chat["id"]) and m.text == text]
    return (await c.vectors.scoring_data([m.id]))[m.id].story


async def test_one_event_in_two_languages_is_one_story_and_other_events_of_its_city_are_not(tg, app):
    fake = tg
    for ch in (RU, EN, UA):
        fake.chat_admins[ch["id"]] = {ADMIN: "administrator"}
        assert (await command(fake, ch, "/track on")).startswith("Tracking is on")

    await _post(fake, app, RU, CURFEW_RU, 1)
    await _post(fake, app, EN, CURFEW_EN, 2)
    # Asked in either chat (each answered in its own language), the digest lists the curfew once, from both.
    for ch, lang in ((RU, "ru"), (EN, "en")):
        digest = await command(fake, ch, "/digest now")
        assert "<b>1.</b>" in digest and "<b>2.</b>" not in digest, digest
        assert t("digest.count", lang, chats=2, channels=0, messages=2) in digest, digest
    curfew = await _story(app, RU, CURFEW_RU)
    assert await _story(app, EN, CURFEW_EN) == curfew

    # The same city, another event, in a third chat: its own story, and the curfew's stays as it was.
    await _post(fake, app, UA, METRO_RU, 3)
    assert await _story(app, UA, METRO_RU) != curfew
    # The same person, two events, across the two languages: two stories (neither reaches two chats).
    await _post(fake, app, RU, MACRON_RU, 4)
    await _post(fake, app, EN, LAW_EN, 5)
    assert await _story(app, RU, MACRON_RU) != await _story(app, EN, LAW_EN)
    digest = await command(fake, EN, "/digest now")
    assert "<b>2.</b>" not in digest, digest
    assert t("digest.count", "en", chats=2, channels=0, messages=2) in digest, digest
