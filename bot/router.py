"""The router: what an incoming message asks for.

Platform-neutral: an adapter turns its event into an `IncomingMessage` and `route()` (or, for a
platform whose direct messages carry commands without the slash, `route_direct()`) makes it a request.
"""

from __future__ import annotations

import re
from typing import Literal

from bot.chat_settings import CHAT_COMMANDS
from bot.digest_commands import DIGEST_COMMANDS
from bot.domains import command_args
from bot.evidence import evidence_arg
from bot.requests import (
    GLOBAL,
    Action,
    ChatSettingsRequest,
    CheckRequest,
    DigestRequest,
    DomainsRequest,
    EvidenceRequest,
    IncomingMessage,
    Info,
    ReviewRequest,
    WatchRequest,
    chat_scope,
)
from bot.watch_commands import WATCH_COMMAND

_COMMAND = re.compile(r"^/(?P<cmd>[A-Za-z0-9_]{1,32})(?:@(?P<bot>[A-Za-z0-9_]{3,64}))?(?=\s|$)")


def _mention(bot_username: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w@])@{re.escape(bot_username)}\b", re.IGNORECASE)


def _addressed_elsewhere(addressed: str | None, bot_username: str | None) -> bool:
    """`/cmd@name` for another bot; on a platform without bot names in commands (None) any `@name` is."""
    if not addressed:
        return False
    return bot_username is None or addressed.lower() != bot_username.lower()


def route(msg: IncomingMessage, bot_username: str | None) -> Action:
    """Decide what an incoming message asks for (`bot_username`: how commands and mentions name this
    bot on the platform, None where they never do).

    Private chats: /start, /help, /check [text]; anything else with text (including forwards) is
    checked. Groups: only /check (as a reply, or with text), /start, /help and mentions of the bot
    count; ordinary chatter is ignored. `/domains …` (and `/enrichment domains …`) become a
    `DomainsRequest`: global scope in private chats, the chat's scope in groups.
    """
    text = msg.text.strip()
    reply_target = msg.reply_to
    chat_id, thread_id = msg.chat_id, msg.thread_id
    scope = GLOBAL if msg.chat_kind == "private" else chat_scope(msg.platform, msg.chat_id)

    def check(body: str) -> Action:
        body = body.strip()
        if body or msg.image is not None:
            return CheckRequest(text=body, target_id=msg.message_id, forwarded_from=msg.forwarded_from,
                                requested_by=msg.sender_id, scope=scope, chat_id=chat_id, thread_id=thread_id,
                                image=msg.image)
        if reply_target is not None and (reply_target.text.strip() or reply_target.image is not None):
            return CheckRequest(text=reply_target.text, target_id=reply_target.message_id,
                                forwarded_from=reply_target.forwarded_from, requested_by=msg.sender_id,
                                scope=scope, chat_id=chat_id, thread_id=thread_id, image=reply_target.image)
        return Info("usage", target_id=msg.message_id, chat_id=chat_id, thread_id=thread_id)

    m = _COMMAND.match(text)
    if m and m["cmd"].lower() in DIGEST_COMMANDS and not _addressed_elsewhere(m["bot"], bot_username):
        return DigestRequest(platform=msg.platform, chat_id=msg.chat_id, chat_kind=msg.chat_kind,
                             target_id=msg.message_id, user_id=msg.sender_id, command=m["cmd"].lower(),
                             args=text[m.end():].strip(), thread_id=msg.thread_id)
    if msg.chat_kind == "channel":
        # The bot never posts in channels: only the admins' chat commands (/track, /forget) count there;
        # other posts of tracked channels are stored for corroboration by the adapter, not routed.
        if m and m["cmd"].lower() in CHAT_COMMANDS and not _addressed_elsewhere(m["bot"], bot_username):
            return ChatSettingsRequest(platform=msg.platform, chat_id=msg.chat_id, chat_kind="channel",
                                       target_id=msg.message_id, user_id=msg.sender_id, command=m["cmd"].lower(),
                                       args=text[m.end():].strip(), title=msg.chat_title, handle=msg.chat_handle)
        return None
    if m:
        if _addressed_elsewhere(m["bot"], bot_username):
            return None  # a command for another bot in the group
        cmd = m["cmd"].lower()
        if cmd in ("start", "help"):
            kind: Literal["start", "help"] = "start" if cmd == "start" else "help"
            return Info(kind, target_id=msg.message_id, chat_id=chat_id, thread_id=thread_id, language=msg.language)
        if cmd == "check":
            return check(text[m.end():])
        if cmd == "evidence":
            if msg.chat_kind == "channel":
                return None
            return EvidenceRequest(check_id=evidence_arg(text[m.end():]), target_id=msg.message_id, chat_id=chat_id,
                                   thread_id=thread_id)
        if cmd == "review":
            if msg.chat_kind != "private":
                return None  # the queue holds other people's messages: admins use it in a private chat
            return ReviewRequest(platform=msg.platform, chat_id=msg.chat_id, target_id=msg.message_id,
                                 user_id=msg.sender_id, args=text[m.end():].strip(), thread_id=msg.thread_id)
        if cmd == WATCH_COMMAND:
            return WatchRequest(platform=msg.platform, chat_id=msg.chat_id, target_id=msg.message_id,
                                user_id=msg.sender_id, args=text[m.end():].strip(), thread_id=msg.thread_id)
        if cmd in CHAT_COMMANDS:
            return ChatSettingsRequest(platform=msg.platform, chat_id=msg.chat_id, chat_kind=msg.chat_kind,
                                       target_id=msg.message_id, user_id=msg.sender_id, command=cmd,
                                       args=text[m.end():].strip(), thread_id=msg.thread_id, title=msg.chat_title,
                                       handle=msg.chat_handle)
        if cmd in ("domains", "enrichment"):
            if msg.chat_kind == "channel":
                return None
            args = command_args(text, bot_username=bot_username)
            if args is None:
                return None
            return DomainsRequest(platform=msg.platform, chat_id=msg.chat_id, target_id=msg.message_id,
                                  user_id=msg.sender_id, scope=scope, args=args, thread_id=msg.thread_id)
        if msg.chat_kind != "private":
            return None
        # An unknown command in a private chat: check the whole text, it's what the user sent.
        return check(text)

    if msg.chat_kind == "private":
        if text or msg.image is not None:
            return check(text)
        return Info("usage", target_id=msg.message_id, chat_id=chat_id, thread_id=thread_id)

    if bot_username is None:
        return None
    mention = _mention(bot_username)
    if mention.search(text):
        return check(mention.sub(" ", text))
    return None


# `evidence <id>` without the slash; only a single id-like word, so "Evidence shows that …" is still checked.
_EVIDENCE_BARE = re.compile(r"^/?evidence(?:\s+(?P<args>`?[A-Za-z0-9_-]{1,64}`?))?\s*$", re.IGNORECASE)
_GREETINGS = ("help", "start", "hi", "hello")


def route_direct(msg: IncomingMessage, command_text: str) -> Action:
    """A direct message on a platform whose DMs carry commands without the slash and never name the bot
    (Slack): `domains …` (global rules), `evidence <id>`, `help`, else as `route()` decides.
    `command_text` is the message as the domains command reads it (a link shown as its label)."""
    text = msg.text.strip()
    args = command_args(command_text, bare=True)
    chat_id, target_id, thread_id = msg.chat_id, msg.message_id, msg.thread_id
    if args is not None:
        return DomainsRequest(platform=msg.platform, chat_id=chat_id, target_id=target_id, user_id=msg.sender_id,
                              scope=GLOBAL, args=args, thread_id=thread_id)
    if (ev := _EVIDENCE_BARE.match(text)) is not None:
        return EvidenceRequest(check_id=evidence_arg(ev["args"] or ""), chat_id=chat_id, target_id=target_id,
                               thread_id=thread_id)
    if text.lower() in _GREETINGS:
        return Info("help", chat_id=chat_id, target_id=target_id, thread_id=thread_id)
    return route(msg, bot_username=None)
