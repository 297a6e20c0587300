"""The Telegram adapter end to end: real PTB Application, real engine, fake Bot API server on loopback.

One app (model + SQLite + embedded Qdrant + seed KB) is built for the module: building it per test
would cost ~5 s each. Each test gets a fresh fake server and a fresh bot polling it.
"""

from __future__ import annotations

import html
import logging
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
import pytest_asyncio
from telegram import Bot

from adapters.telegram import TelegramBot, TelegramConfig, TelegramResponder, render_html, split_html, tg_len
from tests.chat_support import queued_chat
from bot.outflow import outflow
from bot.app import build_app
from bot.render import Reply
from bot.check_service import CHECKING, ThrottledProgress
from bot.requests import CheckRequest
from schema.models import Citation, Verdict
from tests.fakes.telegram_api import BOT_USER, FakeTelegram
from tests.conftest import SeededDataDir, isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOTNAME = BOT_USER["username"]
CHECK_ID = re.compile(r"Check id: <code>([0-9a-f]+)</code>")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tg_app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("tg") / "data"), model_dir)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(loop_scope="module")
async def fake():
    server = await FakeTelegram().start()
    yield server
    await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def bot(fake: FakeTelegram, tg_app):
    config = TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                            poll_timeout=1.0)
    tb = TelegramBot(config, await queued_chat(tg_app.engine, add_factchecks=tg_app.kb.add, outflow=outflow(tg_app.settings)))
    await tb.start()
    yield tb
    await tb.stop()


def final_edit(fake: FakeTelegram, user_message_id: int):
    """(the progress reply to `user_message_id`, the edit that made it a verdict card), or None."""
    def find():
        for sent in fake.replies_to(user_message_id):
            if not isinstance(sent.result, dict):
                continue
            for e in fake.edits_of(sent.result["message_id"]):
                if not e.params["text"].startswith(CHECKING):
                    return sent, e
        return None
    return find


async def wait_card(fake: FakeTelegram, user_message_id: int):
    return await fake.wait_for(final_edit(fake, user_message_id))


# --- private chats ---------------------------------------------------------------------------------


async def test_private_message_gets_progress_then_verdict_card(fake, bot, tg_app):
    msg = await fake.send_user_message("The 5G rollout caused the coronavirus outbreak")
    sent, edit = await wait_card(fake, msg["message_id"])
    assert sent.params["text"] == CHECKING
    assert sent.params["reply_parameters"]["message_id"] == msg["message_id"]
    assert sent.params["chat_id"] == msg["chat"]["id"]
    assert "message_thread_id" not in sent.params
    text = edit.params["text"]
    assert edit.params["parse_mode"] == "HTML"
    assert "False" in text and "❌" in text
    check_id = CHECK_ID.search(text)[1]
    stored = await tg_app.db.get_check(check_id)
    assert stored is not None and stored.verdict == Verdict.REFUTED
    assert stored.text == "The 5G rollout caused the coronavirus outbreak"
    assert '<a href="https://' in text and "[1]" in text
    # commands registered and webhook removed on start
    cmds = fake.called("setMyCommands")[0].params["commands"]
    assert [c["command"] for c in cmds] == ["start", "help", "check", "evidence", "domains", "review", "track", "auto",
                                           "forget", "stats", "digest", "trending", "alerts", "watch"]
    assert fake.called("deleteWebhook")


async def test_hostile_text_and_forward_origin_are_escaped(fake, bot):
    hostile = '<b>x</b><a href="javascript:alert(1)">'
    origin = {"type": "channel", "date": int(time.time()), "message_id": 9,
              "chat": {"id": -1009, "type": "channel", "title": '<i>Evil</i> "News"'}}
    msg = await fake.send_user_message(hostile + " vaccines cause autism", forward_origin=origin)
    _, edit = await wait_card(fake, msg["message_id"])
    text = edit.params["text"]
    assert 'href="javascript' not in text and "<b>x</b>" not in text
    assert "&lt;b&gt;x&lt;/b&gt;&lt;a href=&quot;javascript:alert(1)&quot;&gt;" in text
    assert "forwarded from &lt;i&gt;Evil&lt;/i&gt; &quot;News&quot;" in text
    assert_valid_telegram_html(text)


async def test_a_russian_forward_gets_the_english_fact_checks_verdict_in_russian(fake, bot, tg_app):
    origin = {"type": "channel", "date": int(time.time()), "message_id": 11,
              "chat": {"id": -1011, "type": "channel", "title": "Новости 24"}}
    msg = await fake.send_user_message("Учёные признали: вышки 5G разносят коронавирус по всему миру",
                                    forward_origin=origin)
    _, edit = await wait_card(fake, msg["message_id"])
    text = edit.params["text"]
    stored = await tg_app.db.get_check(re.search(r"Номер проверки: <code>([0-9a-f]+)</code>", text)[1])
    assert stored.verdict == Verdict.REFUTED and stored.language == "ru"
    assert stored.matches[0].tier == "auto"
    assert "Ложь" in text and "❌" in text and "Новости 24" in text
    assert html.escape(stored.matches[0].url, quote=True) in text or stored.matches[0].url in text
    assert_valid_telegram_html(text)


async def test_caption_of_forwarded_photo_is_checked(fake, bot, tg_app):
    origin = {"type": "hidden_user", "date": int(time.time()), "sender_user_name": "Bob Hidden"}
    msg = await fake.send_user_message(caption="Drinking bleach cures COVID-19", forward_origin=origin)
    _, edit = await wait_card(fake, msg["message_id"])
    assert "forwarded from Bob Hidden" in edit.params["text"]
    stored = await tg_app.db.get_check(CHECK_ID.search(edit.params["text"])[1])
    assert stored.text == "Drinking bleach cures COVID-19"


async def test_start_and_help(fake, bot):
    start = await fake.send_user_message("/start")
    help_ = await fake.send_user_message("/help")
    s = await fake.wait_for(lambda: fake.replies_to(start["message_id"]))
    h = await fake.wait_for(lambda: fake.replies_to(help_["message_id"]))
    assert "fact-check" in s[0].params["text"] and "/check" in s[0].params["text"]
    assert "Privacy" in h[0].params["text"] and "Examples" in h[0].params["text"]
    # what leaves the server, from the running configuration (the tests' defaults: nothing)
    for reply in (s[0], h[0]):
        assert "What leaves this server: nothing from messages leaves the machine." in reply.params["text"]
    assert not fake.called("editMessageText")  # info replies are never "checked"


async def test_start_and_help_say_what_leaves_in_the_askers_language(fake, bot):
    ru = {"id": 4343, "is_bot": False, "first_name": "Оля", "language_code": "ru"}
    uk = {"id": 4444, "is_bot": False, "first_name": "Оксана", "language_code": "uk-UA"}
    start_ru = await fake.send_user_message("/start", sender=ru)
    help_uk = await fake.send_user_message("/help", sender=uk)
    s = await fake.wait_for(lambda: fake.replies_to(start_ru["message_id"]))
    h = await fake.wait_for(lambda: fake.replies_to(help_uk["message_id"]))
    assert "Пришлите или перешлите" in s[0].params["text"]
    assert "Что уходит с этого сервера: ничего из сообщений не покидает этот сервер." in s[0].params["text"]
    assert "Що залишає цей сервер: нічого з повідомлень не залишає цей сервер." in h[0].params["text"]


async def test_nothing_to_check_gets_a_friendly_sentence(fake, bot):
    msg = await fake.send_user_message("\u200b\u2060\u200b")
    call = await fake.wait_for(lambda: [e for e in fake.called("editMessageText") if "nothing I can check"
                                        in e.params["text"]])
    assert call and fake.replies_to(msg["message_id"])


async def test_check_failure_gets_an_apology_and_is_logged(fake, bot, tg_app, caplog):
    # A real failure inside the check: the database refuses to store it (a trigger, removed afterwards).
    async with tg_app.db.transaction() as conn:
        await conn.execute("CREATE TRIGGER refuse_checks BEFORE INSERT ON checks "
                           "BEGIN SELECT RAISE(ABORT, 'kaboom'); END")
    try:
        with caplog.at_level(logging.ERROR):
            msg = await fake.send_user_message("The moon landings were faked in a studio")
            await fake.wait_for(lambda: [e for e in fake.called("editMessageText") if "Sorry" in e.params["text"]])
            await bot.chat.service.join()
    finally:
        async with tg_app.db.transaction() as conn:
            await conn.execute("DROP TRIGGER refuse_checks")
    assert fake.replies_to(msg["message_id"])
    rec = [r for r in caplog.records if r.exc_info and "kaboom" in str(r.exc_info[1])]
    assert rec, "the failure was not logged with exc_info"
    assert all("kaboom" not in c.params.get("text", "") for c in fake.calls)


# --- groups ------------------------------------------------------------------------------------------


async def test_group_check_as_reply_checks_the_replied_message(fake, bot, tg_app):
    group = fake.group_chat()
    original = fake.make_message("Vaccines cause autism in children", chat=group,
                                 sender={"id": 55, "is_bot": False, "first_name": "Uncle"})
    cmd = await fake.send_user_message("/check", chat=group, reply_to=original)
    sent, edit = await wait_card(fake, original["message_id"])
    assert sent.params["reply_parameters"]["message_id"] == original["message_id"]
    stored = await tg_app.db.get_check(CHECK_ID.search(edit.params["text"])[1])
    assert stored.text == "Vaccines cause autism in children"
    assert "False" in edit.params["text"]
    assert not fake.replies_to(cmd["message_id"])


async def test_group_check_at_botname_with_text_and_chatter_is_ignored(fake, bot, tg_app):
    group = fake.group_chat()
    chatter = await fake.send_user_message("The 5G rollout caused the coronavirus outbreak", chat=group)
    other_bot = await fake.send_user_message("/check@some_other_bot Drinking bleach cures COVID-19", chat=group)
    cmd = await fake.send_user_message(f"/check@{BOTNAME} Drinking bleach cures COVID-19", chat=group)
    _, edit = await wait_card(fake, cmd["message_id"])
    stored = await tg_app.db.get_check(CHECK_ID.search(edit.params["text"])[1])
    assert stored.text == "Drinking bleach cures COVID-19"
    await bot.chat.service.join()
    assert not fake.replies_to(chatter["message_id"])
    assert not fake.replies_to(other_bot["message_id"])
    assert len(fake.called("sendMessage")) == 1


async def test_group_mention_checks_text_and_mention_in_reply_checks_replied(fake, bot, tg_app):
    group = fake.group_chat()
    m1 = await fake.send_user_message(f"@{BOTNAME} The moon landings were faked in a studio", chat=group)
    _, e1 = await wait_card(fake, m1["message_id"])
    s1 = await tg_app.db.get_check(CHECK_ID.search(e1.params["text"])[1])
    assert s1.text == "The moon landings were faked in a studio"

    original = fake.make_message("5G towers spread the coronavirus", chat=group)
    await fake.send_user_message(f"@{BOTNAME}", chat=group, reply_to=original)
    _, e2 = await wait_card(fake, original["message_id"])
    s2 = await tg_app.db.get_check(CHECK_ID.search(e2.params["text"])[1])
    assert s2.text == "5G towers spread the coronavirus"


async def test_forum_topic_thread_is_preserved(fake, bot):
    forum = fake.group_chat(-1005555, forum=True)
    msg = await fake.send_user_message("/check The 5G rollout caused the coronavirus outbreak", chat=forum,
                                       thread_id=77)
    sent, _ = await wait_card(fake, msg["message_id"])
    assert sent.params["message_thread_id"] == 77
    assert sent.params["reply_parameters"]["message_id"] == msg["message_id"]


# --- long cards --------------------------------------------------------------------------------------


class _Balance(HTMLParser):
    ALLOWED = {"b", "i", "a", "code", "u", "s", "pre", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        assert tag in self.ALLOWED, tag
        self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def assert_valid_telegram_html(part: str) -> str:
    # no cut tag or entity: every '<' starts a full tag, every '&' a full entity
    assert not re.search(r"<[^>]*$", part) and not re.search(r"&(?![a-z]+;|#\d+;|#x[0-9a-f]+;)", part), part[-80:]
    p = _Balance()
    p.feed(part)
    p.close()
    assert not p.stack, f"unclosed {p.stack}"
    return "".join(p.text)


def long_reply() -> Reply:
    words = " ".join(f"claim&<{i}>" for i in range(1500))
    cites = [Citation(n=i, url=f"https://example.org/a?x=1&y=\"{i}\"", title=f"Title <{i}> " + "t" * 400,
                      publisher="Pub & Co") for i in range(1, 8)]
    return Reply(check_id="abc123", emoji="❌", label="False", confidence_pct=91, reasoning=words + " [1]",
                 citations=cites, related_heading="Previously fact-checked", related=[],
                 notes=["note " + "n" * 300] * 3)


async def test_split_html_parts_fit_and_stay_balanced():
    card = render_html(long_reply())
    assert tg_len(card) > 4096
    parts = split_html(card)
    assert len(parts) >= 3
    texts = []
    for part in parts:
        assert tg_len(part) <= 4096
        texts.append(assert_valid_telegram_html(part))
    original = assert_valid_telegram_html(card)
    assert " ".join(texts).split() == original.split()  # nothing lost or duplicated
    assert card.count("<a href") == 5  # MAX citations

    # one tag spanning the cut is closed and reopened; a huge word is hard-cut
    spanning = "<b>" + "bold words &amp; more " * 400 + "</b>" + "x" * 5000
    parts = split_html(spanning, limit=1000)
    assert all(tg_len(p) <= 1000 for p in parts)
    for p in parts:
        assert_valid_telegram_html(p)
    assert parts[1].startswith("<b>") and parts[0].endswith("</b>")
    joined = "".join(assert_valid_telegram_html(p) for p in parts)
    assert joined.replace(" ", "") == assert_valid_telegram_html(spanning).replace(" ", "")


async def test_long_card_is_edited_then_continued_as_replies(fake):
    group = fake.group_chat()
    msg = fake.make_message("hi", chat=group)
    async with Bot(fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url) as tg:
        r = TelegramResponder(tg, group["id"], msg["message_id"], thread_id=None)
        await r.progress(CHECKING)
        await r.final(long_reply(), CheckRequest(text="hi", chat_id=group["id"], target_id=msg["message_id"]))
    sends = fake.replies_to(msg["message_id"])
    edits = fake.called("editMessageText")
    assert len(edits) == 1 and len(sends) >= 3  # progress + continuation parts
    assert all(s.params["parse_mode"] == "HTML" for s in sends[1:])
    assert "abc123" in sends[-1].params["text"]


# --- progress throttling -----------------------------------------------------------------------------


async def test_progress_edits_are_rate_limited():
    now = [0.0]
    shown: list[str] = []

    class R:
        async def progress(self, text):
            shown.append(text)

    p = ThrottledProgress(R(), min_interval=1.0, clock=lambda: now[0])
    await p.start()
    now[0] = 0.3
    await p.stage("intake")       # too soon: dropped
    now[0] = 1.2
    await p.stage("match")        # shown
    now[0] = 1.5
    await p.stage("verdict")      # too soon: dropped
    assert shown == [CHECKING, f"{CHECKING} matching against fact-checks"]


# --- adapters/run.py --------------------------------------------------------------------------------------


async def test_run_without_any_adapter_says_what_to_set(settings):
    from adapters.run import NoAdapterConfigured, run

    with pytest.raises(NoAdapterConfigured, match="TIPLINE_TELEGRAM_TOKEN"):
        await run(settings)


async def test_run_starts_telegram_polling_from_settings(fake, settings):
    import asyncio

    from pydantic import SecretStr

    from adapters.run import run

    # The test settings plus the bot token and the fake Bot API.
    configured = settings.model_copy(update={"telegram_token": SecretStr(fake.token),
                                             "telegram_api_url": fake.base_url,
                                             "progress_after_s": 0.0})  # the placeholder at once, then the edit
    stop = asyncio.Event()
    task = asyncio.create_task(run(configured, stop))
    try:
        await fake.wait_for(lambda: fake.called("deleteWebhook"), timeout=30)
        msg = await fake.send_user_message("Vaccines cause autism in children")
        _, edit = await wait_card(fake, msg["message_id"])
        assert "False" in edit.params["text"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
