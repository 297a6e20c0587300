"""What "also reported by" shows, judged on CLEF-2020 Task 2 tweets: each tweet ends with "— Name (@handle)
Month D, YYYY", and two tweets tell the same story when the qrels give them the same verified claim.

    .venv/bin/python tools/lookup_quality.py --data ../shared/eval/clef2020-task2

Every train and dev tweet is stored as a tracked channel's message (the account is the chat, the signature's
date the time) through the real `Corroborator.ingest_batch`, in a throwaway data dir. Then each tweet that
another account's tweet of the same claim accompanies within the corroboration window is looked up from its
own chat at its own date, as a check would (`Corroborator.lookup`), and so are as many tweets without such a
partner. Printed: the share of lookups with a partner that show at least one right chat, the precision of
the chats shown (at most three per card), the share of lookups without a partner that show any chat, and
the p50 of the lookups. `evals/corroboration_eval.py` judges the links made at ingest; this judges what a
user is shown.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.app import build_app  # noqa: E402
from bot.settings import Settings  # noqa: E402
from core.corroboration import DEFAULT_WINDOW_DAYS  # noqa: E402
from core.evaluation import read_qrels  # noqa: E402
from core.tracking import TrackedMessage  # noqa: E402
from evals.bench import temp_settings  # noqa: E402
from evals.corroboration_eval import load_messages  # noqa: E402


@dataclass
class LookupQuality:
    stored: int
    with_partner: int
    shows_a_right_chat: float
    precision_of_shown: float
    shown: int
    without_partner: int
    shows_any_without_partner: float
    p50_ms: float


def tweets(data: Path) -> tuple[dict[str, TrackedMessage], dict[str, str]]:
    """The signed tweets of both splits as channel messages, and each one's verified claim."""
    msgs: dict[str, TrackedMessage] = {}
    claim: dict[str, str] = {}
    for split in ("train", "dev"):
        for tid, vclaims in read_qrels(data / split / "tweet-vclaim-pairs.qrels").items():
            claim[tid] = sorted(vclaims)[0]
        for m in load_messages(data / split / "tweets.queries.tsv"):  # the signature's account and time
            if m.time is not None:
                msgs[m.id] = TrackedMessage("telegram", m.account.lstrip("@"), m.id, m.raw,
                                            m.time.replace(tzinfo=timezone.utc), author=m.account, kind="channel")
    return msgs, claim


async def measure(settings: Settings, data: Path, window_days: float = DEFAULT_WINDOW_DAYS) -> LookupQuality:
    msgs, claim = tweets(data)
    order = sorted(msgs, key=lambda t: msgs[t].at)
    by_claim: dict[str, list[str]] = defaultdict(list)
    for t in order:
        if t in claim:
            by_claim[claim[t]].append(t)
    window = timedelta(days=window_days)
    gold = {t: {msgs[o].chat_id for o in by_claim[claim[t]] if o != t and msgs[o].chat_id != msgs[t].chat_id
                and abs(msgs[o].at - msgs[t].at) <= window}
            for t in order if t in claim}
    partnered = [t for t in order if gold.get(t)]
    alone = [t for t in order if not gold.get(t)][:len(partnered)]
    with tempfile.TemporaryDirectory(prefix="tipline-lookup-quality-") as tmp:
        async with build_app(temp_settings(settings, Path(tmp), corroboration_window_days=window_days),
                             seed=False) as app:
            c = app.corroborator
            if c is None:
                raise RuntimeError("the app has no corroborator")
            for chat in sorted({m.chat_id for m in msgs.values()}):
                await c.store.set_flag("telegram", chat, "tracking", True, kind="channel", handle=f"@{chat}")
            for k in range(0, len(order), 64):  # in time order, as a bot receives them
                await c.ingest_batch([msgs[t] for t in order[k:k + 64]])
            hit = shown = right = 0
            ms: list[float] = []
            for t in partnered:
                m = msgs[t]
                t0 = time.perf_counter()
                found = await c.lookup(m.text, exclude_chats=[("telegram", m.chat_id)], at=m.at)
                ms.append((time.perf_counter() - t0) * 1000)
                chats = [item.chat_id for item in (found.items if found else [])]
                shown += len(chats)
                right += sum(ch in gold[t] for ch in chats)
                hit += any(ch in gold[t] for ch in chats)
            false = 0
            for t in alone:
                m = msgs[t]
                found = await c.lookup(m.text, exclude_chats=[("telegram", m.chat_id)], at=m.at)
                false += bool(found and found.items)
    return LookupQuality(len(order), len(partnered), round(hit / max(1, len(partnered)), 3),
                         round(right / max(1, shown), 3), shown, len(alone), round(false / max(1, len(alone)), 3),
                         round(statistics.median(ms), 2) if ms else 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="CLEF-2020 Task 2 directory (train/, dev/)")
    ap.add_argument("--window-days", type=float, default=DEFAULT_WINDOW_DAYS)
    args = ap.parse_args(argv)
    q = asyncio.run(measure(Settings(), args.data, args.window_days))
    print(f"{q.stored} tweets stored; {q.with_partner} with another account's tweet of the same claim within "
          f"{args.window_days:g} days: {q.shows_a_right_chat:.3f} show a right chat, precision of the {q.shown} "
          f"chats shown {q.precision_of_shown:.3f}; {q.without_partner} without: {q.shows_any_without_partner:.3f} "
          f"show a chat; lookup p50 {q.p50_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
