"""The check service: a check request answered through a `Responder`, and the Result kept once.

The durable queue's workers (bot/queue.py) call `CheckService.run_check`; the CLI and the REST API call
`CheckService.check`. Nothing here knows a chat platform.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any, Protocol

from bot.chat_settings import CheckExtras
from bot.images import ImageReader, NoTextInImage, combine, refusal_text
from bot.photo_memory import PhotoMemory, reviewed_answer
from bot.render import Reply, to_reply
from bot.requests import GLOBAL, CheckRequest
from bot.texts import EMPTY_TEXT, ERROR_TEXT
from core.engine import Engine, ProgressSink
from core.i18n import t
from core.intake.image_limits import ImageRefused
from core.intake.message import EmptyInput, detect_language
from core.intake.ocr import OcrUnavailable
from schema.models import Result
from storage.sqlite import Database

log = logging.getLogger(__name__)


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


class CheckService:
    """Makes and keeps checks for the queue's workers, and runs the chat's background tasks (kept referenced)."""

    def __init__(self, engine: Engine, *, db: Database | None = None, progress_interval: float = 1.0,
                 extras: CheckExtras | None = None, on_result: Callable[[Result, float], None] | None = None,
                 images: ImageReader | None = None, photos: PhotoMemory | None = None):
        """`extras`: "also reported by" and repeat forwards (bot/chat_settings.py); `on_result`: called with
        every finished check and its duration (metrics), must not raise; `images`: reads screenshots
        (bot/images.py), without it an image is answered with "image checks are off"; `photos`: photos'
        perceptual hashes (bot/photo_memory.py), kept with checks, reviewed photos answered at once."""
        self.engine = engine
        self.db = db if db is not None else engine.db
        self.progress_interval = progress_interval
        self.extras = extras
        self.on_result = on_result
        self.images = images
        self.photos = photos
        self._tasks: set[asyncio.Task[object]] = set()

    def spawn(self, coro: Coroutine[Any, Any, object], name: str | None = None) -> asyncio.Task[object]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run_check(self, req: CheckRequest, responder: Responder) -> str | None:
        """Check and answer; the check id, or None if there was nothing to check or the engine failed
        (the user was told either way). Raises only if the responder cannot reach the platform.
        Takes no concurrency slot: the queue's workers bound concurrency (bot/queue.py).
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
