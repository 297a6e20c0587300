"""Telegram adapter: updates -> `IncomingMessage`, `Reply` -> Telegram HTML, sending and editing.

The only module that imports `telegram` (python-telegram-bot v22). It runs long polling through
PTB's `Application`; each message becomes a background task in `bot.telegram_bot.CheckService`, so
the polling loop never waits for the engine.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from telegram import (
    BotCommand,
    CallbackQuery,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    ReplyParameters,
    Update,
)
from telegram.constants import MessageLimit, ParseMode
from telegram.error import BadRequest
from telegram.ext import Application, ApplicationBuilder, ContextTypes, TypeHandler

from bot.domains import DomainCommands, DomainsRequest
from bot.review import ReviewCommands, ReviewRequest
from bot.evidence import (EVIDENCE_USAGE, UNKNOWN_CHECK, EvidenceRequest, callback_data, evidence_lines,
                          give_feedback, load_check, parse_callback)
from bot.render import Reply
from core.models import Result
from bot.telegram_bot import ERROR_TEXT, CheckRequest, CheckService, COMMANDS, Info, IncomingMessage, route
from core.engine import Engine
from storage.sqlite import Database

log = logging.getLogger(__name__)

MAX_TEXT = MessageLimit.MAX_TEXT_LENGTH  # 4096, counted in UTF-16 code units
MAX_CITATIONS = 5


@dataclass(frozen=True)
class TelegramConfig:
    token: str
    base_url: str | None = None  # e.g. "http://127.0.0.1:8081/bot"; PTB appends "<token>/<method>"
    base_file_url: str | None = None
    poll_timeout: float = 10.0  # getUpdates long-poll seconds
    max_concurrency: int = 4
    progress_interval: float = 1.0  # at most one progress edit per this many seconds
    admins: tuple[str, ...] = ()  # configured admins (Settings.admins): user ids, may change global rules


# ---------------------------------------------------------------------------------------------
# Translation: Telegram -> IncomingMessage


def _user_name(user: Any) -> str:
    if user is None:
        return ""
    if getattr(user, "username", None):
        return f"@{user.username}"
    return " ".join(x for x in (user.first_name, user.last_name) if x) or str(user.id)


def _chat_name(chat: Any) -> str:
    if chat is None:
        return ""
    if chat.title:
        return chat.title
    if chat.username:
        return f"@{chat.username}"
    return str(chat.id)


def forward_origin(message: Message) -> str | None:
    origin = message.forward_origin
    if origin is None:
        return None
    if isinstance(origin, MessageOriginUser):
        return _user_name(origin.sender_user)
    if isinstance(origin, MessageOriginHiddenUser):
        return origin.sender_user_name
    if isinstance(origin, MessageOriginChannel):
        return _chat_name(origin.chat) + (f" ({origin.author_signature})" if origin.author_signature else "")
    if isinstance(origin, MessageOriginChat):
        return _chat_name(origin.sender_chat) + (f" ({origin.author_signature})" if origin.author_signature else "")
    return "unknown"


def _kind(chat_type: str) -> str:
    if chat_type == "private":
        return "private"
    if chat_type == "channel":
        return "channel"
    return "group"


def to_incoming(message: Message, *, with_reply: bool = True) -> IncomingMessage:
    thread_id = message.message_thread_id if message.is_topic_message else None
    reply_to = None
    if with_reply and message.reply_to_message is not None:
        reply_to = to_incoming(message.reply_to_message, with_reply=False)
    return IncomingMessage(
        platform="telegram", chat_id=message.chat_id, chat_kind=_kind(message.chat.type),  # type: ignore[arg-type]
        message_id=message.message_id, text=message.text or message.caption or "", thread_id=thread_id,
        sender_id=message.from_user.id if message.from_user else None, forwarded_from=forward_origin(message),
        reply_to=reply_to, received_at=message.date, raw=message,
    )


# ---------------------------------------------------------------------------------------------
# Rendering: Reply -> Telegram HTML


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _link(url: str, title: str) -> str:
    title = esc(title or url)
    if url and url.lower().startswith(("http://", "https://")):
        return f'<a href="{esc(url)}">{title}</a>'
    return title


QUOTE_CHARS = 160


def _checked_line(request: CheckRequest | None) -> str | None:
    if request is None:
        return None
    text = " ".join(request.text.split())
    if len(text) > QUOTE_CHARS:
        text = text[:QUOTE_CHARS - 1].rstrip() + "…"
    line = f"Checked: “{esc(text)}”"
    if request.forwarded_from:
        line += f" (forwarded from {esc(request.forwarded_from)})"
    return f"<i>{line}</i>"


def render_html(reply: Reply, request: CheckRequest | None = None) -> str:
    """The verdict card in Telegram's HTML subset; everything from users or the web is escaped."""
    out = [f"<b>{esc(reply.headline)}</b>"]
    if (checked := _checked_line(request)) is not None:
        out.append(checked)
    if reply.reasoning:
        out += ["", esc(reply.reasoning)]
    if reply.citations:
        out += ["", "<b>Sources</b>"]
        for c in reply.citations[:MAX_CITATIONS]:
            meta = " — ".join(x for x in (esc(c.publisher), c.published_at.isoformat() if c.published_at else "") if x)
            rating = f" · rated “{esc(c.rating)}”" if c.rating else ""
            out.append(f"[{c.n}] {_link(c.url, c.title)}" + (f" — {meta}" if meta else "") + rating)
    if reply.related:
        out += ["", f"<b>{esc(reply.related_heading)}</b>"]
        for r in reply.related:
            who = f" — {esc(r.publisher)}" if r.publisher else ""
            claim = _link(r.url, r.claim) if r.url else esc(r.claim)
            out.append(f"• {claim} ({esc(r.rating)}{who}, match {r.similarity:.2f})")
    if reply.notes:
        out += [""] + [f"<i>Note: {esc(n)}</i>" for n in reply.notes]
    out += ["", f"Check id: <code>{esc(reply.check_id)}</code> · {esc(reply.mode)} mode"]
    return "\n".join(out)


def feedback_keyboard(check_id: str) -> InlineKeyboardMarkup:
    """The buttons under a verdict card: Sources, 👍, 👎 (callback data carries the check id)."""
    return InlineKeyboardMarkup([[
        InlineKeyboardButton("Sources", callback_data=callback_data("sources", check_id)),
        InlineKeyboardButton("👍", callback_data=callback_data("up", check_id)),
        InlineKeyboardButton("👎", callback_data=callback_data("down", check_id)),
    ]])


def render_evidence_html(result: Result) -> list[str]:
    """The full evidence view of a stored check as Telegram HTML, split into messages."""
    lines = evidence_lines(result, esc=esc, link=_link, bold=lambda t: f"<b>{t}</b>",
                           code=lambda t: f"<code>{t}</code>")
    return split_html("\n".join(lines))


def tg_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units); HTML markup only makes this an overestimate."""
    return len(text.encode("utf-16-le")) // 2


_TOKEN = re.compile(r"<[^>]*>|&#?\w+;|\n|[ \t]+|[^<&\s]+")
_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)")


def _tag(token: str) -> tuple[bool, str] | None:
    m = _TAG.match(token)
    return (m[1] == "/", m[2].lower()) if m else None


def split_html(text: str, limit: int = MAX_TEXT) -> list[str]:
    """Split Telegram HTML into parts of at most `limit`, never inside a tag or an entity.

    Prefers line breaks, then spaces; tags open across a split are closed at the end of a part and
    reopened at the start of the next, so each part is well-formed on its own.
    """
    if tg_len(text) <= limit:
        return [text]
    parts: list[str] = []
    stack: list[tuple[str, str]] = []  # (name, opening tag)
    cur: list[str] = []  # tokens of the current part (after the reopened tags)
    cur_len = 0
    last_break: int | None = None  # index in cur after the last newline/space, and the stack there
    break_stack: list[tuple[str, str]] = []
    start_stack: list[tuple[str, str]] = []

    def closing(st: list[tuple[str, str]]) -> str:
        return "".join(f"</{name}>" for name, _ in reversed(st))

    def opening(st: list[tuple[str, str]]) -> str:
        return "".join(tag for _, tag in st)

    def emit(tokens: list[str], st_start: list[tuple[str, str]], st_end: list[tuple[str, str]]) -> None:
        body = opening(st_start) + "".join(tokens).rstrip() + closing(st_end)
        if body.strip():
            parts.append(body)

    def apply(st: list[tuple[str, str]], token: str) -> None:
        t = _tag(token)
        if t is None:
            return
        is_close, name = t
        if is_close:
            for i in range(len(st) - 1, -1, -1):
                if st[i][0] == name:
                    del st[i:]
                    break
        elif not token.endswith("/>"):
            st.append((name, token))

    tokens = _TOKEN.findall(text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        after = list(stack)
        apply(after, tok)
        budget = limit - tg_len(opening(start_stack)) - tg_len(closing(after))
        if cur_len + tg_len(tok) > budget and cur:
            if last_break is not None and last_break > 0:
                # Cut at the last line break/space; carry the rest over.
                carry = cur[last_break:]
                emit(cur[:last_break], start_stack, break_stack)
                start_stack = list(break_stack)
                stack = list(break_stack)
                cur, cur_len, last_break = [], 0, None
                for t in carry:  # replay (they fitted before, they fit now)
                    if not cur and t.isspace():
                        continue
                    cur.append(t)
                    cur_len += tg_len(t)
                    apply(stack, t)
                continue
            emit(cur, start_stack, stack)
            start_stack = list(stack)
            cur, cur_len, last_break = [], 0, None
            continue
        if not cur and tok.isspace() and parts:
            i += 1
            continue
        room = limit - tg_len(opening(start_stack)) - tg_len(closing(after))
        if tg_len(tok) > room > 0 and not tok.startswith(("<", "&")):
            # A single word longer than a message: hard cut it.
            cut = max(1, room - cur_len)
            tokens[i:i + 1] = [tok[:cut], tok[cut:]]
            continue
        cur.append(tok)
        cur_len += tg_len(tok)
        stack = after
        if tok == "\n" or tok.isspace():
            last_break = len(cur)
            break_stack = list(stack)
        i += 1
    emit(cur, start_stack, stack)
    return parts


# ---------------------------------------------------------------------------------------------
# Sending


class TelegramResponder:
    """Replies to one checked message: progress message sent once, then edited in place."""

    def __init__(self, bot: Any, chat_id: int | str, reply_to: int | str, thread_id: int | str | None = None):
        self.bot = bot
        self.chat_id = chat_id
        self.reply_to = reply_to
        self.thread_id = thread_id
        self.message_id: int | None = None

    def _send_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = dict(
            chat_id=self.chat_id,
            reply_parameters=ReplyParameters(message_id=int(self.reply_to), allow_sending_without_reply=True),
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        if self.thread_id is not None:
            kw["message_thread_id"] = self.thread_id
        return kw

    async def _send(self, text: str, parse_mode: str | None = None, reply_markup: Any = None) -> Message:
        return await self.bot.send_message(text=text, parse_mode=parse_mode, reply_markup=reply_markup,
                                           **self._send_kwargs())

    async def _edit(self, text: str, parse_mode: str | None = None, reply_markup: Any = None) -> None:
        try:
            await self.bot.edit_message_text(text=text, chat_id=self.chat_id, message_id=self.message_id,
                                             parse_mode=parse_mode, reply_markup=reply_markup,
                                             link_preview_options=LinkPreviewOptions(is_disabled=True))
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise

    async def progress(self, text: str) -> None:
        if self.message_id is None:
            self.message_id = (await self._send(text)).message_id
        else:
            await self._edit(text)

    async def say(self, text: str) -> None:
        if self.message_id is None:
            self.message_id = (await self._send(text)).message_id
        else:
            await self._edit(text)

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        parts = split_html(render_html(reply, request))
        first, rest = parts[0], parts[1:]
        keyboard = feedback_keyboard(reply.check_id)
        if self.message_id is None:
            self.message_id = (await self._send(first, ParseMode.HTML, keyboard)).message_id
        else:
            await self._edit(first, ParseMode.HTML, keyboard)
        for part in rest:
            await self._send(part, ParseMode.HTML)

    async def send_html(self, parts: list[str]) -> None:
        """New messages (HTML), each a reply to the target message."""
        for part in parts:
            await self._send(part, ParseMode.HTML)


# ---------------------------------------------------------------------------------------------
# Application wiring


async def _answer_command(responder: TelegramResponder, name: str, chat_id: object,
                          produce: Awaitable[str]) -> None:
    """Answer an admin command with the sentence it produced, or an apology if it failed; never raise."""
    try:
        text = await produce
    except Exception:
        log.exception("%s command failed in chat %s", name, chat_id)
        text = ERROR_TEXT
    try:
        await responder.say(text)
    except Exception:
        log.exception("could not answer the %s command in chat %s", name, chat_id)


class TelegramBot:
    """A PTB `Application` that routes every message to a `CheckService`."""

    def __init__(self, config: TelegramConfig, engine: Engine, *, db: Database | None = None):
        self.config = config
        self.service = CheckService(engine, max_concurrency=config.max_concurrency,
                                    progress_interval=config.progress_interval)
        self.db = db if db is not None else engine.db
        self.domains = DomainCommands(self.db, config.admins)
        kb = getattr(getattr(engine, "matcher", None), "kb", None)
        self.review = ReviewCommands(self.db, kb.add if kb is not None else None, config.admins)
        builder = ApplicationBuilder().token(config.token)
        if config.base_url:
            builder = builder.base_url(config.base_url)
        if config.base_file_url:
            builder = builder.base_file_url(config.base_file_url)
        # The getUpdates HTTP read timeout must outlast the long poll.
        builder = builder.get_updates_read_timeout(config.poll_timeout + 10)
        self.application: Application = builder.build()
        self.application.add_handler(TypeHandler(Update, self._on_update))
        self.application.add_error_handler(self._on_error)
        self.username: str = ""

    async def _on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.callback_query is not None:
            self.service.spawn(self._callback(context.bot, update.callback_query), name="tipline-callback")
            return
        message = update.message or update.channel_post
        if message is None:
            return  # edits, reactions, … are not checked
        incoming = to_incoming(message)
        action = route(incoming, self.username or context.bot.username)
        if action is None:
            return
        responder = TelegramResponder(context.bot, action.chat_id, action.target_id, action.thread_id)
        if isinstance(action, DomainsRequest):
            self.service.spawn(self._domains(context.bot, action, message, responder), name="tipline-domains")
            return
        if isinstance(action, EvidenceRequest):
            self.service.spawn(self._evidence(action.check_id, responder), name="tipline-evidence")
            return
        if isinstance(action, ReviewRequest):
            self.service.spawn(self._review(action, responder), name="tipline-review")
            return
        self.service.submit(action, responder)

    async def _evidence(self, check_id: str, responder: TelegramResponder) -> bool:
        """Send the evidence view of `check_id` (or one sentence why not); False if there is no such check."""
        try:
            if not check_id:
                await responder.say(EVIDENCE_USAGE)
                return False
            result = await load_check(self.db, check_id)
            if result is None:
                await responder.say(UNKNOWN_CHECK)
                return False
            await responder.send_html(render_evidence_html(result))
            return True
        except Exception:
            log.exception("could not send the evidence of check %r", check_id)
            return False

    async def _callback(self, bot: Any, query: CallbackQuery) -> None:
        """A button under a verdict card: Sources -> the evidence in the thread; 👍/👎 -> a stored vote."""
        parsed = parse_callback(query.data)
        answer: str | None = None
        try:
            if parsed is None:
                answer = None
            elif parsed[0] == "sources":
                message = query.message
                if not isinstance(message, Message):  # too old to reply to
                    answer = "That card is too old: use /evidence with its check id."
                else:
                    await bot.answer_callback_query(query.id)
                    thread = message.message_thread_id if message.is_topic_message else None
                    responder = TelegramResponder(bot, message.chat_id, message.message_id, thread)
                    await self._evidence(parsed[1], responder)
                    return
            else:
                kind, check_id = parsed
                answer = await give_feedback(self.db, check_id, "telegram", query.from_user.id,
                                             1 if kind == "up" else -1)
        except Exception:
            log.exception("callback %r failed", query.data)
            answer = ERROR_TEXT
        try:
            await bot.answer_callback_query(query.id, text=answer)
        except Exception:
            log.exception("could not answer callback query %s", query.id)

    async def _domains(self, bot: Any, req: DomainsRequest, message: Message, responder: TelegramResponder) -> None:
        """A /domains command; in groups the chat's administrators may change the chat's rules."""
        async def is_chat_admin() -> bool:
            if message.sender_chat is not None and message.sender_chat.id == message.chat_id:
                return True  # an anonymous group admin, posting as the group
            if req.user_id is None:
                return False
            member = await bot.get_chat_member(chat_id=req.chat_id, user_id=int(req.user_id))
            return member.status in ("creator", "administrator")

        await _answer_command(responder, "domains", req.chat_id, self.domains.handle(
            req, is_chat_admin=None if message.chat.type == "private" else is_chat_admin))

    async def _review(self, req: ReviewRequest, responder: TelegramResponder) -> None:
        await _answer_command(responder, "review", req.chat_id, self.review.handle(req))

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("error while handling an update", exc_info=context.error)

    async def start(self) -> None:
        app = self.application
        await app.initialize()  # getMe
        self.username = app.bot.username
        await app.bot.set_my_commands([BotCommand(c, d) for c, d in COMMANDS])
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(timeout=self.config.poll_timeout,
                                        allowed_updates=["message", "channel_post", "callback_query"])
        log.info("telegram: polling as @%s", self.username)

    async def stop(self) -> None:
        app = self.application
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        await self.service.aclose()
        await app.shutdown()

    async def run_forever(self, stop: asyncio.Event | None = None) -> None:
        await self.start()
        try:
            await (stop or asyncio.Event()).wait()
        finally:
            await self.stop()


__all__ = ["TelegramBot", "TelegramConfig", "TelegramResponder", "render_html", "split_html", "to_incoming",
           "render_evidence_html", "feedback_keyboard",
           "forward_origin", "CheckRequest", "Info"]
