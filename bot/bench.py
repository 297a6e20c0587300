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


async def bench_match(settings: Settings, claims_path: Path, queries_path: Path, *, n_queries: int = 200) -> dict:
    fcs = _factchecks(claims_path)
    queries = [q for _, q in read_queries(queries_path) if q.strip()][:n_queries]
    with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
        async with build_app(_temp_settings(settings, tmp), seed=False) as app:
            t0 = time.perf_counter()
            await app.kb.add(fcs)
            ingest_s = time.perf_counter() - t0
            matcher, kb = app.matcher, app.kb
            for q in queries[:10]:  # warm-up: first calls build the in-process index and JIT caches
                await matcher.by_text(q)
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
    return {
        "benchmark": "match", "claims_indexed": len(fcs), "queries": len(queries),
        "ingest_claims_per_s": round(len(fcs) / ingest_s, 1),
        "match_ms_p50": round(_pct(total, 50), 2), "match_ms_p95": round(_pct(total, 95), 2),
        "embed_ms_p50": round(_pct(embed, 50), 2), "search_ms_p50": round(_pct(search, 50), 2),
        "candidates": matcher.candidates,
    }


def format_report(report: dict) -> str:
    return "\n".join(f"{k}: {v}" for k, v in report.items())
