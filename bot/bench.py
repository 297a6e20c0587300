"""`tipline bench`: speed figures measured side by side in one run, reported as medians and ratios.

Everything runs in a fresh temporary data dir so the user's knowledge base is neither used nor touched.
"""

from __future__ import annotations

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
        vec = (await kb.embedder.embed([clean]))[0]
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
