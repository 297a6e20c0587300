"""Digest speed (`tipline bench digest`): a digest built over `stored` messages of tracked chats.

The stored messages are `stored` posts by `chats` tracked channels, all inside the digest's 24-hour
window (so the ranking reads every one of them), spread over `stories` stories with a Zipf law of
story sizes (a few stories everywhere, a long tail of single posts), 10% of the stories stored under
two ids joined by a merge alias, as the corroborator leaves them. Each story's text is one of the seed
knowledge base's fact-checked claims, so the top stories really go through the matcher and most get a
verdict. Rows go straight into SQLite (`MessageStore.add`): the digest reads SQLite only, and
embedding 100,000 texts would measure only the model.

Then `repeats` times, with the embedding caches cleared (the matcher embeds each top story cold):
  build: `DigestBuilder.build` for the window, top K, end to end (the window read, alias resolution and
         ranking in a thread, the members' texts, representative texts, one match per shown story);
  rank:  `DigestBuilder.stories` alone (the part that grows with the stored messages).
The issue's goal: a digest over 100,000 stored messages in at most 2 s.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from bot.app import build_app
from bot.chat_app import build_digests
from bot.settings import Settings
from evals.evaluation import EvalDataError
from evals.bench import Spread, temp_settings

GOAL_S = 2.0


async def bench_digest(settings: Settings, *, stored: int = 100_000, chats: int = 500, stories: int = 5_000,
                       top_k: int = 5, repeats: int = 3, seed: int = 7) -> dict:
    from storage.messages import StoredMessage

    sizes = {"--stored": stored, "--chats": chats, "--stories": stories, "--top": top_k, "--repeats": repeats}
    bad = [flag for flag, value in sizes.items() if value < 1]
    if bad:
        raise EvalDataError(f"bench digest needs {bad[0]} of at least 1")
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
        async with build_app(temp_settings(settings, Path(tmp)), seed=True) as app:
            service = build_digests(app.settings, app)
            assert service is not None and app.corroborator is not None
            builder, messages = service.builder, app.corroborator.store
            claims = [fc.claim for fc in await app.db.all_factchecks()]
            for k in range(chats):
                await messages.set_flag("telegram", f"-100{k:07d}", "tracking", True, kind="channel",
                                        handle=f"@bench{k}")
            now = time.time()
            story_of = np.minimum(rng.zipf(1.6, stored) - 1, stories - 1)
            split = set(rng.choice(stories, size=stories // 10, replace=False).tolist())
            rows = []
            for i in range(stored):
                s = int(story_of[i])
                chat = f"-100{int(rng.integers(chats)):07d}"
                sid = f"bench:{s}" + (":b" if s in split and i % 2 else "")
                rows.append(StoredMessage(id=f"telegram:{chat}:{i}", platform="telegram", chat_id=chat,
                                          message_id=str(i), text=f"{claims[s % len(claims)]} #{i}",
                                          ts=now - float(rng.uniform(60, 86400 - 60)), author=f"@bench{chat[-4:]}",
                                          permalink=f"https://t.me/bench/{i}", language="en", story_id=sid))
            t0 = time.perf_counter()
            for i in range(0, stored, 5000):
                await messages.add(rows[i:i + 5000])
            fill_s = time.perf_counter() - t0
            for s in sorted(split):
                await messages.merge_stories(f"bench:{s}", [f"bench:{s}:b"])

            build, rank, items, verdicts, qualified = [], [], 0, 0, 0
            for _ in range(repeats):
                app.clear_embedding_caches()
                t0 = time.perf_counter()
                digest = await builder.build(now - 86400, now, top_k=top_k, lang="en")
                build.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                ranked = await builder.stories(now - 86400, now)
                rank.append(time.perf_counter() - t0)
                items, qualified = len(digest.items), len(ranked)
                verdicts = sum(1 for i in digest.items if i.match is not None)
            total = Spread.of(build, 3)
            return {"benchmark": "digest", "stored_messages": await messages.count(), "tracked_chats": chats,
                    "stories": stories, "stories_in_two_or_more_chats": qualified, "window_h": 24, "top_k": top_k,
                    "repeats": repeats, "seed": seed, "sqlite_fill_msgs_per_s": round(stored / fill_s, 1),
                    "build_s": total, "rank_s": Spread.of(rank, 3), "items": items, "items_with_verdict": verdicts,
                    "goal_s": GOAL_S, "goal_met": total.median <= GOAL_S}
