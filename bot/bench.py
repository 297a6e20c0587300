"""`tipline bench`: speed figures measured side by side in one run, reported as medians and ratios.

Everything runs in a fresh temporary data dir so the user's knowledge base is neither used nor touched.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bot.app import build_app
from bot.settings import Settings
from core.evaluation import read_queries, read_verified_claims
from core.models import FactCheck
from core.sparse import query_vector
from core.textclean import clean_query


def _temp_settings(settings: Settings, tmp: str) -> Settings:
    return settings.model_copy(update={"data_dir": Path(tmp), "qdrant_url": None, "factchecks_collection": "bench",
                                       "embed_model_dir": settings.model_dir})


def _factchecks(claims_path: Path, limit: int | None = None) -> list[FactCheck]:
    claims = read_verified_claims(claims_path)[:limit]
    return [FactCheck(claim=c.claim, title=c.title, url=f"bench:{c.id}", source_id=c.id) for c in claims]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


async def bench_ingest(settings: Settings, claims_path: Path, *, limit: int = 2000, repeats: int = 3) -> dict:
    """Full ingest (embed claim + headline, sparse vectors, Qdrant upsert, SQLite) against a naive loop
    that only embeds the same texts in input order, 64 at a time, as most first versions do."""
    fcs = _factchecks(claims_path, limit)
    texts = [fc.claim for fc in fcs] + [fc.title for fc in fcs if fc.title]
    naive, ours = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
            async with build_app(_temp_settings(settings, tmp), seed=False) as app:
                model = app.embedder._model  # the same ONNX session, driven the naive way
                t0 = time.perf_counter()
                list(model.embed(texts, batch_size=64))
                naive.append(len(fcs) / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                await app.kb.add(fcs)
                ours.append(len(fcs) / (time.perf_counter() - t0))
    return {
        "benchmark": "ingest", "claims_per_run": len(fcs), "texts_embedded_per_run": len(texts), "repeats": repeats,
        "naive_embed_only_claims_per_s_median": round(statistics.median(naive), 1),
        "tipline_ingest_claims_per_s_median": round(statistics.median(ours), 1),
        "ratio": round(statistics.median(ours) / statistics.median(naive), 2),
        "naive_runs": [round(x, 1) for x in naive], "tipline_runs": [round(x, 1) for x in ours],
    }


async def _latencies(app, queries: list[str]) -> dict[str, float]:
    matcher, kb = app.matcher, app.kb
    total, embed, search = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        await matcher.by_text(q)
        total.append((time.perf_counter() - t0) * 1000)
        clean = clean_query(q)
        t0 = time.perf_counter()
        # Uncached: the match above just put this text in the embedder's cache.
        vec = (await asyncio.to_thread(kb.embedder._embed_uncached, [clean]))[0]
        embed.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        await kb.vectors.search_factchecks(kb.collection, vec, query_vector(clean), matcher.candidates)
        search.append((time.perf_counter() - t0) * 1000)
    return {"match_ms_p50": round(_pct(total, 50), 2), "match_ms_p95": round(_pct(total, 95), 2),
            "embed_ms_p50": round(_pct(embed, 50), 2), "search_ms_p50": round(_pct(search, 50), 2),
            "rerank_and_rest_ms_p50": round(_pct(total, 50) - _pct(embed, 50) - _pct(search, 50), 2)}


async def bench_match(settings: Settings, claims_path: Path, queries_path: Path, *, n_queries: int = 200) -> dict:
    """Single-message match latency over the whole claims file, warm (every query seen once before),
    for two kinds of message: the given queries (CLEF tweets: long, with signatures) and short
    one-sentence messages (a sample of the claims themselves, reworded by nobody)."""
    fcs = _factchecks(claims_path)
    tweets = [q for _, q in read_queries(queries_path) if q.strip()][:n_queries]
    step = max(1, len(fcs) // n_queries)
    short = [fc.claim for fc in fcs[::step]][:n_queries]
    with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
        async with build_app(_temp_settings(settings, tmp), seed=False) as app:
            t0 = time.perf_counter()
            await app.kb.add(fcs)
            ingest_s = time.perf_counter() - t0
            for q in tweets + short:  # warm-up: builds the in-process index and the per-document caches
                await app.matcher.by_text(q)
            report = {"benchmark": "match", "claims_indexed": len(fcs), "candidates_per_list": app.matcher.candidates,
                      "ingest_claims_per_s": round(len(fcs) / ingest_s, 1)}
            report["long_queries"] = {"n": len(tweets), "avg_chars": round(sum(map(len, tweets)) / len(tweets)),
                                      **await _latencies(app, tweets)}
            report["short_queries"] = {"n": len(short), "avg_chars": round(sum(map(len, short)) / len(short)),
                                       **await _latencies(app, short)}
    return report


def format_report(report: dict) -> str:
    lines = []
    for k, v in report.items():
        if isinstance(v, dict):
            lines.append(f"{k}: " + ", ".join(f"{a}={b}" for a, b in v.items()))
        else:
            lines.append(f"{k}: {v}")
    return "\n".join(lines)


async def bench_corroborate(settings: Settings, messages_path: Path, queries_path: Path, *,
                            stored: int = 100_000, ingest_n: int = 2000, lookups: int = 200,
                            chats: int = 500, seed: int = 7) -> dict:
    """"Also reported by" speed with `stored` messages in the window index (embedded Qdrant + SQLite).

    The stored messages are CLEF tweets (`messages_path`, e.g. train) posted by `chats` synthetic
    channels over 29 days: each tweet is reposted ~stored/len(tweets) times, its copies forming one
    story, and filled through `Corroborator.bulk_load` with the tweet's real embedding plus a little
    noise (embedding 100,000 texts would take ~10 minutes and measure only the model). Then:
      ingest: `ingest_n` new, unique messages through the real path (`ingest`: micro-batched ONNX
              embedding, same-story linking against everything stored, SQLite + Qdrant writes);
      lookup: `lookups` check texts never seen before (`queries_path`, e.g. dev tweets) through the
              real `lookup` (embedding, mat-vec over every stored vector, features, stories, SQLite).
    Texts are read at run time and never shipped.
    """
    from datetime import datetime, timedelta, timezone

    from core.corroboration import prepare_text
    from core.tracking import TrackedMessage

    rng = np.random.default_rng(seed)
    base = [q for _, q in read_queries(messages_path) if q.strip()]
    questions = [q for _, q in read_queries(queries_path) if q.strip()]
    now = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
        async with build_app(_temp_settings(settings, tmp), seed=False) as app:
            c = app.corroborator
            vecs = await app.embedder.embed([prepare_text(t) for t in base])
            for k in range(chats):
                await c.store.set_flag("telegram", f"-100{k:07d}", "tracking", True, kind="channel",
                                       handle=f"@bench{k}")
            msgs, mvecs, stories = [], np.zeros((stored, vecs.shape[1]), np.float32), []
            for i in range(stored):
                j = i % len(base)
                chat = f"-100{int(rng.integers(chats)):07d}"
                at = now - timedelta(seconds=float(rng.uniform(0, 29 * 86400)))
                msgs.append(TrackedMessage("telegram", chat, str(i), base[j], at, author=f"@bench{chat[-4:]}",
                                           permalink=f"https://t.me/bench/{i}", kind="channel"))
                v = vecs[j] + rng.normal(0, 0.01, vecs.shape[1]).astype(np.float32)
                mvecs[i] = v / np.linalg.norm(v)
                stories.append(f"telegram:bench:{j}")
            t0 = time.perf_counter()
            await c.bulk_load(msgs, mvecs, stories)
            fill_s = time.perf_counter() - t0

            # ingest: unique new texts (no embedding-cache hits), all submitted at once like a busy feed
            fresh = [TrackedMessage("telegram", f"-100{int(rng.integers(chats)):07d}", f"new{i}",
                                    f"Update {i}: {base[int(rng.integers(len(base)))]}",
                                    now - timedelta(seconds=float(rng.uniform(0, 3600))), author="@benchnew",
                                    kind="channel") for i in range(ingest_n)]
            t0 = time.perf_counter()
            results = await asyncio.gather(*(c.ingest(m) for m in fresh))
            ingest_s = time.perf_counter() - t0
            linked = sum(1 for m, s in zip(fresh, results) if s is not None and s != m.key)

            warm = [f"warm-up {i}: {q}" for i, q in enumerate(questions[:20])]
            for q in warm:
                await c.lookup(q, exclude_chats=[("telegram", "asker")])
            total, embed, found = [], [], 0
            for i, q in enumerate(questions[:lookups]):
                t0 = time.perf_counter()
                res = await c.lookup(q, exclude_chats=[("telegram", "asker")])
                total.append((time.perf_counter() - t0) * 1000)
                found += res is not None
                t0 = time.perf_counter()
                await app.embedder.embed([f"again {i}: " + prepare_text(q)])
                embed.append((time.perf_counter() - t0) * 1000)
            # In the bot the lookup follows the engine's check of the same message, whose matcher already
            # embedded the same cleaned text (prepare_text == clean_query with the default steps), so the
            # embedder's cache answers: this is the latency corroboration adds to a check.
            after_check = []
            for i, q in enumerate(questions[:lookups]):
                fresh_q = f"asked {i}: {q}"
                await app.embedder.embed([clean_query(fresh_q)])  # the engine's match step (not timed)
                t0 = time.perf_counter()
                await c.lookup(fresh_q, exclude_chats=[("telegram", "asker")])
                after_check.append((time.perf_counter() - t0) * 1000)
            return {
                "benchmark": "corroborate", "stored_messages": len(c.index), "tracked_chats": chats,
                "base_tweets": len(base), "bulk_fill_msgs_per_s": round(stored / fill_s, 1),
                "ingest": {"messages": ingest_n, "msgs_per_s": round(ingest_n / ingest_s, 1),
                           "linked_to_a_story": linked},
                "lookup": {"n": len(total), "ms_p50": round(_pct(total, 50), 2), "ms_p95": round(_pct(total, 95), 2),
                           "embed_ms_p50": round(_pct(embed, 50), 2),
                           "search_and_rest_ms_p50": round(_pct(total, 50) - _pct(embed, 50), 2),
                           "with_also_reported": found},
                "lookup_after_check": {"n": len(after_check), "ms_p50": round(_pct(after_check, 50), 2),
                                       "ms_p95": round(_pct(after_check, 95), 2)},
            }
