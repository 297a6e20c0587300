"""Chat glue shared by the chat adapters: message -> what to do -> engine -> neutral reply.

Nothing here knows a chat platform (tests/test_architecture.py forbids `bot/` importing a chat SDK).
Each adapter (`adapters/telegram.py`, `adapters/slack.py`) translates a platform event into an
`IncomingMessage`, asks `route()` what to do, and hands a check to the durable queue (bot/queue.py),
whose workers call `CheckService.run_check` with a `Responder` that knows how to send and edit
messages on that platform.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bot.chat_settings import CHAT_COMMANDS, ChatSettingsRequest
from bot.digest_commands import DIGEST_COMMANDS, DigestRequest
from bot.domains import GLOBAL, DomainsRequest, chat_scope, command_args
from bot.review import ReviewRequest
from bot.watch_commands import WATCH_COMMAND, WatchRequest
from bot.evidence import EvidenceRequest, evidence_arg
from bot.images import ImageReader, ImageRef, NoTextInImage, combine, refusal_text
from bot.photo_memory import PhotoMemory, reviewed_answer
from bot.render import Reply, to_reply
from schema.models import Result
from schema.text import safe_text
from core.engine import Engine, ProgressSink
from core.image_limits import ImageRefused
from core.ocr import OcrUnavailable
from core.i18n import t
from core.intake import EmptyInput, detect_language
from storage.sqlite import Database

if TYPE_CHECKING:
    from bot.chat_settings import CheckExtras  # noqa: F401 (annotation only)

log = logging.getLogger(__name__)

ChatKind = Literal["private", "group", "channel"]


@dataclass(frozen=True)
class IncomingMessage:
    """One chat message, platform-neutral. `text` is the message text or a media caption; `image` a
    photo or image file attached to it (read by OCR when the message is checked)."""

    platform: str
    chat_id: int | str
    chat_kind: ChatKind
    message_id: int | str
    text: str
    thread_id: int | str | None = None
    sender_id: int | str | None = None
    forwarded_from: str | None = None
    reply_to: IncomingMessage | None = None
    is_admin_hint: bool = False
    received_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    raw: Any = field(default=None, repr=False, compare=False)
    chat_title: str = ""  # a group's or channel's name, and its public @handle where it has one
    chat_handle: str = ""
    image: ImageRef | None = None
    language: str = ""  # the sender's interface language where the platform says it (Telegram's language_code)

    def __post_init__(self) -> None:
        # Made safe where it enters, before the durable queue stores it (SQLite refuses lone surrogates).
        for name in ("text", "forwarded_from", "chat_title", "chat_handle"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, safe_text(value))


@dataclass(frozen=True)
class CheckRequest:
    """Check `text` (and the text read from `image`, if any); answer as a reply to message `target_id`
    (the checked message)."""

    text: str
    chat_id: int | str
    target_id: int | str
    thread_id: int | str | None = None
    forwarded_from: str | None = None
    requested_by: int | str | None = None
    scope: str = GLOBAL  # whose source rules apply: global, or a group chat's own
    image: ImageRef | None = None
    # Where it came from ("telegram", "slack"): with `requested_by`, whose check it is (the stored check
    # keeps their pseudonym, for /forget me). Set by ChatApp and the queue's workers, not by the adapters.
    platform: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", safe_text(self.text))
        # The durable queue stores the request as JSON: the image comes back as a dict.
        object.__setattr__(self, "image", ImageRef.from_payload(self.image))
        if self.forwarded_from is not None:
            object.__setattr__(self, "forwarded_from", safe_text(self.forwarded_from))


@dataclass(frozen=True)
class Info:
    """Answer with a fixed text (/start, /help, usage hints)."""

    kind: Literal["start", "help", "usage"]
    chat_id: int | str
    target_id: int | str
    thread_id: int | str | None = None
    language: str = ""  # the asker's interface language, for the texts that have one


Action = (CheckRequest | Info | DomainsRequest | EvidenceRequest | ChatSettingsRequest | ReviewRequest | DigestRequest
          | WatchRequest | None)


class Addressed(Protocol):
    """What every routed request carries: where it came from and which message to answer."""

    @property
    def chat_id(self) -> int | str: ...

    @property
    def target_id(self) -> int | str: ...

    @property
    def thread_id(self) -> int | str | None: ...

COMMANDS: list[tuple[str, str]] = [
    ("start", "What this bot does"),
    ("help", "How to use it, privacy, examples"),
    ("check", "Fact-check a message: reply to it with /check, or /check <text>"),
    ("evidence", "All sources and the trace of a past check: /evidence <check id>"),
    ("domains", "Admins: trusted and blocked source domains (/domains list)"),
    ("review", "Admins: checks waiting for a verdict; /review <id> <rating> <url> records one"),
    ("track", "Admins: /track on|off stores this chat's messages for 'also reported by'"),
    ("auto", "Admins: /auto on|off answers group messages that match a known fact-check"),
    ("forget", "/forget me: delete your checks, votes and messages. Admins: /forget: this chat's messages"),
    ("stats", "Admins: checks, verdict mix, match rate, tracked chats"),
    ("digest", "Admins: /digest on [daily HH:MM | every N h] [top K], off, now: what spread in tracked chats"),
    ("trending", "Admins: /trending [hours] the stories spreading in tracked chats now"),
    ("alerts", "Admins: /alerts on N: one message per false story reaching N tracked chats"),
    ("watch", "Admins: /watch add @channel or a feed's URL reads public channels and news feeds (list, remove)"),
]

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


# ---------------------------------------------------------------------------------------------
# Replies


class Responder(Protocol):
    """How a check talks back on one platform, always as a reply to the checked message."""

    async def progress(self, text: str) -> None:
        """Send the progress message the first time, edit it in place afterwards."""

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        """Turn the progress message (if any) into the verdict card; `request` says what was checked."""

    async def say(self, text: str) -> None:
        """A short plain-text answer; replaces the progress message if there is one."""


STAGE_TEXT: dict[str, str] = {
    "image": "reading the text in the image",
    "intake": "reading the message",
    "match": "matching against fact-checks",
    "verdict": "weighing the evidence",
}
CHECKING = "🔎 Checking…"


class ThrottledProgress:
    """A `ProgressSink` that edits the progress message at most once per `min_interval` seconds.

    Stages that arrive too soon after the last edit are dropped (the next one, or the verdict,
    replaces them anyway): chat platforms rate-limit edits, and a check is often faster than that.
    """

    def __init__(self, responder: Responder, *, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self.responder = responder
        self.min_interval = min_interval
        self.clock = clock
        self._last: float | None = None
        self.shown: list[str] = []

    async def start(self, stage: str | None = None) -> None:
        """The progress message, sent at once; with `stage`, saying what happens first."""
        await self._show(CHECKING if stage is None else f"{CHECKING} {STAGE_TEXT.get(stage, stage)}")

    async def stage(self, name: str, detail: str = "") -> None:
        if self._last is not None and self.clock() - self._last < self.min_interval:
            return
        await self._show(f"{CHECKING} {STAGE_TEXT.get(name, name)}")

    async def _show(self, text: str) -> None:
        first = self._last is None
        self._last = self.clock()
        self.shown.append(text)
        try:
            await self.responder.progress(text)
        except Exception:  # a failed progress edit must never fail the check
            if first:  # but a platform that cannot take the first message cannot take the answer either
                raise
            log.warning("progress update failed", exc_info=True)


START_TEXT = (
    "👋 I'm tipline, an open-source fact-checking bot.\n\n"
    "Send or forward me a message and I'll check it against published fact-checks, "
    "then answer with a verdict, my confidence, and the sources.\n\n"
    "In groups, reply to a message with /check, or write /check followed by the text, "
    "or mention me. Send /help for more."
)
HELP_TEXT = (
    "How to use me\n"
    "• Private chat: send or forward any message: text, a screenshot (I read the text in it), "
    "or a captioned photo/video.\n"
    "• Groups: reply to a message with /check, write /check <text>, or mention me with the text. "
    "I don't read ordinary group chatter.\n\n"
    "Examples\n"
    "• The 5G rollout caused the coronavirus outbreak\n"
    "• /check Drinking bleach cures COVID-19\n\n"
    "Evidence and feedback\n"
    "• /evidence <check id> shows every source, match and step behind a verdict "
    "(the id is at the bottom of the card; the Sources button does the same).\n"
    "• 👍 / 👎 under a card tell us whether it helped; a 👎 on an unsettled check is sent for review.\n\n"
    "Admins\n"
    "• /domains list shows the trusted and blocked source domains; "
    "/domains allow add <domain> or /domains deny add <domain> changes them "
    "(in a group: for that group, by its admins).\n"
    "• /track on|off (groups and channels) stores the chat's messages for a limited time so that "
    "verdict cards can say which other chats reported the same story; /forget deletes them. "
    "/auto on|off lets me answer group messages that match a known fact-check. /stats shows usage.\n"
    "• /digest on [daily HH:MM | every N h] [top K] posts what spread in the tracked chats (/digest now, "
    "/digest off); /trending [hours] posts it at once; /alerts on N tells you once per false story that "
    "reached N tracked chats.\n"
    "• /watch add @channel (or a t.me link) reads a public Telegram channel's posts from its web preview, with no "
    "admin rights in it, so 'also reported by' and digests count it too (a news outlet's RSS or Atom feed's "
    "address works the same way); /watch list, /watch remove @channel.\n"
    "• /review (in a private chat) lists the checks waiting for a person; /review <check id> <rating> <url> "
    "records a verdict, and everyone who asked about that claim gets it as a reply where they asked.\n\n"
    "Privacy\n"
    "I only look at messages you send me or ask me to check, and at messages of groups and channels "
    "whose admins turned /track on, and at the public web preview of channels the bot's admins /watch. "
    "The checked text and the verdict are stored with a check id so the "
    "result can be reviewed, for a limited time. /forget me deletes every check you asked for, your votes "
    "and your messages in tracked chats. Other chats see a tracked chat's name and message link in 'Also reported by' "
    "lines; digests and alerts, which admins set up, also quote a message of a story once it has spread "
    "to two or more tracked chats. "
    "Verdicts are automatic and can be wrong: always read the sources."
)
USAGE_TEXT = ("Send me the text to check, or reply to a message with /check. "
              "For example: /check The 5G rollout caused the coronavirus outbreak")
EMPTY_TEXT = "There's nothing I can check in that message — send me some text, or a photo with a caption."
ERROR_TEXT = "😔 Sorry, something went wrong while checking this. Please try again in a little while."

INFO_TEXT = {"start": START_TEXT, "help": HELP_TEXT, "usage": USAGE_TEXT}
# /start in the asker's language where we have it (the rest of /help is English for now).
START_TEXTS = {
    "ru": "👋 Я tipline, бот для проверки фактов с открытым кодом.\n\n"
          "Пришлите или перешлите мне сообщение: я сверю его с опубликованными проверками фактов и отвечу "
          "вердиктом, уверенностью и источниками.\n\n"
          "В группах ответьте на сообщение командой /check, напишите /check и текст или упомяните меня. "
          "Подробнее: /help.",
    "uk": "👋 Я tipline, бот для перевірки фактів із відкритим кодом.\n\n"
          "Надішліть або перешліть мені повідомлення: я звірю його з опублікованими перевірками фактів і "
          "відповім вердиктом, упевненістю та джерелами.\n\n"
          "У групах дайте відповідь на повідомлення командою /check, напишіть /check і текст або згадайте мене. "
          "Докладніше: /help.",
}


class CheckService:
    """Runs checks as background tasks: kept referenced, at most `max_concurrency` at once."""

    def __init__(self, engine: Engine, *, db: Database | None = None, max_concurrency: int = 4,
                 progress_interval: float = 1.0):
        self.engine = engine
        self.db = db if db is not None else engine.db
        self.progress_interval = progress_interval
        self._sem = asyncio.Semaphore(max_concurrency)
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(self, coro: Coroutine[Any, Any, object], name: str | None = None) -> asyncio.Task[object]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def submit(self, action: CheckRequest | Info, responder: Responder) -> asyncio.Task[object]:
        return self.spawn(self.handle(action, responder), name=f"tipline-{type(action).__name__}")

    async def handle(self, action: CheckRequest | Info, responder: Responder) -> None:
        try:
            if isinstance(action, Info):
                await responder.say(INFO_TEXT[action.kind])
            else:
                async with self._sem:
                    await self.run_check(action, responder)
        except Exception:
            log.exception("could not answer %r", action)

    async def run_check(self, req: CheckRequest, responder: Responder) -> str | None:
        """Check and answer; the check id, or None if there was nothing to check or the engine failed
        (the user was told either way). Raises only if the responder cannot reach the platform.
        Takes no concurrency slot: callers bound concurrency (`handle` here, workers in bot/queue.py).
        A request with an image is read first (bot/images.py): the caption and the text read from the
        image are checked together. An image that cannot be read is answered with one sentence, or, when
        it has a caption, the caption is checked and that sentence becomes a note on the card.
        With photo memory (`photos`), the image's perceptual hash is kept with the check, links it to watched
        posts of the same photo, and a photo an admin reviewed is answered at once with that review."""
        progress: ThrottledProgress | None = None
        checked, image_text, image_note, photo = req, None, None, None
        if req.image is not None:
            progress = ThrottledProgress(responder, min_interval=self.progress_interval)
            await progress.start("image")
            data: bytes | ImageRefused | None = None
            if self.photos is not None and self.images is not None:
                data = await self._fetch_image(req)
                if isinstance(data, bytes):
                    photo = await self.photos.hash(data)
                    answered = await self._answer_reviewed(req, responder, photo)
                    if answered is not None:
                        return answered
            read = await self._read_image(req, data)
            if isinstance(read, str):
                image_text = read
                checked = replace(req, text=combine(req.text, read))
            elif req.text.strip():
                image_note = refusal_text(read, detect_language(req.text))
            else:
                await responder.say(refusal_text(read))
                return None
        reused = await self._reuse(checked)
        if reused is not None:  # a repeat forward: the stored verdict, at once, no progress message
            await responder.final(to_reply(reused), req)
            return reused.id
        if progress is None:
            progress = ThrottledProgress(responder, min_interval=self.progress_interval)
            await progress.start()
        try:
            result = await self.check(checked.text, progress, scope=req.scope, request=checked,
                                      image_text=image_text, image_note=image_note, photo=photo)
        except EmptyInput:
            await responder.say(EMPTY_TEXT)
            return None
        except Exception:
            log.error("check failed (chat %s, message %s, forwarded from %r)", req.chat_id, req.target_id,
                      req.forwarded_from, exc_info=True)
            await responder.say(ERROR_TEXT)
            return None
        log.info("check %s: %s (chat %s, message %s, forwarded from %r)", result.id, result.verdict.value,
                 req.chat_id, req.target_id, req.forwarded_from)
        try:
            await responder.final(to_reply(result), req)
        except Exception:
            log.error("could not send the verdict card for check %s", result.id, exc_info=True)
            await responder.say(f"{ERROR_TEXT} (check id {result.id})")
        return result.id

    async def check(self, text: str, progress: ProgressSink | None = None, *, scope: str = GLOBAL,
                    request: CheckRequest | None = None, image_text: str | None = None,
                    image_note: str | None = None, photo: int | None = None) -> Result:
        """The one place a check is made and kept: the engine decides, a chat's request adds what the
        bot knows about chats (repeats, "also reported by"), and the Result is stored once, after that.
        `image_text`: what was read from an attached image ("" when it held no text), for the card;
        `image_note`: why an attached image was not read (its caption alone was checked); `photo`: the
        image's perceptual hash, kept with the check and looked up among tracked messages' photos.
        Raises `EmptyInput` when there is nothing to check."""
        started = time.monotonic()
        result = await self.engine.check(text, progress, scope=scope)
        if image_text is not None:
            notes = result.notes if image_text else [*result.notes, t("note.image_no_text", result.language)]
            result = result.model_copy(update={"image_text": image_text, "notes": notes})
        elif image_note is not None:
            result = result.model_copy(update={"notes": [*result.notes, image_note]})
        return await self._keep(result, request, started, photo)

    async def _fetch_image(self, req: CheckRequest) -> bytes | ImageRefused:
        assert req.image is not None and self.images is not None
        try:
            return await self.images.fetch(req.image)
        except ImageRefused as exc:
            log.info("image of message %s in chat %s not downloaded: %s", req.target_id, req.chat_id, exc)
            return exc

    async def _answer_reviewed(self, req: CheckRequest, responder: Responder, photo: int | None) -> str | None:
        """A photo an admin reviewed: that review's verdict, at once (no OCR, no matching); the check id, or
        None when the photo was never reviewed."""
        if photo is None or self.photos is None:
            return None
        try:
            review = await self.photos.reviewed(photo)
        except Exception:  # remembering photos is an extra: on failure, check as usual
            log.exception("reviewed-photo lookup failed (chat %s, message %s)", req.chat_id, req.target_id)
            return None
        if review is None:
            return None
        started = time.monotonic()
        language = detect_language(req.text) if req.text.strip() else review.factcheck.language
        result = await self._keep(reviewed_answer(review, req.text.strip(), language), req, started, photo)
        log.info("check %s: %s, the reviewed photo of check %s (chat %s, message %s)", result.id,
                 result.verdict.value, review.check_id, req.chat_id, req.target_id)
        await responder.final(to_reply(result), req)
        return result.id

    async def _read_image(self, req: CheckRequest, data: bytes | ImageRefused | None = None) -> str | ImageRefused:
        """The text of the request's image (`data`: its bytes when they were downloaded already, or why
        they could not be), or why it could not be read (a captionless image with no text counts as
        unreadable: there is nothing to check)."""
        assert req.image is not None
        try:
            if isinstance(data, ImageRefused):
                raise data
            if self.images is None:
                raise OcrUnavailable("no image reader configured")
            reading = await (self.images.read_bytes(data) if data is not None else self.images.read(req.image))
            if not reading.text and not req.text.strip():
                raise NoTextInImage("no text in the image and no caption")
        except ImageRefused as exc:
            log.info("image of message %s in chat %s not read: %s", req.target_id, req.chat_id, exc)
            return exc
        log.info("image of message %s in chat %s: %d characters read in %.2f s (%dx%d)", req.target_id,
                 req.chat_id, len(reading.text), reading.ocr.seconds, reading.ocr.width, reading.ocr.height)
        return reading.text

    async def check_image(self, data: bytes, caption: str = "") -> Result:
        """`tipline check --image`: the image's text (with `caption`) checked and kept. Raises
        `ImageRefused` for an image that cannot be read or holds no text, `EmptyInput` as `check`."""
        if self.images is None:
            raise OcrUnavailable("no image reader configured")
        reading = await self.images.read_bytes(data)
        if not reading.text and not caption.strip():
            raise NoTextInImage("no text in the image and no caption")
        return await self.check(combine(caption, reading.text), image_text=reading.text)

    async def _keep(self, result: Result, request: CheckRequest | None, started: float,
                    photo: int | None = None) -> Result:
        asker = None
        if request is not None:
            result = await self._enrich(request, result, photo)
            if request.platform is not None and request.requested_by is not None:
                asker = self.db.pseudonym(request.platform, request.requested_by)
        await self.db.save_check(result, asker=asker, photo_hash=photo)
        if self.on_result is not None:
            self.on_result(result, time.monotonic() - started)
        return result

    # "Also reported by" and repeat forwards (bot/chat_settings.py): set `extras` to turn them on.
    extras: CheckExtras | None = None
    # Called with every finished check and its duration (metrics); must not raise.
    on_result: Callable[[Result, float], None] | None = None
    # Screenshots (bot/images.py): without a reader, an image is answered with "image checks are off".
    images: ImageReader | None = None
    # Photos' perceptual hashes (bot/photo_memory.py): kept with checks, reviewed photos answered at once.
    photos: PhotoMemory | None = None

    async def _reuse(self, req: CheckRequest) -> Result | None:
        if self.extras is None:
            return None
        try:
            return await self.extras.reuse(req.text, req.scope, req.chat_id, req.forwarded_from)
        except Exception:  # the lookup is an optimisation: on failure, check as usual
            log.exception("repeat lookup failed (chat %s, message %s)", req.chat_id, req.target_id)
            return None

    async def _enrich(self, req: CheckRequest, result: Result, photo: int | None = None) -> Result:
        if self.extras is None:
            return result
        try:
            return await self.extras.enrich(result, req.text, req.scope, req.chat_id, req.forwarded_from,
                                            photo=photo)
        except Exception:
            log.exception("could not add corroboration to check %s", result.id)
            return result

    async def auto_check(self, req: CheckRequest, responder: Responder) -> str | None:
        """`/auto on` in a group: check an ordinary message silently and answer only if it matched a
        known fact-check at the `auto` tier (noise gets bots removed); returns the check id if answered."""
        # No repeat reuse here: it would count every silent check of chatter as a "check" of the text.
        started = time.monotonic()
        try:
            result = await self.engine.check(req.text, None, scope=req.scope)
        except EmptyInput:
            return None
        if not any(m.tier == "auto" for m in result.matches):
            return None  # not stored: ordinary chatter that matched nothing leaves no trace
        result = await self._keep(result, req, started)
        await responder.final(to_reply(result), req)
        return result.id

    async def join(self) -> None:
        """Wait for every running task (used at shutdown and by tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self, timeout: float = 30.0) -> None:
        try:
            await asyncio.wait_for(self.join(), timeout)
        except TimeoutError:
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
