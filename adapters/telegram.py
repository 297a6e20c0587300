"""Telegram adapter: updates -> `IncomingMessage`, `Reply` -> Telegram HTML, sending and editing.

The only module that imports `telegram` (python-telegram-bot v22). Updates come by long polling or a
webhook; each is routed once (`TelegramBot.take`): a check is persisted in the durable queue before the
update is confirmed, a command is answered in a background task, so intake never waits for the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from telegram.constants import ChatAction, MessageLimit, ParseMode
from telegram.error import BadRequest
from telegram.ext import Application, ApplicationBuilder

from adapters.telegram_flood import FloodControl

if TYPE_CHECKING:
    from aiohttp import web

from bot.card import Markup, card
from bot.requests import GLOBAL, Addressed, ChatKind, CheckRequest, IncomingMessage, chat_scope
from bot.router import route
from bot.texts import COMMANDS, ERROR_TEXT
from bot.chat_app import ChatApp, Ticket
from bot.chat_settings import tracked_message
from bot.digest import Digest, StoryAlert, alert_sections, digest_sections, sections_text, unchecked
from bot.factcheck_files import FactCheckFiles
from core.i18n import t
from bot.images import ImageRef
from bot.evidence import callback_data, evidence_lines, give_feedback, parse_callback
from bot.notify import Asker, ReviewNotice, notice_text
from bot.render import AlsoReportedLine, Reply
from core.intake.image_limits import ImageLimits
from schema.models import Result

log = logging.getLogger(__name__)

MAX_TEXT = MessageLimit.MAX_TEXT_LENGTH  # 4096, counted in UTF-16 code units


@dataclass(frozen=True)
class TelegramConfig:
    token: str
    base_url: str | None = None  # e.g. "http://127.0.0.1:8081/bot"; PTB appends "<token>/<method>"
    base_file_url: str | None = None
    poll_timeout: float = 10.0  # getUpdates long-poll seconds
    webhook_url: str | None = None  # public HTTPS URL: webhook mode instead of long polling (needs a queue)
    webhook_secret: str | None = None  # sent by Telegram in X-Telegram-Bot-Api-Secret-Token


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


def _kind(chat_type: str) -> ChatKind:
    if chat_type == "private":
        return "private"
    if chat_type == "channel":
        return "channel"
    return "group"


def image_of(message: Message) -> ImageRef | None:
    """The picture a message carries: the largest size of a photo (Telegram sends several, JPEG), or a
    file sent as a document (its declared type decides later whether it is read or refused)."""
    if message.photo:
        best = max(message.photo, key=lambda p: p.width * p.height)
        return ImageRef("telegram", best.file_id, mime="image/jpeg", size=best.file_size)
    doc = message.document
    if doc is not None:
        return ImageRef("telegram", doc.file_id, mime=doc.mime_type or "", size=doc.file_size,
                        name=doc.file_name or "")
    return None


class TelegramImageFetcher:
    """Downloads a file users sent: getFile, then the file URL (Telegram lets bots download up to 20 MB)."""

    def __init__(self, bot: Any):
        self.bot = bot

    async def fetch(self, ref: ImageRef, max_bytes: int) -> bytes:
        limits = ImageLimits(max_bytes=max_bytes)
        file = await self.bot.get_file(ref.file_id)
        limits.refuse_size(file.file_size)  # known before downloading
        data = bytes(await file.download_as_bytearray())
        limits.refuse_size(len(data))  # a server that did not say, or said less
        return data


def to_incoming(message: Message, *, with_reply: bool = True) -> IncomingMessage:
    thread_id = message.message_thread_id if message.is_topic_message else None
    reply_to = None
    if with_reply and message.reply_to_message is not None:
        reply_to = to_incoming(message.reply_to_message, with_reply=False)
    return IncomingMessage(
        platform="telegram", chat_id=message.chat_id, chat_kind=_kind(message.chat.type),
        message_id=message.message_id, text=message.text or message.caption or "", thread_id=thread_id,
        sender_id=message.from_user.id if message.from_user else None, forwarded_from=forward_origin(message),
        reply_to=reply_to, received_at=message.date, raw=message, chat_title=message.chat.title or "",
        chat_handle=f"@{message.chat.username}" if message.chat.username else "", image=image_of(message),
        language=(message.from_user.language_code or "")[:2] if message.from_user else "",
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


HTML = Markup(text=esc, bold=lambda t: f"<b>{t}</b>", italic=lambda t: f"<i>{t}</i>", link=_link,
              code=lambda t: f"<code>{t}</code>")
_ITALIC = {"quote", "aside", "notes"}


def render_html(reply: Reply, request: CheckRequest | None = None) -> str:
    """The verdict card (bot/card.py) in Telegram's HTML subset; everything from users or the web is escaped."""
    out: list[str] = []
    for section in card(reply, HTML, request):
        if section.kind not in ("headline", "quote") and (section.lines or section.heading):
            out.append("")
        if section.heading:
            out.append(section.heading)
        out += [HTML.italic(line.text) if section.kind in _ITALIC else line.text for line in section.lines]
    return "\n".join(out)


def also_reported_html(line: AlsoReportedLine) -> str:
    """The "Also reported by" line: each chat linked to its message where there is a t.me link."""
    return line.text(name=HTML.name, outlet=esc)


def telegram_permalink(chat: Any, message_id: int) -> str:
    """t.me link to a message: public chats by username, private supergroups/channels by internal id
    (opens for members only); basic groups have no message links."""
    if getattr(chat, "username", None):
        return f"https://t.me/{chat.username}/{message_id}"
    cid = str(chat.id)
    if cid.startswith("-100"):
        return f"https://t.me/c/{cid[4:]}/{message_id}"
    return ""


def feedback_keyboard(check_id: str) -> InlineKeyboardMarkup:
    """The buttons under a verdict card: Sources, 👍, 👎 (callback data carries the check id)."""
    return InlineKeyboardMarkup([[
        InlineKeyboardButton("Sources", callback_data=callback_data("sources", check_id)),
        InlineKeyboardButton("👍", callback_data=callback_data("up", check_id)),
        InlineKeyboardButton("👎", callback_data=callback_data("down", check_id)),
    ]])


DIGEST_CHECK = "dgc:"  # callback data of a digest's "check it" button: the prefix, then the message key


def digest_keyboard(digest: Digest) -> InlineKeyboardMarkup | None:
    """A "Check #n" button per item without a verdict (callback data is at most 64 bytes: longer keys
    get no button rather than a cut one)."""
    buttons = [InlineKeyboardButton(t("digest.check_button", digest.lang, n=n), callback_data=DIGEST_CHECK + key)
               for n, key in unchecked(digest) if len((DIGEST_CHECK + key).encode()) <= 64]
    if not buttons:
        return None
    return InlineKeyboardMarkup([buttons[i:i + 3] for i in range(0, len(buttons), 3)])


class TelegramDigestPoster:
    """Posts digests and alerts (bot/digest_schedule.py) as new messages, in Telegram HTML."""

    def __init__(self, bot: Any):
        self.bot = bot

    async def _post(self, chat_id: str, thread_id: str | None, html_text: str, keyboard: Any = None,
                    reply_to: str | None = None) -> None:
        parts = split_html(html_text)
        for i, part in enumerate(parts):
            kw: dict[str, Any] = dict(chat_id=chat_id, text=part, parse_mode=ParseMode.HTML,
                                      link_preview_options=LinkPreviewOptions(is_disabled=True))
            if thread_id is not None:
                kw["message_thread_id"] = int(thread_id)
            if reply_to is not None and i == 0:
                kw["reply_parameters"] = ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)
            if keyboard is not None and i == len(parts) - 1:
                kw["reply_markup"] = keyboard
            await self.bot.send_message(**kw)

    async def post_digest(self, chat_id: str, thread_id: str | None, digest: Digest,
                          reply_to: str | None = None) -> None:
        await self._post(chat_id, thread_id, sections_text(digest_sections(digest, HTML)), digest_keyboard(digest),
                         reply_to)

    async def post_alert(self, chat_id: str, thread_id: str | None, alert: StoryAlert) -> None:
        await self._post(chat_id, thread_id, sections_text(alert_sections(alert, HTML)))


def render_evidence_html(result: Result) -> list[str]:
    """The full evidence view of a stored check as Telegram HTML, split into messages."""
    lines = evidence_lines(result, HTML)
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

    async def answer(self, text: str) -> None:
        await self.say(text)  # sent without a parse mode: nothing in it is markup

    async def evidence(self, result: Result) -> None:
        await self.send_html(render_evidence_html(result))

    async def send_html(self, parts: list[str]) -> None:
        """New messages (HTML), each a reply to the target message."""
        for part in parts:
            await self._send(part, ParseMode.HTML)


# ---------------------------------------------------------------------------------------------
# Intake (bot/queue.py): a check is in SQLite before Telegram is told the update arrived.
#
# PTB's Updater confirms updates on its own (the next getUpdates carries offset = last + 1 as soon as the
# update is put on its in-memory queue), so a crash could lose them. Our own loop asks getUpdates, takes
# each update (a check is persisted), and only then asks again with offset = update + 1. A crash after
# persisting and before confirming makes Telegram deliver the update again; its idempotency key (update
# id + chat + message id) finds the job and nothing is done twice.

ALLOWED_UPDATES = ["message", "channel_post", "callback_query"]
WEBHOOK_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def where(req: Addressed) -> dict[str, Any]:
    """Where a job answers on Telegram: the chat, the message to reply to, the topic."""
    return {"chat_id": req.chat_id, "reply_to": req.target_id, "thread_id": req.thread_id}


class TelegramResponderFactory:
    """The queue's worker's `TelegramResponder` for a job's `where` (after a restart, too)."""

    def __init__(self, bot: Any):
        self.bot = bot

    where = staticmethod(where)

    def build(self, where: Any, reply_ref: str | None) -> TelegramResponder:
        responder = TelegramResponder(self.bot, where["chat_id"], where["reply_to"], where.get("thread_id"))
        if reply_ref is not None:
            responder.message_id = int(reply_ref)  # edit the reply already sent
        return responder

    def reply_ref(self, responder: Any) -> str | None:
        mid = getattr(responder, "message_id", None)
        return None if mid is None else str(mid)

    async def find_reply(self, where: Any) -> str | None:
        """The Bot API cannot list or search a bot's own messages, so a reply sent in the last ~2 ms before a
        kill -9 (applied, id not yet journaled) cannot be found: the resumed job sends anew
        (docs/reliability.md)."""
        return None


class TelegramPresence:
    """bot/progress_delay.py's "working on it" sign: "typing…" in the asker's chat (and topic). Telegram
    shows it for 5 s or until the bot's next message, so it is sent again every 4 s while a check runs."""

    refresh_s: float | None = 4.0

    def __init__(self, bot: Any):
        self.bot = bot

    async def show(self, req: CheckRequest, where: Any) -> None:
        await self.bot.send_chat_action(chat_id=where["chat_id"], action=ChatAction.TYPING,
                                        message_thread_id=where.get("thread_id"))

    async def clear(self, req: CheckRequest, where: Any) -> None:
        return None  # the card clears it (and it expires after 5 s anyway)


class TelegramNotifier:
    """Sends a review notice (bot/notify.py) to an asker: a reply to the checked message, same topic."""

    def __init__(self, bot: Any):
        self.bot = bot

    async def notify(self, asker: Asker, notice: ReviewNotice) -> None:
        where = asker.where
        responder = TelegramResponder(self.bot, where["chat_id"], where["reply_to"], where.get("thread_id"))
        await responder.send_html(split_html(notice_text(notice, HTML)))


def idempotency_key(update: Update, message: Message) -> str:
    return f"tg:{update.update_id}:{message.chat_id}:{message.message_id}"


class _DurableIntake:
    """Mixed into TelegramBot: the polling loop and the webhook handler, both handing updates to `take`."""

    config: TelegramConfig
    application: Application
    chat: ChatApp
    username: str
    _poller: asyncio.Task[None] | None
    files: FactCheckFiles | None

    async def take(self, update: Update) -> None:
        raise NotImplementedError

    def factcheck_file(self, message: Message) -> Any | None:
        """The document of a message that is an admin's fact-check file (bot/factcheck_files.py), else None."""
        doc = message.document
        if self.files is None or doc is None or message.from_user is None:
            return None
        wanted = self.files.wanted("telegram", message.from_user.id, message.chat.type == "private",
                                   doc.file_name or "")
        return doc if wanted else None

    async def ingest_file(self, bot: Any, message: Message, doc: Any) -> None:
        """Download the file (getFile), ingest it, reply with the report; every failure is one sentence."""
        assert self.files is not None
        user = message.from_user
        lang = user.language_code[:2] if user is not None and user.language_code else "en"
        name = doc.file_name or "file"
        responder = TelegramResponder(bot, message.chat_id, message.message_id)
        try:
            refused = self.files.too_big(name, doc.file_size, lang)
            if refused is not None:
                await responder.say(refused)
                return
            await responder.say(t("ingest.reading", lang, name=name))
            file = await bot.get_file(doc.file_id)
            data = bytes(await file.download_as_bytearray())
            await responder.say(await self.files.ingest("telegram", name, data, lang))
        except Exception:
            log.exception("telegram: ingesting %s failed", name)
            with contextlib.suppress(Exception):
                await responder.say(ERROR_TEXT)

    async def _poll(self) -> None:
        bot = self.application.bot
        offset: int | None = None
        delay = 1.0
        while True:
            try:
                updates = await bot.get_updates(offset=offset, timeout=int(self.config.poll_timeout),
                                                allowed_updates=ALLOWED_UPDATES,
                                                read_timeout=self.config.poll_timeout + 10)
                for update in updates:
                    await self.take(update)
                    offset = update.update_id + 1  # confirmed by the next getUpdates, never before
                delay = 1.0
            except asyncio.CancelledError:
                raise
            except Exception:
                # Network or database trouble: the unconfirmed updates come again; back off meanwhile.
                log.warning("telegram: polling failed; retrying in %.0f s", delay, exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

    async def start(self) -> None:
        app = self.application
        await app.initialize()  # getMe
        self.username = app.bot.username
        await app.bot.set_my_commands([BotCommand(c, d) for c, d in COMMANDS])
        if self.config.webhook_url:
            await app.bot.set_webhook(self.config.webhook_url, secret_token=self.config.webhook_secret,
                                      allowed_updates=ALLOWED_UPDATES)
            log.info("telegram: webhook %s as @%s", self.config.webhook_url, self.username)
        else:
            await app.bot.delete_webhook()
            self._poller = asyncio.create_task(self._poll(), name="tipline-telegram-poll")
            log.info("telegram: polling as @%s", self.username)

    async def stop_intake(self) -> None:
        """Stop taking updates (the first step of a graceful shutdown)."""
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None

    @property
    def webhook_path(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self.config.webhook_url or "").path or "/telegram/webhook"

    def add_webhook_route(self, web_app: web.Application) -> None:
        web_app.router.add_post(self.webhook_path, self.handle_webhook)

    async def handle_webhook(self, request: web.Request) -> web.Response:
        """Webhook delivery: check the secret, take the update (a check is persisted), then 200 (a non-2xx
        makes Telegram retry)."""
        from aiohttp import web

        secret = self.config.webhook_secret or ""
        given = request.headers.get(WEBHOOK_SECRET_HEADER, "")
        if not secret or not hmac.compare_digest(given.encode(), secret.encode()):
            return web.json_response({"error": "wrong or missing secret token"}, status=401)
        if not self.username:
            # The server listens before setWebhook (a webhook set earlier may deliver at once), and
            # PTB cannot process an update before getMe: Telegram retries a 503 later.
            return web.json_response({"error": "starting; try again"}, status=503)
        try:
            update = Update.de_json(await request.json(), self.application.bot)
        except Exception:
            return web.json_response({"error": "not a Telegram update"}, status=400)
        if update is None:
            return web.json_response({"error": "not a Telegram update"}, status=400)
        try:
            await self.take(update)
        except Exception:
            log.exception("telegram: could not persist update %s", update.update_id)
            return web.json_response({"error": "try again"}, status=503)
        return web.json_response({})


# ---------------------------------------------------------------------------------------------
# Application wiring


def _chat_admin_check(bot: Any, message: Message, user_id: int | str | None) -> Callable[[], Awaitable[bool]]:
    """Whether the sender administers the chat the command came from (asked only when needed)."""
    async def is_chat_admin() -> bool:
        if message.chat.type == "channel":
            return True  # only a channel's admins can post in it
        if message.sender_chat is not None and message.sender_chat.id == message.chat_id:
            return True  # an anonymous group admin, posting as the group
        if user_id is None:
            return False
        member = await bot.get_chat_member(chat_id=message.chat_id, user_id=int(user_id))
        return member.status in ("creator", "administrator")
    return is_chat_admin


def build_application(config: TelegramConfig) -> Application:
    """PTB's Application for `config`: every request its bot makes (replies, digests, alerts, review notices)
    goes through flood control (adapters/telegram_flood.py: RetryAfter waited out and retried, sends paced)."""
    builder = ApplicationBuilder().token(config.token).rate_limiter(FloodControl())
    if config.base_url:
        builder = builder.base_url(config.base_url)
    if config.base_file_url:
        builder = builder.base_file_url(config.base_file_url)
    # The getUpdates HTTP read timeout must outlast the long poll.
    return builder.get_updates_read_timeout(config.poll_timeout + 10).build()


class TelegramBot(_DurableIntake):
    """Telegram for the shared `ChatApp`: PTB's `Application` is the Bot API client (flood control, getMe);
    our own intake (`_DurableIntake`) routes each update once and persists a check before confirming it."""

    def __init__(self, config: TelegramConfig, chat: ChatApp, files: FactCheckFiles | None = None):
        self.config = config
        self.chat = chat
        self.files = files  # fact-check files admins send in a private chat (bot/factcheck_files.py)
        self.application: Application = build_application(config)
        self.username: str = ""
        self._poller: asyncio.Task[None] | None = None
        chat.register("telegram", responders=TelegramResponderFactory(self.application.bot),
                      notifier=TelegramNotifier(self.application.bot),
                      poster=TelegramDigestPoster(self.application.bot),
                      images=TelegramImageFetcher(self.application.bot),
                      presence=TelegramPresence(self.application.bot))

    async def take(self, update: Update) -> None:
        """One update, routed once. A check is in the queue when this returns (raises if it could not be
        persisted, so the update is not confirmed and comes again); anything else runs as a background task."""
        bot = self.application.bot
        if update.callback_query is not None:
            self.chat.service.spawn(self._callback(bot, update.callback_query), name="tipline-callback")
            return
        message = update.message or update.channel_post
        if message is None:
            return  # edits, reactions, … are not checked
        if (doc := self.factcheck_file(message)) is not None:
            self.chat.service.spawn(self.ingest_file(bot, message, doc), name="tipline-ingest-file")
            return
        incoming = to_incoming(message)
        action = route(incoming, self.username or bot.username)
        if action is None:
            if incoming.chat_kind != "private" and incoming.text.strip():
                self.chat.service.spawn(self._observe(bot, message, incoming), name="tipline-observe")
            return
        if isinstance(action, CheckRequest):
            await self.chat.submit("telegram", action, Ticket(idempotency_key(update, message), "telegram",
                                                              where(action)))
            return
        is_chat_admin = None if message.chat.type == "private" else \
            _chat_admin_check(bot, message, incoming.sender_id)
        await self.chat.dispatch("telegram", action, TelegramResponder(bot, action.chat_id, action.target_id,
                                                                       action.thread_id),
                                 is_chat_admin=is_chat_admin)

    async def _callback(self, bot: Any, query: CallbackQuery) -> None:
        """A button under a verdict card: Sources -> the evidence in the thread; 👍/👎 -> a stored vote."""
        if (query.data or "").startswith(DIGEST_CHECK):
            await self._digest_check(bot, query)
            return
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
                    await self.chat.evidence(parsed[1], responder)
                    return
            else:
                kind, check_id = parsed
                answer = await give_feedback(self.chat.db, check_id, "telegram", query.from_user.id,
                                             1 if kind == "up" else -1)
        except Exception:
            log.exception("callback %r failed", query.data)
            answer = ERROR_TEXT
        try:
            await bot.answer_callback_query(query.id, text=answer)
        except Exception:
            log.exception("could not answer callback query %s", query.id)

    async def _digest_check(self, bot: Any, query: CallbackQuery) -> None:
        """A digest's "Check #n": the story's representative message is checked, the card a reply to the digest."""
        message = query.message
        try:
            text = await self.chat.story_text((query.data or "")[len(DIGEST_CHECK):])
            if text is None or not isinstance(message, Message):
                lang = "en"
                if isinstance(message, Message) and self.chat.digests is not None:
                    lang = await self.chat.digests.language("telegram", message.chat_id)
                await bot.answer_callback_query(query.id, text=t("digest.gone", lang))
                return
            await bot.answer_callback_query(query.id)
            thread = message.message_thread_id if message.is_topic_message else None
            req = CheckRequest(text=text, chat_id=message.chat_id, target_id=message.message_id, thread_id=thread,
                               requested_by=query.from_user.id,
                               scope=chat_scope("telegram", message.chat_id) if message.chat.type != "private"
                               else GLOBAL)
            await self.chat.submit("telegram", req, Ticket(f"tg-cb:{query.id}", "telegram", where(req)))
        except Exception:
            log.exception("digest check %r failed", query.data)

    async def _observe(self, bot: Any, message: Message, incoming: IncomingMessage) -> None:
        """An ordinary group message or channel post: stored if the chat is tracked; in a group with
        /auto on, checked silently and answered only for a strong match. The bot never posts in channels."""
        chat = message.chat
        if incoming.text.lstrip().startswith("/"):
            return  # a command for another bot: neither news nor a claim
        tracked = tracked_message(
            "telegram", message.chat_id, message.message_id, incoming.text, message.date,
            author=f"@{chat.username}" if chat.username else (chat.title or str(chat.id)),
            permalink=telegram_permalink(chat, message.message_id), kind=incoming.chat_kind)
        req = CheckRequest(text=incoming.text, chat_id=incoming.chat_id, target_id=incoming.message_id,
                           thread_id=incoming.thread_id, forwarded_from=incoming.forwarded_from,
                           requested_by=incoming.sender_id, scope=f"telegram:{incoming.chat_id}")
        await self.chat.observe("telegram", tracked, req, TelegramResponder(bot, req.chat_id, req.target_id,
                                                                            req.thread_id),
                                auto=incoming.chat_kind == "group")

    async def stop(self) -> None:
        await self.stop_intake()
        app = self.application
        await self.chat.aclose()  # the checks and commands already running finish (shared: idempotent)
        if app._initialized:  # type: ignore[attr-defined]
            await app.shutdown()

    async def run_forever(self, stop: asyncio.Event | None = None) -> None:
        await self.start()
        try:
            await (stop or asyncio.Event()).wait()
        finally:
            await self.stop()


__all__ = ["TelegramBot", "TelegramResponderFactory", "TelegramPresence", "TelegramNotifier", "TelegramConfig", "TelegramResponder",
           "render_html", "split_html", "to_incoming", "render_evidence_html", "feedback_keyboard", "forward_origin"]
