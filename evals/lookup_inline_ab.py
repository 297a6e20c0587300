"""Does scoring a lookup's text on the event loop beat a worker thread? On a data dir kept by
`tipline bench corroborate --keep DIR` (not in use by another process):

    .venv/bin/python -m evals.lookup_inline_ab --data-dir DIR \\
        --queries ../shared/eval/clef2020-task2/dev/tweets.queries.tsv [-n 200 --rounds 3]

Every query is looked up warm (both models' vectors remembered, as after the bot's match) twice per round,
once each way, taking turns at going first: the text's row and scores on the loop (`INLINE_ROW_CHARS`) or
always in a worker thread (`inline_row_chars = 0`, as before). Prints p50 / p95 ms of each way, read at the
dir's fill time as the bench reads it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path


from bot.app import build_app
from bot.settings import Settings
from evals.evaluation import read_queries
from core.textclean import clean_query
from core.corroboration.corroborator import INLINE_ROW_CHARS
from evals.bench import pct, temp_settings
from evals.bench_corroborate import filled_at

ASKER = [("telegram", "asker")]


async def run(data_dir: Path, queries: Path, n: int, rounds: int) -> dict[str, dict[str, float]]:
    marker = data_dir / ".bench-corroborate-indexed"
    if not marker.exists():
        raise SystemExit(f"{data_dir} is not a data dir kept by `tipline bench corroborate --keep`")
    at = filled_at(marker, datetime.now(timezone.utc))
    texts = [f"asked {i}: {q}" for i, (_, q) in enumerate(read_queries(queries)) if q.strip()][:n]
    ways = {"loop": INLINE_ROW_CHARS, "thread": 0}
    times: dict[str, list[float]] = {w: [] for w in ways}
    async with build_app(temp_settings(Settings(), data_dir), seed=False) as app:
        c = app.corroborator
        if c is None:
            raise SystemExit("the app has no corroborator")
        for text in texts:  # remembered vectors, as after the bot's match; the index warmed up
            await app.embedder.embed([clean_query(text)])
            if c.multilingual is not None:
                await c.multilingual.queries([clean_query(text)])
            await c.lookup(text, exclude_chats=ASKER, at=at)
        for r in range(rounds):
            for i, text in enumerate(texts):
                order = list(ways) if (i + r) % 2 == 0 else list(reversed(ways))
                for way in order:
                    c.inline_row_chars = ways[way]
                    t0 = time.perf_counter()
                    await c.lookup(text, exclude_chats=ASKER, at=at)
                    times[way].append((time.perf_counter() - t0) * 1000)
        c.inline_row_chars = INLINE_ROW_CHARS
    return {w: {"p50_ms": round(statistics.median(v), 2), "p95_ms": round(pct(v, 95), 2), "n": len(v)}
            for w, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.data_dir, args.queries, args.n, args.rounds)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
