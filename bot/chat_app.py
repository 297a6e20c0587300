"""The chat application, built once and handed to every adapter: one `CheckService`, one queue, the
commands, and the one place that decides what each routed request does.

Adapters only translate: a platform event becomes an `IncomingMessage` (then `route()` in bot/router.py
makes it a request) and they supply a `CommandResponder` (how to answer on their platform) and, where the
platform has them, an "is this user an admin of this chat" check. Everything else is here:

    CheckRequest         -> the durable queue (bot/queue.py), whose workers run it through the CheckService
    Info                 -> the platform's fixed text (/start, /help, usage)
    EvidenceRequest      -> the stored check's evidence view
    DomainsRequest       -> DomainCommands        ChatSettingsRequest -> ChatCommands
    ReviewRequest        -> ReviewCommands (its notices reach askers through every adapter's notifier)
    DigestRequest        -> DigestCommands (/digest, /trending, /alerts; digests and alerts are posted
                            through each adapter's DigestPoster, by the background task of DigestService)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from bot.admins import Admins, ChatAdminCheck
from bot.chat_settings import ChatCommands, CheckExtras
from bot.check_service import CheckService, Responder
from bot.digest_commands import DigestCommands
from bot.digest_schedule import Clock, DigestPoster, DigestService
from bot.domains import DomainCommands
from bot.evidence import EVIDENCE_USAGE, UNKNOWN_CHECK, load_check
from bot.images import ImageFetcher
from bot.outflow import Outflow, outflow, sentence
from bot.notify import Notifier
from bot.personal import Privacy
from bot.progress_delay import Presence
from bot.queue import JobQueue, ResponderFactory
from bot.photo_memory import PhotoMemory
from bot.requests import (
    ChatSettingsRequest,
    CheckRequest,
    DigestRequest,
    DomainsRequest,
    EvidenceRequest,
    Info,
    ReviewRequest,
    WatchRequest,
)
from bot.review import AddFactChecks, ReviewCommands
from bot.texts import ERROR_TEXT, INFO_TEXT, START_TEXTS
from bot.watch_commands import WatchCommands
from core.intake.image_limits import ImageLimits
from schema.models import Result
from core.corroboration.corroborator import Corroborator, TrackedMessage

if TYPE_CHECKING:
    from bot.app import App
    from bot.settings import Settings
    from bot.watch import WatchService

log = logging.getLogger(__name__)


class CommandResponder(Responder, Protocol):
    """A `Responder` that can also answer commands."""

    async def answer(self, text: str) -> None:
        """A command's answer: plain text that may carry user input (the responder escapes it)."""

    async def evidence(self, result: Result) -> None:
        """The evidence view of a stored check, as new messages in the thread."""


# (platform, request, responder, is-chat-admin check) -> the request answered
Handler = Callable[[str, Any, CommandResponder, ChatAdminCheck | None], Awaitable[None]]


@dataclass(frozen=True)
class Ticket:
    """What the durable queue needs to persist a check: a key that is the same in every re-delivery of
    the platform event, and `where` the answer goes (for the platform's `ResponderFactory`)."""

    key: str
    platform: str
    where: Mapping[str, Any]


class ChatApp:
    """The application the adapters share. Checks are persisted before the platform is acknowledged and
    worked off by the queue's workers through the queue's `CheckService`, which also runs the commands."""

    def __init__(self, queue: JobQueue, *, admins: Sequence[str] = (), add_factchecks: AddFactChecks | None = None,
                 corroborator: Corroborator | None = None, digests: DigestService | None = None,
                 privacy: Privacy | None = None, outflow: Outflow | None = None):
        """`outflow`: what leaves the server (bot/outflow.py), said at the end of /start and /help. The
        screenshot reader and the photo memory are the queue's `CheckService`'s."""
        self.queue = queue
        self.service = queue.service
        self.db = self.service.db
        self.outflow = outflow
        self.corroborator = corroborator
        self.images = self.service.images
        self.domains = DomainCommands(self.db, admins)
        # Retention and /forget me (bot/personal.py): one, so two forgets never rewrite the vectors at once.
        self.privacy = privacy or Privacy(self.db, corroborator=corroborator)
        self.chat_commands = ChatCommands(self.db, admins, corroborator, privacy=self.privacy)
        # Per platform: how to tell an asker their claim was reviewed; shared, so a verdict recorded on
        # one platform reaches askers on the others.
        self.notifiers: dict[str, Notifier] = queue.notifiers
        self.review = ReviewCommands(self.db, add_factchecks, admins, self.notifiers, photos=self.service.photos)
        # Digests, /trending and alerts (bot/digest_schedule.py); None where tracking is off.
        self.digests = digests
        self.digest_commands = DigestCommands(self.db, digests, Admins(admins))
        # Watched public channels (bot/watch.py), attached by `tipline run` (`attach_watch`); until then
        # /watch answers that it is not available.
        self.watch: WatchService | None = None
        self.watch_commands = WatchCommands(self.db, None, Admins(admins))
        self.info: dict[str, Mapping[str, str]] = {}
        # One handler per kind of command (python-telegram-bot's way), for every platform.
        self._answer: dict[type, Callable[[Any, ChatAdminCheck | None], Awaitable[str]]] = {
            DomainsRequest: lambda req, admin: self.domains.handle(req, is_chat_admin=admin),
            ChatSettingsRequest: lambda req, admin: self.chat_commands.handle(req, is_chat_admin=admin),
            ReviewRequest: lambda req, admin: self.review.handle(req),
            DigestRequest: lambda req, admin: self.digest_commands.handle(req, is_chat_admin=admin),
            WatchRequest: lambda req, admin: self.watch_commands.handle(req, is_chat_admin=admin),
        }
        self._handlers: dict[type, Handler] = {
            Info: self._info, EvidenceRequest: self._evidence_request, DomainsRequest: self._reply,
            ChatSettingsRequest: self._chat_settings, ReviewRequest: self._reply, DigestRequest: self._digest,
            WatchRequest: self._reply,
        }

    def register(self, platform: str, *, responders: ResponderFactory | None = None,
                 notifier: Notifier | None = None, info: Mapping[str, str] | None = None,
                 poster: DigestPoster | None = None, images: ImageFetcher | None = None,
                 presence: Presence | None = None) -> None:
        """An adapter joins: how to rebuild its responders (queue) and show it is working without a
        message (`presence`, bot/progress_delay.py), tell its askers (review), its fixed texts,
        post digests and alerts, and download the images its users send (screenshots)."""
        if images is not None and self.images is not None:
            self.images.register(platform, images)
        if poster is not None and self.digests is not None:
            self.digests.register(platform, poster)
        if responders is not None:
            self.queue.register(platform, responders, presence)
        if notifier is not None:
            self.notifiers[platform] = notifier
        if info is not None:
            self.info[platform] = info

    # --- checks ------------------------------------------------------------------------------

    async def submit(self, platform: str, req: CheckRequest, ticket: Ticket) -> None:
        """Queue a check; returns once the request is persisted (raises if it could not be; a re-delivery
        with the same ticket key is recognised)."""
        await self.queue.submit(ticket.key, platform, replace(req, platform=platform), ticket.where)

    async def observe(self, platform: str, message: TrackedMessage | None, req: CheckRequest,
                      responder: Responder, *, auto: bool = True) -> None:
        """An ordinary group message: stored if its chat is tracked; with /auto on (and `auto`), checked
        silently and answered only for a strong match."""
        req = replace(req, platform=platform)
        try:
            if self.corroborator is not None and message is not None:
                if req.requested_by is not None:  # its author, by pseudonym: /forget me deletes it
                    message = replace(message, sender=self.db.pseudonym(platform, req.requested_by))
                await self.corroborator.ingest(message)
        except Exception:
            log.exception("could not store message %s of chat %s", req.target_id, req.chat_id)
        if not auto or not await self.chat_commands.store.is_auto(platform, req.chat_id):
            return
        try:
            await self.service.auto_check(req, responder)
        except Exception:
            log.exception("auto check failed in chat %s", req.chat_id)

    # --- commands ----------------------------------------------------------------------------

    async def answer(self, request: DomainsRequest | ChatSettingsRequest | ReviewRequest | DigestRequest
                     | WatchRequest, *,
                     is_chat_admin: ChatAdminCheck | None = None) -> str:
        """The sentence a command produces, or an apology if it failed; never raises."""
        try:
            return await self._answer[type(request)](request, is_chat_admin)
        except Exception:
            log.exception("%s failed in chat %s", type(request).__name__, request.chat_id)
            return ERROR_TEXT

    async def dispatch(self, platform: str, request: Any, responder: CommandResponder, *,
                       is_chat_admin: ChatAdminCheck | None = None, ticket: Ticket | None = None) -> None:
        """Do what a routed request asks, answering through `responder`; `is_chat_admin` (None in private
        chats and on platforms without chat admins) lets a chat's own admins change its settings;
        `ticket` is how a check request is persisted (the other requests are answered at once)."""
        if isinstance(request, CheckRequest):
            assert ticket is not None, "a check needs a ticket to be queued"
            await self.submit(platform, request, ticket)
            return
        self.service.spawn(self._command(platform, request, responder, is_chat_admin),
                           name=f"tipline-{type(request).__name__}")

    async def _command(self, platform: str, request: Any, responder: CommandResponder,
                       is_chat_admin: ChatAdminCheck | None) -> None:
        try:
            await self._handlers[type(request)](platform, request, responder, is_chat_admin)
        except Exception:
            log.exception("could not answer %s in chat %s", type(request).__name__, request.chat_id)

    async def _info(self, platform: str, request: Info, responder: CommandResponder, _: object) -> None:
        await responder.say(self.info_text(platform, request))

    def info_text(self, platform: str, request: Info) -> str:
        """/start and /help end with what leaves the server, in the asker's language (bot/outflow.py)."""
        lang = request.language if request.language in ("ru", "uk") else "en"
        text = self.info.get(platform, INFO_TEXT)[request.kind]
        if request.kind == "start" and lang != "en" and platform not in self.info:
            text = START_TEXTS[lang]
        if request.kind in ("start", "help") and self.outflow is not None:
            text += "\n\n🔒 " + sentence(self.outflow, lang)
        return text

    async def _evidence_request(self, platform: str, request: EvidenceRequest, responder: CommandResponder,
                                _: object) -> None:
        await self.evidence(request.check_id, responder)

    async def _reply(self, platform: str, request: DomainsRequest | ReviewRequest | ChatSettingsRequest | WatchRequest,
                     responder: CommandResponder, is_chat_admin: ChatAdminCheck | None) -> None:
        await responder.answer(await self.answer(request, is_chat_admin=is_chat_admin))

    async def _chat_settings(self, platform: str, request: ChatSettingsRequest, responder: CommandResponder,
                             is_chat_admin: ChatAdminCheck | None) -> None:
        if request.chat_kind != "channel":
            await self._reply(platform, request, responder, is_chat_admin)
            return
        # The bot never posts in channels: a channel's post is by one of its admins; log the outcome.
        log.info("channel %s: %s", request.chat_id, await self.answer(request, is_chat_admin=is_chat_admin))

    async def _digest(self, platform: str, request: DigestRequest, responder: CommandResponder,
                      is_chat_admin: ChatAdminCheck | None) -> None:
        text = await self.answer(request, is_chat_admin=is_chat_admin)
        if not text:
            return  # the digest was posted: it is the answer
        if request.chat_kind == "channel":
            log.info("channel %s: %s", request.chat_id, text)  # never a chatty reply in a channel
            return
        await responder.answer(text)

    async def story_text(self, key: str) -> str | None:
        """The text behind a digest's "check it" button, or None when it is gone or its chat opted out."""
        if self.digests is None or self.corroborator is None:
            return None
        store = self.corroborator.store
        found = (await store.get([key])).get(key)
        if found is None or not await store.is_tracked(found.platform, found.chat_id):
            return None
        return found.text

    async def evidence(self, check_id: str, responder: CommandResponder) -> bool:
        """Send the evidence view of `check_id` (or one sentence why not); False if there is no such check."""
        try:
            result = await load_check(self.db, check_id) if check_id else None
            if result is None:
                await responder.answer(UNKNOWN_CHECK if check_id else EVIDENCE_USAGE)
                return False
            await responder.evidence(result)
            return True
        except Exception:
            log.exception("could not send the evidence of check %r", check_id)
            return False

    def attach_watch(self, watch: WatchService) -> None:
        """Watched public channels: /watch reaches `watch` (its poller is a task of `tipline run`)."""
        self.watch = watch
        self.watch_commands.service = watch

    async def aclose(self) -> None:
        await self.queue.stop()  # already stopped by `tipline run` before its adapters close: then a no-op
        await self.service.aclose()
        if self.watch is not None:
            await self.watch.aclose()


def build_chat(settings: Settings, app: App) -> ChatApp:
    """The chat application of a running `tipline run`: the one durable queue and its one `CheckService`,
    with "also reported by", repeat reuse and metrics on every check."""
    from bot.limits import RateLimiter
    from storage.factcheck_feeds import read_feeds
    from storage.jobs import JobStore

    from storage.reply_journal import ReplyJournal

    metrics = app.metrics
    photos = PhotoMemory(app.db, ImageLimits(max_bytes=settings.ocr_max_bytes, max_pixels=settings.ocr_max_pixels))
    # No platform: one service serves every adapter (the extras exclude the asking chat on each).
    extras = CheckExtras(app.db, None, app.corroborator) if app.corroborator is not None else None
    service = CheckService(app.engine, db=app.db, extras=extras, images=app.images, photos=photos,
                           on_result=None if metrics is None else metrics.observe_result)
    journal = ReplyJournal(settings.data_dir / "reply-refs.journal")
    queue = JobQueue(JobStore(app.db, journal), service, workers=settings.check_workers, queue_max=settings.queue_max,
                     limiter=RateLimiter(settings.user_rate_per_minute, settings.chat_rate_per_minute),
                     progress_after=settings.progress_after_s)
    return ChatApp(queue, admins=tuple(settings.admins), add_factchecks=app.kb.add, corroborator=app.corroborator,
                   digests=build_digests(settings, app),
                   privacy=Privacy(app.db, corroborator=app.corroborator,
                                   check_retention_days=settings.check_retention_days),
                   outflow=outflow(settings, stored_feeds=len(read_feeds(settings.sqlite_path))))


def build_digests(settings: Settings, app: App, clock: Clock | None = None) -> DigestService | None:
    """Digests and alerts over the tracked chats (none without the corroborator, whose stories they rank)."""
    from bot.digest import DigestBuilder
    from storage.digests import DigestStore

    if app.corroborator is None:
        return None
    store = DigestStore(app.db)
    builder = DigestBuilder(store, app.corroborator.store, app.matcher, llm=app.llm,
                            retention_days=settings.retention_days)
    return DigestService(builder, store, clock, alert_window_s=settings.corroboration_window_days * 86400.0)
