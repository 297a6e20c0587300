"""The chat application as tests build it: every check through the durable queue, on the app's SQLite."""

from __future__ import annotations

from typing import Any

from bot.chat_app import ChatApp
from bot.chat_settings import CheckExtras
from bot.check_service import CheckService
from bot.images import ImageReader
from bot.photo_memory import PhotoMemory
from bot.queue import JobQueue
from core.engine import Engine
from core.corroboration.corroborator import Corroborator
from storage.jobs import JobStore
from storage.reply_journal import ReplyJournal
from storage.sqlite import Database


async def queued_chat(engine: Engine, db: Database | None = None, *, corroborator: Corroborator | None = None,
                images: ImageReader | None = None, photos: PhotoMemory | None = None,
                progress_interval: float = 0.0, workers: int = 2, journal: ReplyJournal | None = None,
                queue_kw: dict[str, Any] | None = None, extras: CheckExtras | None = None,
                **chat_kw: Any) -> ChatApp:
    """A `ChatApp` on a new, started `JobQueue` (stopped with the app: `chat.aclose()`, which the adapters'
    `stop()` calls), its `CheckService` wired as `tipline run` wires it."""
    db = db if db is not None else engine.db
    if extras is None and corroborator is not None:
        extras = CheckExtras(db, None, corroborator)
    service = CheckService(engine, db=db, progress_interval=progress_interval, extras=extras, images=images,
                           photos=photos)
    queue = JobQueue(JobStore(db, journal), service, workers=workers, **(queue_kw or {}))
    chat = ChatApp(queue, corroborator=corroborator, **chat_kw)
    await queue.start()
    return chat
