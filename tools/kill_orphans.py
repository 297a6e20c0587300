"""Many ungated kill -9s of `tipline run` against the fake Bot API: how many orphan "Checking…" messages and
doubled verdict cards per killed check (issue 13 point 5; figures in docs/reliability.md).

    .venv/bin/python tools/kill_orphans.py --messages 400 --kills 40 [--seed 1] [--progress-after 0]

One scenario: `--messages` messages (10 private chats) wait in the fake; `tipline run` starts, is killed with
SIGKILL at a random moment once it is answering, and restarted, `--kills` times (or until everything is
answered), then runs to the end. A killed check is a job that was `running` in SQLite at the kill.
`--progress-after` sets `TIPLINE_PROGRESS_AFTER_S` (unset: the product's default, 2 s; 0: every check sends
its "🔎 Checking…" at once, the behaviour before bot/progress_delay.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.model_files import prepare_default_model  # noqa: E402
from storage.sqlite import Database  # noqa: E402
from tests.fakes.telegram_api import FakeTelegram  # noqa: E402
from tests.test_durable_queue import CLAIMS, start_tipline, tipline_env, wait_until  # noqa: E402
from tests.test_kill_orphans import _bot_replies, _is_card, outcomes  # noqa: E402


async def main(messages: int, kills: int, seed: int, workers: int, progress_after: float | None = None) -> dict:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="tipline-kills-"))
    model_dir = prepare_default_model(tmp / "model")
    fake = await FakeTelegram().start()
    log, data_dir = tmp / "tipline.log", tmp / "data"
    sent = []
    for i in range(messages):
        user = 20_000 + i % 10
        msg = fake.make_message(f"{CLAIMS[i % len(CLAIMS)]} (#{i})", chat=FakeTelegram.private_chat(user),
                                sender={"id": user, "is_bot": False, "first_name": f"U{user}"})
        await fake.queue_message(msg)
        sent.append((user, msg["message_id"]))
    env = tipline_env(fake, data_dir, model_dir, TIPLINE_WORKERS=str(workers))
    if progress_after is not None:
        env["TIPLINE_PROGRESS_AFTER_S"] = str(progress_after)

    def answered() -> int:
        return sum(1 for msgs in _bot_replies(fake).values() if any(_is_card(m) for m in msgs))

    killed_checks, done_kills = 0, 0
    t0 = time.monotonic()
    try:
        while done_kills < kills and answered() < messages:
            proc = start_tipline(env, log)
            start = answered()
            await wait_until(lambda: answered() > start or answered() >= messages, 600, proc, log)
            await asyncio.sleep(rng.random() * 1.5)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            db = await Database.open(data_dir / "tipline.sqlite3")
            try:
                killed_checks += await db.count("SELECT COUNT(*) FROM jobs WHERE status = 'running'")
            finally:
                await db.close()
            done_kills += 1
            print(f"kill {done_kills}: {answered()}/{messages} answered, {killed_checks} killed checks so far",
                  file=sys.stderr)
        proc = start_tipline(env, log)
        try:
            await wait_until(lambda: answered() >= messages, 900, proc, log)
            await asyncio.sleep(2.0)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        orphans, doubled, unanswered = outcomes(fake, sent)
        placeholders = sum(1 for c in fake.called("sendMessage") if str(c.params.get("text", "")).startswith("🔎"))
        return {"messages": messages, "progress_after_s": progress_after, "kills": done_kills, "killed_checks": killed_checks, "orphans": orphans,
                "doubled_cards": doubled, "unanswered": unanswered,
                "sendMessage_calls": len(fake.called("sendMessage")), "placeholders_sent": placeholders,
                "sendChatAction_calls": len(fake.called("sendChatAction")), "seconds": round(time.monotonic() - t0, 1)}
    finally:
        await fake.stop()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=400)
    p.add_argument("--kills", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--progress-after", type=float, default=None, help="TIPLINE_PROGRESS_AFTER_S (default: unset)")
    a = p.parse_args()
    print(json.dumps(asyncio.run(main(a.messages, a.kills, a.seed, a.workers, a.progress_after))))
