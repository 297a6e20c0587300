"""What "also reported by" shows, judged on CLEF-2020 Task 2 tweets: each tweet ends with "— Name (@handle)
Month D, YYYY", and two tweets tell the same story when the qrels give them the same verified claim.

    .venv/bin/python tools/lookup_quality.py --data ../shared/eval/clef2020-task2

Every train and dev tweet is stored as a tracked channel's message (the account is the chat, the signature's
date the time) through the real `Corroborator.ingest_batch`, in a throwaway data dir. Then each tweet that
another account's tweet of the same claim accompanies within the corroboration window is looked up from its
own chat at its own date, as a check would (`Corroborator.lookup`), and so are as many tweets without such a
partner. Printed: the share of lookups with a partner that show at least one right chat, the precision of
the chats shown (at most three per card), the share of lookups without a partner that show a wrong chat, and
the p50 of the lookups. `evals/corroboration_eval.py` judges the links made at ingest; this judges what a
user is shown.

`--crowd K` also stores K verbatim forwards of every tweet, each by one of 200 other channels within three
days after it (a forward carries the same claim, so those channels count as right), so reposts crowd the
window as they do in a busy Telegram week. `--candidates 64,16` runs every lookup once per candidate count
(the nearest rows a lookup reads and scores), taking turns at going first, and also prints how often each
count shows the same card (chats, in order, and their total) as the first.
"""

from __future__ import annotations

import argparse
import asyncio
import random
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
from core.tracking import LOOKUP_CANDIDATES, TrackedMessage  # noqa: E402
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
    shows_wrong_without_partner: float
    p50_ms: float
    candidates: int = LOOKUP_CANDIDATES
    same_card_as_first: float = 1.0  # share of all lookups whose card equals the first candidate count's


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


def crowd(msgs: dict[str, TrackedMessage], claim: dict[str, str], k: int,
          seed: int = 7) -> tuple[dict[str, TrackedMessage], dict[str, str]]:
    """`k` verbatim forwards of every tweet by 200 other channels within three days after it."""
    rng = random.Random(seed)
    out, of = dict(msgs), dict(claim)
    for t, m in msgs.items():
        for j in range(k):
            chat = f"crowd{rng.randrange(200):03d}"
            fwd = f"{t}.fwd{j}"
            out[fwd] = TrackedMessage("telegram", chat, fwd, m.text, m.at + timedelta(seconds=rng.uniform(0, 3 * 86400)),
                                      author=f"@{chat}", kind="channel")
            if t in claim:
                of[fwd] = claim[t]
    return out, of


async def measure(settings: Settings, data: Path, window_days: float = DEFAULT_WINDOW_DAYS, crowd_k: int = 0,
                  candidates: tuple[int, ...] = (LOOKUP_CANDIDATES,)) -> list[LookupQuality]:
    originals, claim = tweets(data)
    msgs, claim = crowd(originals, claim, crowd_k) if crowd_k else (originals, claim)
    order = sorted(msgs, key=lambda t: msgs[t].at)
    by_claim: dict[str, list[str]] = defaultdict(list)
    for t in order:
        if t in claim:
            by_claim[claim[t]].append(t)
    window = timedelta(days=window_days)
    asked = [t for t in order if t in originals]  # lookups are of the tweets themselves
    # a chat is right when it carried a message of the same claim within the window (a forward included)
    gold = {t: {msgs[o].chat_id for o in by_claim[claim[t]] if o != t and msgs[o].chat_id != msgs[t].chat_id
                and abs(msgs[o].at - msgs[t].at) <= window}
            for t in asked if t in claim}
    # "with a partner": another account's own tweet of the claim, as without a crowd
    partnered = [t for t in asked if t in claim and any(o in originals and msgs[o].chat_id != msgs[t].chat_id
                                                        and abs(msgs[o].at - msgs[t].at) <= window
                                                        for o in by_claim[claim[t]] if o != t)]
    with_partner = set(partnered)
    alone = [t for t in asked if t not in with_partner][:len(partnered)]
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
            cards: dict[int, dict[str, tuple]] = {k: {} for k in candidates}
            ms: dict[int, list[float]] = {k: [] for k in candidates}
            for i, t in enumerate(partnered + alone):
                m = msgs[t]
                for j in range(len(candidates)):
                    k = candidates[(i + j) % len(candidates)]
                    c.lookup_candidates = k
                    t0 = time.perf_counter()
                    found = await c.lookup(m.text, exclude_chats=[("telegram", m.chat_id)], at=m.at)
                    ms[k].append((time.perf_counter() - t0) * 1000)
                    cards[k][t] = (tuple(item.chat_id for item in found.items), found.total) if found else ((), 0)
    out = []
    for k in candidates:
        hit = shown = right = 0
        for t in partnered:
            chats = cards[k][t][0]
            shown += len(chats)
            right += sum(ch in gold[t] for ch in chats)
            hit += any(ch in gold[t] for ch in chats)
        false = sum(any(ch not in gold.get(t, set()) for ch in cards[k][t][0]) for t in alone)
        same = sum(cards[k][t] == cards[candidates[0]][t] for t in cards[k]) / max(1, len(cards[k]))
        out.append(LookupQuality(len(order), len(partnered), round(hit / max(1, len(partnered)), 3),
                                 round(right / max(1, shown), 3), shown, len(alone),
                                 round(false / max(1, len(alone)), 3),
                                 round(statistics.median(ms[k]), 2) if ms[k] else 0.0, k, round(same, 3)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="CLEF-2020 Task 2 directory (train/, dev/)")
    ap.add_argument("--window-days", type=float, default=DEFAULT_WINDOW_DAYS)
    ap.add_argument("--crowd", type=int, default=0, metavar="K", help="verbatim forwards stored per tweet")
    ap.add_argument("--candidates", default=str(LOOKUP_CANDIDATES), metavar="K[,K...]",
                    help="nearest rows a lookup reads and scores; several are compared side by side")
    args = ap.parse_args(argv)
    ks = tuple(dict.fromkeys(int(x) for x in args.candidates.split(",")))
    for q in asyncio.run(measure(Settings(), args.data, args.window_days, args.crowd, ks)):
        print(f"{q.stored} messages stored; {q.with_partner} tweets with another account's tweet of the same claim "
              f"within {args.window_days:g} days: {q.shows_a_right_chat:.3f} show a right chat, precision of the "
              f"{q.shown} chats shown {q.precision_of_shown:.3f}; {q.without_partner} without: "
              f"{q.shows_wrong_without_partner:.3f} show a wrong chat; lookup p50 {q.p50_ms:.1f} ms; {q.candidates} "
              f"candidates, same card as {ks[0]}: {q.same_card_as_first:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
