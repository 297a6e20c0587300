"""Telegram flood control (adapters/telegram_flood.py): a 429 "retry after N" is waited out and the request
sent again, so a digest fanned out to 50 chats loses nothing. The fake Bot API on loopback answers 429 in
Telegram's own words for some sends; real PTB, the bot `tipline run` builds, the real digest scheduler."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest
from telegram.error import RetryAfter
from telegram.ext import ApplicationBuilder

from adapters.telegram import TelegramConfig, TelegramDigestPoster, TelegramNotifier, build_application
from adapters.telegram_flood import FloodControl
from bot.digest import Digest
from bot.digest_schedule import DigestService
from bot.notify import Asker, ReviewNotice
from schema.models import Verdict
from storage.digests import DigestSchedule, DigestStore
from storage.sqlite import Database
from tests.fakes.telegram_api import Call, FakeTelegram

# PTB 22 warns whenever a RetryAfter is made (its retry_after becomes a timedelta in v23).
pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

CHATS = [-1005550000 - n for n in range(50)]
# chat -> how many of its sends Telegram refuses first ("Too Many Requests: retry after 1")
REFUSED = {CHATS[3]: 1, CHATS[17]: 1, CHATS[29]: 2, CHATS[48]: 1}


class OneDigest:
    """The digest builder's part the scheduler calls: the same empty digest for every chat."""

    async def build(self, since: float, until: float, *, top_k: int, lang: str) -> Digest:
        return Digest(since, until, lang)


def flood(refused: dict[int, int]):
    left = dict(refused)

    def answer(method: str, params: dict[str, Any]) -> int | None:
        chat = int(params.get("chat_id") or 0)
        if method == "sendMessage" and left.get(chat, 0) > 0:
            left[chat] -= 1
            return 1
        return None
    return answer


def delivered(fake: FakeTelegram) -> dict[int, int]:
    out: dict[int, int] = {}
    for c in fake.called("sendMessage"):
        if isinstance(c.result, dict) and "message_id" in c.result:
            out[int(c.params["chat_id"])] = out.get(int(c.params["chat_id"]), 0) + 1
    return out


def refusals(fake: FakeTelegram) -> list[Call]:
    return [c for c in fake.called("sendMessage") if isinstance(c.result, dict) and c.result.get("error_code") == 429]


async def _fake_with_chats() -> FakeTelegram:
    fake = await FakeTelegram().start()
    for chat in CHATS:
        fake.make_message("hello", chat=fake.group_chat(chat))  # the fake knows a chat once it has a message
    return fake


async def _digests_to_every_chat(tmp_path: Path, bot: Any) -> DigestService:
    db = await Database.open(tmp_path / "digests.sqlite3")
    store = DigestStore(db)
    for chat in CHATS:
        await store.set_schedule(DigestSchedule("telegram", str(chat), 6 * 3600.0, None, 3, "en", None,
                                                next_at=time.time() - 1))
    service = DigestService(cast(Any, OneDigest()), store)
    service.register("telegram", TelegramDigestPoster(bot))
    return service


async def test_a_digest_to_50_chats_loses_nothing_when_telegram_says_retry_after(tmp_path: Path) -> None:
    fake = await _fake_with_chats()
    fake.flood = flood(REFUSED)
    app = build_application(TelegramConfig(token=fake.token, base_url=fake.base_url,
                                           base_file_url=fake.base_file_url, poll_timeout=1.0))
    await app.initialize()
    try:
        service = await _digests_to_every_chat(tmp_path, app.bot)
        started = time.monotonic()
        assert await service.run_due() == 50
        took = time.monotonic() - started
    finally:
        await app.shutdown()
        await service.store.db.close()
        await fake.stop()
    assert delivered(fake) == dict.fromkeys(CHATS, 1)  # every chat got its digest, once
    assert sorted(int(c.params["chat_id"]) for c in refusals(fake)) == sorted(
        chat for chat, n in REFUSED.items() for _ in range(n))
    limiter = app.bot.rate_limiter
    assert isinstance(limiter, FloodControl) and limiter.retried == 5
    assert took >= 5 * 1.0  # each refusal was waited out as Telegram asked: 1 s


async def test_without_flood_control_the_refused_chats_lost_their_digest(tmp_path: Path) -> None:
    """What the test above guards against: PTB without a rate limiter raises RetryAfter and the scheduler
    (which logs and goes on) loses those chats' digests."""
    fake = await _fake_with_chats()
    fake.flood = flood(REFUSED)
    app = ApplicationBuilder().token(fake.token).base_url(fake.base_url).build()
    await app.initialize()
    try:
        service = await _digests_to_every_chat(tmp_path, app.bot)
        assert await service.run_due() == 50 - len(REFUSED)
    finally:
        await app.shutdown()
        await service.store.db.close()
        await fake.stop()
    assert set(delivered(fake)) == set(CHATS) - set(REFUSED)


async def test_a_review_notice_goes_through_the_same_flood_control() -> None:
    fake = await _fake_with_chats()
    asked = fake.make_message("5G caused the outbreak", chat=fake.group_chat(CHATS[0]))
    fake.flood = flood({CHATS[0]: 1})
    app = build_application(TelegramConfig(token=fake.token, base_url=fake.base_url, poll_timeout=1.0))
    await app.initialize()
    try:
        asker = Asker(job_id=1, platform="telegram", chat_id=str(CHATS[0]), target=str(asked["message_id"]),
                      where={"chat_id": CHATS[0], "reply_to": asked["message_id"], "thread_id": None},
                      reply_ref=None, check_id="c0ffee")
        await TelegramNotifier(app.bot).notify(asker, ReviewNotice(check_id="c0ffee", claim="5G caused the outbreak",
                                                                   verdict=Verdict.REFUTED, rating="False",
                                                                   url="https://fc.example/5g"))
    finally:
        await app.shutdown()
        await fake.stop()
    assert len(refusals(fake)) == 1
    [notice] = [c for c in fake.replies_to(asked["message_id"]) if c not in refusals(fake)]
    assert "reviewed by a person" in notice.params["text"]


# --- the limiter alone, on a manual clock ---------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.t += seconds


def limiter(clock: Clock, **kw: Any) -> FloodControl:
    return FloodControl(clock=clock.now, sleep=clock.sleep, **kw)


async def test_retries_are_bounded_and_a_long_wait_is_not_waited_out() -> None:
    clock = Clock()
    calls: list[float] = []

    async def always_flooded() -> bool:
        calls.append(clock.t)
        raise RetryAfter(2)

    flood_control = limiter(clock, max_retries=3, max_wait_s=60)
    with pytest.raises(RetryAfter):
        await flood_control.process_request(always_flooded, (), {}, "sendMessage", {"chat_id": 1}, None)
    assert len(calls) == 4 and clock.slept == [2.1, 2.1, 2.1]  # 1 + 3 retries, each after retry_after + 0.1 s

    calls.clear()

    async def banned() -> bool:
        calls.append(clock.t)
        raise RetryAfter(3600)

    with pytest.raises(RetryAfter):
        await flood_control.process_request(banned, (), {}, "sendMessage", {"chat_id": 2}, None)
    assert len(calls) == 1  # an hour is not waited out: the caller hears it at once


async def test_a_pause_holds_that_chat_only_and_sends_are_paced_to_30_a_second() -> None:
    clock = Clock()
    flood_control = limiter(clock)
    flood_control._pause("1", 5.0)  # chat 1 was told "retry after 5"

    async def ok() -> bool:
        return True

    assert await flood_control.process_request(ok, (), {}, "sendMessage", {"chat_id": 2}, None)
    assert clock.slept == []  # another chat is not held
    assert await flood_control.process_request(ok, (), {}, "sendMessage", {"chat_id": 1}, None)
    assert clock.slept == [5.0]
    clock.slept.clear()
    for n in range(3, 3 + 40):  # a fan-out: the 29 left of the burst (of 30) at once, then one every 1/30 s
        await flood_control.process_request(ok, (), {}, "sendMessage", {"chat_id": n}, None)
    assert len(clock.slept) == 11 and all(abs(s - 1 / 30) < 1e-3 for s in clock.slept)
    assert await flood_control.process_request(ok, (), {}, "getMe", {}, None)  # no chat: not paced
    assert len(clock.slept) == 11
