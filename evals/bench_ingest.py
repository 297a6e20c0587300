"""`tipline bench ingest`: the real ingest path against its floor, embedding alone, in the same run.

Each repeat starts a fresh data dir and times, in alternating order, over the same fact-checks:
  embedding alone: every claim and headline through the English model, every claim + headline
                   through the multilingual one and USE, and every claim through the multilingual one as a
                   query, side by side as ingest runs them, nothing stored (the bound: ingest cannot be
                   faster than embedding what it stores);
  tipline ingest:  `KnowledgeBase.add` (embedding, sparse vectors, Qdrant upsert, SQLite, term statistics).
The embedder's cache is cleared before each, so neither reuses the other's vectors.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bot.app import build_app
from evals.bench import Spread, factchecks, temp_settings
from bot.settings import Settings
from core.matching.features import doc_text
from core.textclean import clean_query

# Sessions pay a one-off cost on their first call; nothing timed should include it.
_WARM_UP = [f"warm-up sentence number {i} about nothing in particular" for i in range(32)]


async def bench_ingest(settings: Settings, claims_path: Path, *, limit: int | None = 2000, repeats: int = 3) -> dict:
    fcs = factchecks(claims_path, limit)
    texts = [fc.claim for fc in fcs] + [fc.title for fc in fcs if fc.title]
    docs = [doc_text(fc.claim, fc.title) for fc in fcs]
    claims = [clean_query(fc.claim) for fc in fcs]
    floor, ours = [], []
    for r in range(repeats):
        with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
            async with build_app(temp_settings(settings, Path(tmp)), seed=False) as app:
                await asyncio.gather(app.embedder.embed(_WARM_UP), app.kb.multilingual.passages(_WARM_UP),
                                     app.kb.use.encode(_WARM_UP))

                async def embed_alone() -> None:
                    app.clear_embedding_caches()
                    t0 = time.perf_counter()
                    await asyncio.gather(app.embedder.embed(texts), app.kb.multilingual.passages(docs),
                                         app.kb.use.encode(docs), app.kb.multilingual.queries(claims))
                    floor.append(len(fcs) / (time.perf_counter() - t0))

                async def ingest() -> None:
                    app.clear_embedding_caches()
                    t0 = time.perf_counter()
                    await app.kb.add(fcs)
                    ours.append(len(fcs) / (time.perf_counter() - t0))

                # Alternate which goes first, so neither always runs on a cooler (or warmer) machine.
                for step in ((embed_alone, ingest) if r % 2 == 0 else (ingest, embed_alone)):
                    await step()
    embed_s, ingest_s = Spread.of(floor), Spread.of(ours)
    return {
        "benchmark": "ingest", "claims_per_run": len(fcs), "texts_embedded_per_run": len(texts) + len(docs) + len(claims), "repeats": repeats,
        "embedding_alone_claims_per_s": embed_s,
        "tipline_ingest_claims_per_s": ingest_s,
        "ingest_over_embedding_alone": round(ingest_s.median / embed_s.median, 2) if embed_s.median else None,
    }
