""""Also reported by" speed (`tipline bench corroborate`) with `stored` messages in the window index.

The stored messages are CLEF tweets (`messages_path`, e.g. train) posted by `chats` synthetic channels
over 29 days: each tweet is reposted ~stored/len(tweets) times, its copies forming one story, filled
through `Corroborator.bulk_load` with the tweet's real embedding plus a little noise (embedding 100,000
texts would measure only the model). Then, `repeats` times:
  embedding alone: the next `ingest_n` new messages' texts through both embedders (MiniLM and, when on, the
                   multilingual model), nothing stored (the bound);
  ingest:          the same `ingest_n` messages through the real path (micro-batched embedding, same-story
                   linking against everything stored, SQLite + Qdrant writes), all submitted at once;
  lookup, cold:    each of `lookups` texts never seen before (`queries_path`, e.g. dev tweets) through the
                   real `lookup` with the embedder's cache cleared (embedding, window mat-vec, features,
                   stories, SQLite); its embedding is then timed alone, cold, so embed + rest = total (means);
  lookup, warm:    the lookup the way the bot makes it, right after the engine matched the same message:
                   the matcher has then embedded the same cleaned text, so the embedder's cache answers.
Texts are read at run time and never shipped; the random choices use a fixed seed. A kept data dir
(`keep`) is read at the time it was filled, so runs days apart search the same messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from bot.app import App, build_app, edge_dir
from evals.bench import Spread, jittered, mean, pct, temp_settings
from bot.settings import Settings
from evals.evaluation import EvalDataError, read_queries
from core.textclean import clean_query
from evals.vector_cache import VectorCache, identity_of_embedder

_ASKER = [("telegram", "asker")]
FILL_CHUNK = 50_000  # messages generated and stored at a time: 1M at once held ~8 GB of Python objects and vectors


def _disk_bytes(root: Path, pattern: str = "*") -> int:
    return sum(p.stat().st_size for p in root.rglob(pattern) if p.is_file())


def filled_at(marker: Path, fallback: datetime) -> datetime:
    """The time a kept data dir's messages were filled around (written in its marker). A reused dir is
    read at that time, not at the wall clock: its messages span the 29 days before the fill and the
    lookup window is a week either side, so read days later a lookup would search fewer of them."""
    try:
        return datetime.fromisoformat(marker.read_text().strip())
    except ValueError:  # a marker from before the time was written: touched when the fill's build ended
        return datetime.fromtimestamp(marker.stat().st_mtime, timezone.utc)
    except FileNotFoundError:  # a fill interrupted before its build: its time was not kept
        return fallback


async def _fill(app: App, base: list[str], stored: int, chats: int, rng: np.random.Generator, now: datetime,
                cache: VectorCache) -> tuple[float, float]:
    """Store `stored` reposts of the `base` tweets (untimed vectors: each its tweet's plus noise) from
    `chats` channels over 29 days, then index; returns (seconds in bulk_load, seconds indexing)."""
    from core.corroboration.story_model import prepare_text
    from core.corroboration.corroborator import TrackedMessage

    c, embedder = app.corroborator, app.embedder
    if c is None:
        raise RuntimeError("bench corroborate: the app has no corroborator")
    multi = c.multilingual
    # The stored messages' vectors are not timed: `cache` keeps them between report runs.
    prepared = [prepare_text(t) for t in base]
    vecs = await cache.vectors("corroborate-base", await identity_of_embedder(embedder.embed, embedder.model_name),
                               prepared, lambda: embedder.embed(prepared))
    multi_base = None
    packed: list[str] | None = None
    if multi is not None:
        multi_base = await cache.vectors("corroborate-base", await identity_of_embedder(multi.queries, multi.model_name),
                                         prepared, lambda: multi.queries(prepared))
        # Each repost carries its tweet's token states, as an ingested message does (the CROSS and NATIVE
        # story models read them; their size is part of what is measured).
        from core.encoders.token_align import pack_states

        packed = [pack_states(st) for st in (await multi.queries_with_states(prepared))[1]]
    for k in range(chats):
        await c.store.set_flag("telegram", f"-100{k:07d}", "tracking", True, kind="channel", handle=f"@bench{k}")
    chat_of = rng.integers(chats, size=stored)
    ago = rng.uniform(0, 29 * 86400, size=stored)  # seconds before now
    tweet = np.arange(stored) % len(base)
    oldest = np.zeros(len(base))
    np.maximum.at(oldest, tweet, ago)
    starts = {f"telegram:bench:{j}": (now - timedelta(seconds=float(oldest[j]))).timestamp()
              for j in range(min(stored, len(base)))}

    fill_s = 0.0
    async with app.vectors.builds_held():  # one index build at the end, not one per 20k points written
        for lo in range(0, stored, FILL_CHUNK):
            idx = np.arange(lo, min(stored, lo + FILL_CHUNK))
            msgs = []
            for i in idx:
                chat = f"-100{int(chat_of[i]):07d}"
                msgs.append(TrackedMessage("telegram", chat, str(i), base[tweet[i]],
                                           now - timedelta(seconds=float(ago[i])), author=f"@bench{chat[-4:]}",
                                           permalink=f"https://t.me/bench/{i}", kind="channel"))
            mvecs = jittered(vecs, tweet[idx], rng)
            mmulti = jittered(multi_base, tweet[idx], rng) if multi_base is not None else None
            t0 = time.perf_counter()
            await c.bulk_load(msgs, mvecs, [f"telegram:bench:{j}" for j in tweet[idx]], mmulti, starts=starts,
                              states=None if packed is None else [packed[j] for j in tweet[idx]])
            fill_s += time.perf_counter() - t0
    # The vector engine indexes in the background; time a running bot's steady state.
    t0 = time.perf_counter()
    await app.vectors.settle()
    return fill_s, time.perf_counter() - t0


async def bench_corroborate(settings: Settings, messages_path: Path, queries_path: Path, *,
                            stored: int = 100_000, ingest_n: int = 600, lookups: int = 200, chats: int = 500,
                            repeats: int = 3, seed: int = 7, cache: VectorCache | None = None,
                            keep: Path | None = None, candidates: Sequence[int] = ()) -> dict:
    """`keep`: the data dir to fill and keep (instead of a temporary one); one that already holds stored
    messages is reused as it is, without filling or indexing again (1M messages: ~10 min of fill and a
    long index build, done once for several runs). `candidates`: the nearest rows a lookup reads and
    scores, each timed on every warm lookup side by side, taking turns at going first (default: the
    corroborator's own)."""
    from core.corroboration.story_model import prepare_text
    from core.corroboration.corroborator import TrackedMessage

    rng = np.random.default_rng(seed)
    base = [q for _, q in read_queries(messages_path) if q.strip()][:stored]  # no more tweets than reposts
    questions = [q for _, q in read_queries(queries_path) if q.strip()][:lookups]
    now = datetime.now(timezone.utc)
    where = contextlib.nullcontext(str(keep)) if keep is not None \
        else tempfile.TemporaryDirectory(prefix="tipline-bench-")
    with where as tmp:
        async with build_app(temp_settings(settings, Path(tmp)), seed=False) as app:
            if app.corroborator is None:  # build_app always builds one; App leaves it optional for others
                raise RuntimeError("bench corroborate: the app has no corroborator")
            c, embedder, multi = app.corroborator, app.embedder, app.corroborator.multilingual
            reused = c.indexed > 0  # a kept data dir, filled and indexed by an earlier run
            if reused and c.indexed < stored:
                raise EvalDataError(f"{keep} holds {c.indexed:,} tracked messages, fewer than --stored {stored:,} "
                                    "(a fill that was interrupted?): remove it to fill it again")
            fill_s = index_s = 0.0
            built = Path(tmp) / ".bench-corroborate-indexed"  # a fill whose index build finished
            if not reused:
                fill_s, index_s = await _fill(app, base, stored, chats, rng, now, cache or VectorCache(None))
                built.write_text(now.isoformat())
            else:
                now = filled_at(built, now)
            if reused and not built.exists():
                # A fill stopped before its index build finished (1M: stopped at 150k) left its points
                # unindexed: built now, so no lookup is timed against a full scan. A finished one is not
                # built again for the few hundred messages earlier runs ingested (a running bot's steady
                # state; rebuilding 150k for them took 369 s).
                t0 = time.perf_counter()
                await app.vectors.settle()
                index_s = time.perf_counter() - t0
                built.write_text(now.isoformat())

            def clear() -> None:  # both models' caches: every timed embedding is of a text not seen before
                embedder.clear_cache()
                if multi is not None:
                    multi.clear_cache()

            async def embed_both(texts: list[str]) -> None:
                await embedder.embed(texts)
                if multi is not None:
                    await multi.queries(texts)

            for q in (f"warm-up {i}: {q}" for i, q in enumerate(questions[:20])):  # the index, not the texts
                await c.lookup(q, exclude_chats=_ASKER, at=now)

            embed_alone, ingest, linked = [], [], 0
            cold_p50, cold_p95, warm_p50, warm_p95, cold_all, embed_all, found = [], [], [], [], [], [], 0
            ks = list(dict.fromkeys(candidates)) or [c.lookup_candidates]
            shipped = c.lookup_candidates
            by_k: dict[int, tuple[list[float], list[float]]] = {k: ([], []) for k in ks}  # (p50s, p95s) per repeat
            for r in range(repeats):
                fresh = [TrackedMessage("telegram", f"-100{int(rng.integers(chats)):07d}", f"new{r}.{i}",
                                        f"Update {r}.{i}: {base[int(rng.integers(len(base)))]}",
                                        now - timedelta(seconds=float(rng.uniform(0, 3600))), author="@benchnew",
                                        kind="channel") for i in range(ingest_n)]
                clear()
                t0 = time.perf_counter()
                await embed_both([prepare_text(m.text) for m in fresh])
                embed_alone.append(ingest_n / (time.perf_counter() - t0))
                clear()
                t0 = time.perf_counter()
                results = await asyncio.gather(*(c.ingest(m) for m in fresh))
                ingest.append(ingest_n / (time.perf_counter() - t0))
                linked += sum(1 for m, s in zip(fresh, results) if s is not None and s != m.key)

                cold, warm = [], []
                warm_k: dict[int, list[float]] = {k: [] for k in ks}
                for i, q in enumerate(questions):
                    text = f"asked {r}.{i}: {q}"  # never seen before, in any pass
                    clear()
                    t0 = time.perf_counter()
                    res = await c.lookup(text, exclude_chats=_ASKER, at=now)
                    cold.append((time.perf_counter() - t0) * 1000)
                    found += r == 0 and res is not None
                    clear()
                    t0 = time.perf_counter()
                    await embed_both([prepare_text(text)])
                    embed_all.append((time.perf_counter() - t0) * 1000)
                    # The bot's order: the engine's match embeds clean_query(text) with both models, e5 with its
                    # token states (core/matching/matcher.py; not timed), then the lookup.
                    await embedder.embed([clean_query(text)])
                    if multi is not None:
                        await multi.queries_with_states([clean_query(text)])
                    for j in range(len(ks)):
                        k = ks[(i + j) % len(ks)]
                        c.lookup_candidates = k
                        t0 = time.perf_counter()
                        await c.lookup(text, exclude_chats=_ASKER, at=now)
                        warm_k[k].append((time.perf_counter() - t0) * 1000)
                    c.lookup_candidates = shipped  # the cold lookups use the corroborator's own
                warm = warm_k[ks[0]]
                cold_all += cold
                cold_p50.append(pct(cold, 50))
                cold_p95.append(pct(cold, 95))
                warm_p50.append(pct(warm, 50))
                warm_p95.append(pct(warm, 95))
                for k in ks:
                    by_k[k][0].append(pct(warm_k[k], 50))
                    by_k[k][1].append(pct(warm_k[k], 95))
            embed_s, ingest_s = Spread.of(embed_alone), Spread.of(ingest)
            return {
                "benchmark": "corroborate", "stored_messages": c.indexed, "tracked_chats": chats,
                "base_tweets": len(base), "repeats": repeats, "seed": seed, "data_time": now.isoformat(),
                **({"reused_data_dir": str(keep), "index_build_on_reuse_s": round(index_s, 1)} if reused else
                   {"bulk_fill_msgs_per_s": round(stored / fill_s, 1), "index_build_after_fill_s": round(index_s, 1)}),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                # the index builds run in child processes (storage/edge_build.py): their largest
                "peak_rss_index_build_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                "vector_store_disk_mb": round(_disk_bytes(edge_dir(app.settings)) / 2**20),
                "sqlite_disk_mb": round(_disk_bytes(Path(tmp), "*.sqlite3*") / 2**20),
                "ingest": {"messages_per_repeat": ingest_n, "embedding_alone_msgs_per_s": embed_s,
                           "msgs_per_s": ingest_s,
                           "ingest_over_embedding_alone": round(ingest_s.median / embed_s.median, 2)
                           if embed_s.median else None,
                           "linked_to_a_story": linked},
                "lookup": {"n": len(questions), "cold_p50_ms": Spread.of(cold_p50, 2),
                           "cold_p95_ms": Spread.of(cold_p95, 2),
                           "warm_after_check_p50_ms": Spread.of(warm_p50, 2),
                           "warm_after_check_p95_ms": Spread.of(warm_p95, 2),
                           # Means over every lookup of every pass: embed + rest = cold.
                           "cold_mean_ms": round(mean(cold_all), 2), "embed_mean_ms": round(mean(embed_all), 2),
                           "rest_mean_ms": round(mean(cold_all) - mean(embed_all), 2),
                           "with_also_reported_first_pass": found, "candidates": ks[0],
                           **({"warm_after_check_by_candidates": {
                               str(k): {"p50_ms": Spread.of(p50s, 2), "p95_ms": Spread.of(p95s, 2)}
                               for k, (p50s, p95s) in by_k.items()}} if len(ks) > 1 else {})},
            }
