"""Trusted/blocked domain commands: normalisation, storage, rights and audit, Telegram and Slack end to end.

The chat tests run the real adapters (PTB Application polling the fake Bot API; bolt behind aiohttp
with signed requests) against a real SQLite database; no engine is needed for these commands.
"""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from adapters.slack import SlackBot, SlackConfig
from tests.chat_support import queued_chat
from adapters.telegram import TelegramBot, TelegramConfig
from bot.domains import (REFUSED, USAGE, DomainCommands, DomainsRequest, InvalidDomain, command_args,
                         domain_matches, effective_rules, normalize_domain)
from bot.router import route
from storage.domains import GLOBAL, DomainStore
from storage.sqlite import MIGRATIONS, Database
from tests.fakes.slack_api import TEAM_ID, FakeSlack
from tests.fakes.telegram_api import BOT_USER, FakeTelegram
from tests.test_slack import SECRET, dm, event_body, post

ADMIN_TG = 4242  # the fake's default sender
ADMIN_SLACK = "U0ALICE"


@pytest_asyncio.fixture
async def db(tmp_path):
    d = await Database.open(tmp_path / "t.sqlite3")
    yield d
    await d.close()


# --- normalisation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    ("https://www.Example.COM/path", "example.com"),
    ("http://user@news.example.org:8080/a?b#c", "news.example.org"),
    ("bücher.de", "xn--bcher-kva.de"),
    ("WWW.BÜCHER.DE.", "xn--bcher-kva.de"),
    ("*.gov", "*.gov"),
    (".gov", "*.gov"),
    ("*.Example.com", "*.example.com"),
])
def test_normalize_domain(raw, expected):
    assert normalize_domain(raw) == expected


@pytest.mark.parametrize("raw, why", [
    ("127.0.0.1", "IP addresses"),
    ("http://[::1]:80/", "IP addresses"),
    ("localhost", "single name"),
    ("exa mple.com", "space"),
    ("", "empty"),
    ("ex_ample.com", "aren't allowed"),
    ("a" * 64 + ".com", "longer than 63"),
    ("a..com", "empty part"),
])
def test_invalid_domains_say_why(raw, why):
    with pytest.raises(InvalidDomain, match=why):
        normalize_domain(raw)


def test_domain_matching_plain_and_suffix_rules():
    rules = {"example.com", "*.gov"}
    assert domain_matches("https://www.example.com/x", rules)
    assert not domain_matches("news.example.com", rules)  # a plain rule is that host only
    assert domain_matches("gov", rules) and domain_matches("data.cdc.gov", rules)
    assert not domain_matches("notgov.com", rules) and not domain_matches("127.0.0.1", rules)


def test_command_recognition():
    assert command_args("/domains allow add x.org") == "allow add x.org"
    assert command_args("/domains@tipline_bot list", bot_username="tipline_bot") == "list"
    assert command_args("/domains@other_bot list", bot_username="tipline_bot") is None
    assert command_args("/enrichment domains add x.org") == "allow add x.org"
    assert command_args("/enrichment domains list") == "list"
    assert command_args("domains list") is None and command_args("domains list", bare=True) == "list"
    assert command_args("/check domains list") is None


# --- storage ---------------------------------------------------------------------------------------


async def test_migration_creates_tables_and_checks_rule_values(tmp_path, db):
    assert db.schema_version == len(MIGRATIONS)
    with pytest.raises(sqlite3.IntegrityError):
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO domain_rules (scope, domain, rule) VALUES ('global', 'x.org', 'maybe')")


async def test_store_round_trip_and_scope_separation(db):
    store = DomainStore(db)
    assert await store.set_rule(GLOBAL, "reuters.com", "allow", "1") is None
    assert await store.set_rule("telegram:-100", "spam.example", "deny", "2") is None
    assert await store.set_rule("telegram:-200", "reuters.com", "deny", "3") is None
    assert await store.get(GLOBAL, "reuters.com") == "allow"
    assert await store.get("telegram:-100", "reuters.com") is None
    assert await store.set_rule(GLOBAL, "reuters.com", "deny") == "allow"  # switched
    assert not await store.remove(GLOBAL, "reuters.com", "allow")
    assert await store.remove(GLOBAL, "reuters.com", "deny")
    await store.set_rule(GLOBAL, "*.gov", "allow")
    await store.set_rule(GLOBAL, "bbc.com", "allow")
    assert await effective_rules(db, "telegram:-100") == ({"*.gov", "bbc.com"}, {"spam.example"})
    await store.set_rule("telegram:-200", "bbc.com", "deny")  # the chat overrides the global rule
    assert await effective_rules(db, "telegram:-200") == ({"*.gov"}, {"reuters.com", "bbc.com"})
    assert await effective_rules(db, GLOBAL) == ({"*.gov", "bbc.com"}, set())


# --- commands and rights -----------------------------------------------------------------------------


def req(args: str, *, user="1", scope=GLOBAL, platform="telegram", chat_id=1) -> DomainsRequest:
    return DomainsRequest(platform=platform, chat_id=chat_id, target_id=1, user_id=user, scope=scope, args=args)


async def test_admin_commands_answer_one_sentence_each_and_are_audited(db):
    cmds = DomainCommands(db, admins=["1", "slack:U0ADMIN"])
    assert await cmds.handle(req("allow add https://www.Reuters.com/world")) == \
        "Added reuters.com to the global trusted domains."
    assert await cmds.handle(req("allow add reuters.com")) == "reuters.com is already on the global trusted domains."
    assert await cmds.handle(req("deny add reuters.com")) == \
        "Moved reuters.com from the global trusted domains to the global blocked domains."
    assert await cmds.handle(req("allow remove reuters.com")) == "reuters.com is not on the global trusted domains."
    assert await cmds.handle(req("deny remove reuters.com")) == "Removed reuters.com from the global blocked domains."
    assert await cmds.handle(req("allow add 127.0.0.1")) == \
        "“127.0.0.1” is not a valid domain: IP addresses can't be listed, only domain names."
    assert await cmds.handle(req("allow frobnicate x.org")) == USAGE
    assert await cmds.handle(req("allow add .gov", user="U0ADMIN", platform="slack")) == \
        "Added *.gov to the global trusted domains."
    actions = [e.action for e in reversed(await cmds.store.audit_entries())]
    assert actions == ["domains.allow.add", "domains.deny.add", "domains.deny.remove", "domains.allow.add"]
    assert "domain=reuters.com" in (await cmds.store.audit_entries())[-1].detail


async def test_non_admin_is_refused_and_audited(db):
    cmds = DomainCommands(db, admins=["1"])
    assert await cmds.handle(req("allow add x.org", user="2")) == REFUSED
    # in a chat scope, the chat's own admins may change the chat's rules, but not global ones
    async def yes() -> bool:
        return True

    async def no() -> bool:
        return False
    chat = "telegram:-5"
    assert await cmds.handle(req("deny add x.org", user="2", scope=chat, chat_id=-5), is_chat_admin=no) == REFUSED
    assert await cmds.handle(req("deny add x.org", user="2", scope=chat, chat_id=-5), is_chat_admin=yes) == \
        "Added x.org to this chat's blocked domains."
    assert await cmds.handle(req("deny add y.org", user="2"), is_chat_admin=yes) == REFUSED
    assert await effective_rules(db, chat) == (set(), {"x.org"})
    entries = list(reversed(await cmds.store.audit_entries()))
    assert [e.action for e in entries] == ["domains.refused", "domains.refused", "domains.deny.add",
                                           "domains.refused"]
    assert entries[0].user_id == "2" and entries[0].platform == "telegram" and "x.org" in entries[0].detail
    # anyone may list
    listing = await cmds.handle(req("list", user="2", scope=chat, chat_id=-5))
    assert "This chat blocked domains: x.org" in listing and "Global trusted domains: none" in listing


def test_route_gives_global_scope_in_private_and_chat_scope_in_groups():
    from bot.requests import IncomingMessage
    private = IncomingMessage(platform="telegram", chat_id=5, chat_kind="private", message_id=1,
                              text="/domains list", sender_id=5)
    group = IncomingMessage(platform="telegram", chat_id=-9, chat_kind="group", message_id=2,
                            text="/enrichment@tipline_bot domains add x.org", sender_id=5)
    assert route(private, "tipline_bot").scope == GLOBAL
    g = route(group, "tipline_bot")
    assert g.scope == "telegram:-9" and g.args == "allow add x.org" and g.user_id == 5


# --- Telegram end to end -------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def tg(db):
    fake = await FakeTelegram().start()
    config = TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                            poll_timeout=1.0)
    # no engine needed for /domains
    bot = TelegramBot(config, await queued_chat(SimpleNamespace(db=db), db, admins=(str(ADMIN_TG),)))
    await bot.start()
    yield fake, bot
    await bot.stop()
    await fake.stop()


async def answer(fake: FakeTelegram, msg: dict) -> str:
    [sent] = await fake.wait_for(lambda: fake.replies_to(msg["message_id"]))
    return sent.params["text"]


async def test_telegram_admin_adds_lists_and_non_admin_is_refused(tg, db):
    fake, bot = tg
    added = await fake.send_user_message("/domains allow add https://www.Reuters.com/world")
    assert await answer(fake, added) == "Added reuters.com to the global trusted domains."
    listed = await fake.send_user_message("/domains list")
    assert "Global trusted domains: reuters.com" in await answer(fake, listed)

    stranger = {"id": 999, "is_bot": False, "first_name": "Mallory"}
    refused = await fake.send_user_message("/domains deny add reuters.com", chat=fake.private_chat(999),
                                           sender=stranger)
    assert await answer(fake, refused) == REFUSED
    assert await effective_rules(db, GLOBAL) == ({"reuters.com"}, set())
    [entry] = [e for e in await DomainStore(db).audit_entries() if e.action == "domains.refused"]
    assert entry.user_id == "999" and entry.platform == "telegram"
    cmds = fake.called("setMyCommands")[0].params["commands"]
    assert "domains" in [c["command"] for c in cmds]


async def test_telegram_group_admin_sets_chat_rule_member_cannot(tg, db):
    fake, bot = tg
    group = fake.group_chat(-100777)
    fake.chat_admins[-100777] = {55: "administrator"}
    member = {"id": 66, "is_bot": False, "first_name": "Member"}
    chat_admin = {"id": 55, "is_bot": False, "first_name": "Admin"}
    m1 = await fake.send_user_message("/domains deny add spam.example", chat=group, sender=member)
    assert await answer(fake, m1) == REFUSED
    m2 = await fake.send_user_message(f"/domains@{BOT_USER['username']} deny add spam.example", chat=group,
                                      sender=chat_admin)
    assert await answer(fake, m2) == "Added spam.example to this chat's blocked domains."
    assert [c.params["user_id"] for c in fake.called("getChatMember")] == [66, 55]
    assert await effective_rules(db, "telegram:-100777") == (set(), {"spam.example"})
    assert await effective_rules(db, GLOBAL) == (set(), set())


# --- Slack end to end ------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def slack(db):
    fake = await FakeSlack().start()
    config = SlackConfig(bot_token=fake.token, signing_secret=SECRET, api_url=fake.base_url, port=0)
    bot = SlackBot(config, await queued_chat(SimpleNamespace(db=db), db, admins=(ADMIN_SLACK,)))
    await bot.start()
    yield fake, bot
    await bot.stop()
    await fake.stop()


def slash(text: str, user: str = ADMIN_SLACK) -> str:
    return urlencode({"team_id": TEAM_ID, "channel_id": "C0GENERAL", "user_id": user, "command": "/domains",
                      "text": text, "trigger_id": "1.2.dom"})


async def test_slack_domains_slash_command_admin_and_refusal(slack, db):
    fake, bot = slack
    status, body = await post(bot, slash("allow add <http://bücher.de|bücher.de>"),
                              content_type="application/x-www-form-urlencoded")
    assert status == 200
    assert json.loads(body) == {"text": "Added xn--bcher-kva.de to the global trusted domains.",
                                "response_type": "ephemeral"}
    status, body = await post(bot, slash("deny add xn--bcher-kva.de", user="U0MALLORY"),
                              content_type="application/x-www-form-urlencoded")
    assert json.loads(body)["text"] == REFUSED
    assert await effective_rules(db, GLOBAL) == ({"xn--bcher-kva.de"}, set())
    assert [e.user_id for e in await DomainStore(db).audit_entries()] == ["U0MALLORY", ADMIN_SLACK]
    # user text that could ping is escaped in the answer
    _, body = await post(bot, slash("allow add &lt;!channel&gt;"), content_type="application/x-www-form-urlencoded")
    assert "<!channel>" not in json.loads(body)["text"] and "not a valid domain" in json.loads(body)["text"]


async def test_slack_dm_domains_list(slack, db):
    fake, bot = slack
    await DomainStore(db).set_rule(GLOBAL, "apnews.com", "allow")
    ev = dm("domains list")
    await post(bot, event_body(ev))
    [sent] = await fake.wait_for(lambda: fake.posts_in_thread("D0ALICE", ev["ts"]))
    assert "Global trusted domains: apnews.com" in sent.params["text"]


def test_checks_carry_the_scope_whose_rules_apply():
    from bot.requests import CheckRequest, IncomingMessage
    from bot.router import route

    group = route(IncomingMessage("telegram", -100123, "supergroup", 5, "/check The moon is made of cheese"),
                  "tiplinebot")
    private = route(IncomingMessage("telegram", 77, "private", 6, "The moon is made of cheese"), "tiplinebot")
    assert isinstance(group, CheckRequest) and group.scope == "telegram:-100123"
    assert isinstance(private, CheckRequest) and private.scope == "global"
