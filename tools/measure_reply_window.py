"""How long a sent reply message exists on "Telegram" before its id is safe from kill -9 (issue 13 point 5).

    .venv/bin/python tools/measure_reply_window.py [--messages 200] [--workers 4] [--progress-after 2]

In one process: the fake Bot API (it notes when it applied each sendMessage), the real engine and job
queue with 4 workers and the Telegram responder. A subclass of JobStore (this tool's, not the product's)
notes when `set_reply_ref` was entered (the journal line is written then, before its first await) and when
its SQLite commit returned. Before the journal, the commit was the first moment a SIGKILL could not lose
the id; a kill inside [applied, durable] leaves an orphan. The orphan rate per killed check is about this
window over a worker's time per check.

What a kill inside the window costs depends on which message it was: a "🔎 Checking…" (sent first when
`--progress-after` is 0, or when a check outlasts it) is left behind as an orphan; a verdict card sent as the
first and only message (a check done within `--progress-after`, bot/progress_delay.py) is sent again by the
resumed job, a doubled verdict. Both rates are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.telegram import TelegramBot, TelegramConfig  # noqa: E402
from bot.app import build_app  # noqa: E402
from bot.check_service import CheckService  # noqa: E402
from bot.chat_app import ChatApp  # noqa: E402
from bot.queue import JobQueue  # noqa: E402
from bot.settings import Settings  # noqa: E402
from core.model_files import prepare_default_model  # noqa: E402
from storage.jobs import JobStore  # noqa: E402
from storage.reply_journal import ReplyJournal  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402
from tests.test_durable_queue import CLAIMS  # noqa: E402


class TimedTelegram(FakeTelegram):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.applied: dict[str, float] = {}
        self.cards: set[str] = set()  # sent as the verdict card (no placeholder before it)

    async def api_sendMessage(self, params: dict[str, Any]) -> Any:
        msg = await super().api_sendMessage(params)
        self.applied[str(msg["message_id"])] = time.monotonic()
        if "Check id:" in (params.get("text") or ""):
            self.cards.add(str(msg["message_id"]))
        return msg


class TimedStore(JobStore):
    def __init__(self, *a: Any, **kw: Any):
        super().__init__(*a, **kw)
        self.journaled: dict[str, float] = {}
        self.committed: dict[str, float] = {}

    async def set_reply_ref(self, job_id: int, reply_ref: str) -> None:
        self.journaled[reply_ref] = time.monotonic()
        await super().set_reply_ref(job_id, reply_ref)
        self.committed[reply_ref] = time.monotonic()


def _ms(values: list[float]) -> dict:
    v = sorted(x * 1000 for x in values)
    return {"n": len(v), "p50_ms": round(statistics.median(v), 2), "p95_ms": round(v[int(0.95 * (len(v) - 1))], 2),
            "max_ms": round(v[-1], 2), "mean_ms": round(statistics.fmean(v), 2)}


class _FakeThread:
    """The fake Bot API on its own event loop in a thread: like the real one, its work after applying a send
    (serialising, writing the answer) does not wait behind the bot's tasks on the bot's loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


async def main(messages: int, workers: int, fake_thread: bool, progress_after: float,
               data_dir: Path | None = None, model_dir: Path | None = None,
               model_cache_dir: Path | None = None) -> dict:
    """`data_dir`, `model_dir`, `model_cache_dir`: the smoke test's already seeded copy and its session's
    models (seeding a new data dir made the smoke test 13.5 CPU-s instead of 3.5; the window does not depend on it)."""
    tmp = Path(tempfile.mkdtemp(prefix="tipline-window-"))
    settings = Settings(data_dir=data_dir or tmp / "data", embed_model_dir=model_dir or prepare_default_model(tmp / "model"),
                        _env_file=None, gdelt_url=None,  # type: ignore[call-arg]  # pydantic-settings' own kwarg
                        **({"model_cache_dir": model_cache_dir} if model_cache_dir else {}))
    own = _FakeThread() if fake_thread else None

    async def on_fake(coro: Any) -> Any:
        return await asyncio.to_thread(own.run, coro) if own is not None else await coro

    fake = await on_fake(TimedTelegram().start())
    async with build_app(settings) as app:
        store = TimedStore(app.db, ReplyJournal(tmp / "reply-refs.journal"))
        queue = JobQueue(store, CheckService(app.engine), workers=workers, queue_max=10_000,
                         progress_after=progress_after)
        bot = TelegramBot(TelegramConfig(token=fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url,
                                         poll_timeout=1.0), ChatApp(queue))
        for i in range(messages):
            user = 30_000 + i % 10
            await on_fake(fake.queue_message(fake.make_message(f"{CLAIMS[i % len(CLAIMS)]} (#{i})",
                                                       chat=FakeTelegram.private_chat(user),
                                                       sender={"id": user, "is_bot": False, "first_name": "U"})))
        t0 = time.monotonic()
        await bot.start()
        await queue.start()
        try:
            while (await store.counts()).get("done", 0) < messages:
                await asyncio.sleep(0.2)
            seconds = time.monotonic() - t0
        finally:
            await queue.stop()
            await bot.stop()
    await on_fake(fake.stop())
    if own is not None:
        own.close()
    refs = [r for r in store.committed if r in fake.applied]
    journal = [store.journaled[r] - fake.applied[r] for r in refs]
    commit = [store.committed[r] - fake.applied[r] for r in refs]
    per_check_worker_s = seconds * workers / messages
    # The chance a kill lands in some running check's window of a kind: that kind's window time per check
    # over a worker's time per check.
    card_first = sum(store.journaled[r] - fake.applied[r] for r in refs if r in fake.cards)
    placeholder_first = sum(store.journaled[r] - fake.applied[r] for r in refs if r not in fake.cards)
    return {"messages": messages, "workers": workers, "progress_after_s": progress_after,
            "first_message_was_the_card": sum(1 for r in refs if r in fake.cards),
            "first_message_was_a_placeholder": sum(1 for r in refs if r not in fake.cards),
            "fake": "own thread and loop" if fake_thread else "bot's loop", "seconds": round(seconds, 1),
            "worker_seconds_per_check": round(per_check_worker_s, 3),
            "applied_to_journal": _ms(journal), "applied_to_sqlite_commit": _ms(commit),
            "orphan_rate_per_killed_check_journal": round(statistics.fmean(journal) / per_check_worker_s, 5),
            "orphan_rate_per_killed_check_sqlite_only": round(statistics.fmean(commit) / per_check_worker_s, 5),
            "orphan_rate_per_killed_check_placeholders": round(placeholder_first / messages / per_check_worker_s, 5),
            "double_rate_per_killed_check_cards": round(card_first / messages / per_check_worker_s, 5)}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=200)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--same-loop", action="store_true", help="run the fake on the bot's event loop")
    p.add_argument("--progress-after", type=float, default=Settings.model_fields["progress_after_s"].default,
                   help="TIPLINE_PROGRESS_AFTER_S (0: a placeholder first, as before bot/progress_delay.py)")
    a = p.parse_args()
    print(json.dumps(asyncio.run(main(a.messages, a.workers, not a.same_loop, a.progress_after)), indent=1))
