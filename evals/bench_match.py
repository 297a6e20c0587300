"""`tipline bench match`: how long one message waits for the knowledge-base match.

The server is warm (every message is matched once before timing, which loads the in-process index and
the per-document data) and the message is cold: the models' caches are cleared before each timed
match, as for a message nobody sent before. Per message and pass:
  cold:   `ClaimMatcher.by_text` with nothing cached for the message (what a user waits for);
  embed:  the models on the cleaned message (MiniLM, e5 with its token states and USE, and MiniLM on a
          Cyrillic message's English gloss, side by side, as by_text runs them), cold again;
  search: the candidate search with that vector;
  rest:   cold − embed − search: cleaning, other encoders, features, re-ranking, payloads;
  warm:   by_text again right away, the message's embeddings now remembered (a repeated forward): what
          the store and the re-ranker make a message wait for, the models apart (nothing of the store
          is remembered between matches), shown beside the cold figure, never instead of it.
The breakdown is of means over every message of every pass, so embed + search + rest = cold exactly;
p50 and p95 are per pass, as median (min–max) over passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bot.app import App, build_app
from evals.bench import Spread, factchecks, jittered, mean, pct, temp_settings
from bot.settings import Settings
from evals.evaluation import EvalDataError, read_queries
from core.matching.knowledge_base import FactCheckVectors
from schema.models import FactCheck
from core.matching.crosslingual_terms import lazy_lexicon
from core.matching.gloss import gloss
from core.encoders.sparse import query_vector
from core.textclean import clean_query


@dataclass
class _Timings:
    """Per-message milliseconds of one kind of message, appended pass after pass."""

    cold: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)
    search: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    passes: list[tuple[float, float, float]] = field(default_factory=list)  # (cold p50, cold p95, warm p50)


async def index_claims(app: App, fcs: list[FactCheck]) -> float:
    """Index `fcs` through the production ingest path; returns the seconds it took."""
    app.clear_embedding_caches()
    t0 = time.perf_counter()
    await app.kb.add(fcs)
    return time.perf_counter() - t0


async def _one_pass(app: App, messages: list[str], t: _Timings) -> None:
    matcher, kb = app.matcher, app.kb
    cold, warm = [], []
    for q in messages:
        app.clear_embedding_caches()
        t0 = time.perf_counter()
        await matcher.by_text(q)
        cold.append((time.perf_counter() - t0) * 1000)

        clean = clean_query(q)
        glossed = gloss(clean, lazy_lexicon())
        app.clear_embedding_caches()
        t0 = time.perf_counter()
        # The models, side by side, as by_text runs them: e5 with its token states, the call by_text makes
        # (its vector alone would leave the states uncomputed, and the warm match below would run e5 again).
        vecs, (multi, _), use, gvecs = await asyncio.gather(
            kb.embedder.embed([clean]), kb.multilingual.queries_with_states([clean]), kb.use.encode([clean]),
            kb.embedder.embed([glossed]) if glossed is not None else asyncio.sleep(0, None))
        t.embed.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        await kb.vectors.search_factchecks(kb.collection, vecs[0], query_vector(clean), matcher.candidates,
                                           multi=multi[0], use=use[0], gloss=gvecs[0] if gvecs is not None else None)
        t.search.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        await matcher.by_text(q)  # the message's embeddings are remembered now
        warm.append((time.perf_counter() - t0) * 1000)
    t.cold += cold
    t.warm += warm
    t.passes.append((pct(cold, 50), pct(cold, 95), pct(warm, 50)))


async def match_latency(app: App, messages: list[str], repeats: int = 3) -> dict:
    """Latency of matching `messages` against whatever `app`'s knowledge base holds (see the module doc)."""
    if not messages:
        return {"n": 0}
    for q in messages:  # warm server: the index and per-document data are loaded, as in a running bot
        await app.matcher.by_text(q)
    t = _Timings()
    for _ in range(repeats):
        await _one_pass(app, messages, t)
    cold_mean, embed_mean, search_mean = mean(t.cold), mean(t.embed), mean(t.search)
    return {
        "n": len(messages), "avg_chars": round(sum(map(len, messages)) / len(messages)), "passes": repeats,
        "cold_p50_ms": Spread.of([p[0] for p in t.passes], 2),
        "cold_p95_ms": Spread.of([p[1] for p in t.passes], 2),
        "warm_p50_ms": Spread.of([p[2] for p in t.passes], 2),
        # Means over every message of every pass: these four add up.
        "cold_mean_ms": round(cold_mean, 2),
        "embed_mean_ms": round(embed_mean, 2),
        "search_mean_ms": round(search_mean, 2),
        "rest_mean_ms": round(cold_mean - embed_mean - search_mean, 2),
    }


def short_messages(fcs: list[FactCheck], n: int) -> list[str]:
    """One-sentence messages: an even sample of the claims themselves."""
    step = max(1, len(fcs) // max(1, n))
    return [fc.claim for fc in fcs[::step]][:n]


_STATES = ("states", "claim_states")  # token states: a list of matrices, one per fact-check


def distractors(fcs: list[FactCheck], vectors: FactCheckVectors, n: int, seed: int = 7) \
        -> tuple[list[FactCheck], FactCheckVectors]:
    """`n` synthetic fact-checks for a knowledge base larger than the claims file (issue 18: match at 100k
    claims): each pairs one real claim with another's headline, and every vector is its source's plus
    noise (sigma 0.01 per dimension, renormalised), so the engine's index holds 100k points shaped like
    real ones around the real claims, without embedding 90k texts nobody wrote."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(len(fcs), size=n), rng.integers(len(fcs), size=n)
    out = [fc.model_copy(update={"title": fcs[j].title, "url": f"{fc.url}#d{k}", "source_id": f"{fc.source_id}~d{k}"})
           for k, (fc, j) in enumerate(zip((fcs[i] for i in a), b))]

    # Every vector field, so a field added to FactCheckVectors is filled too: the title's from the headline's
    # source, the rest from the claim's.
    fields: dict[str, Any] = {f.name: jittered(getattr(vectors, f.name), b if f.name == "title" else a, rng)
                              for f in dataclasses.fields(vectors)
                              if f.name not in _STATES and getattr(vectors, f.name) is not None}
    # Token states (one matrix per fact-check, core/encoders/token_align.py) are the claim's source's, as they are.
    fields.update({name: [getattr(vectors, name)[i] for i in a] for name in _STATES
                   if getattr(vectors, name) is not None})
    return out, dataclasses.replace(vectors, **fields)


async def bench_match(settings: Settings, claims_path: Path, queries_path: Path, *, n_queries: int = 200,
                      repeats: int = 3, scale_to: int = 0, keep: Path | None = None) -> dict:
    """Match latency over the whole claims file for two kinds of message: the given queries (CLEF tweets:
    long, with signatures) and short one-sentence messages (a sample of the claims, reworded by nobody).
    `scale_to` > the file's claims adds synthetic ones (`distractors`) up to that many, untimed; the ingest
    rate is then not measured (`bench ingest` measures it). `keep`: the data dir to fill and keep; one that
    already holds the claims is reused without filling (100k claims: ~16 min of fill and index build)."""
    fcs = factchecks(claims_path)
    tweets = [q for _, q in read_queries(queries_path) if q.strip()][:n_queries]
    short = short_messages(fcs, n_queries)
    where = contextlib.nullcontext(str(keep)) if keep is not None \
        else tempfile.TemporaryDirectory(prefix="tipline-bench-")
    with where as tmp:
        async with build_app(temp_settings(settings, Path(tmp)), seed=False) as app:
            report: dict = {"benchmark": "match"}
            held = await app.kb.count()
            if held and held < max(scale_to, len(fcs)):
                raise EvalDataError(f"{keep} holds {held:,} claims, fewer than {max(scale_to, len(fcs)):,} (a fill "
                                    "that was interrupted?): remove it to fill it again")
            if held:
                report |= {"claims_indexed": held, "reused_data_dir": str(keep)}
            elif scale_to > len(fcs):
                vectors = await app.kb.embed(fcs)
                extra, extra_vectors = distractors(fcs, vectors, scale_to - len(fcs))
                t0 = time.perf_counter()
                await app.kb.add(fcs, vectors=vectors)
                for start in range(0, len(extra), 10_000):
                    await app.kb.add(extra[start:start + 10_000], vectors=extra_vectors.rows(start, start + 10_000))
                report |= {"claims_indexed": len(fcs) + len(extra), "claims_from_file": len(fcs),
                           "synthetic_claims": len(extra), "store_fill_s": round(time.perf_counter() - t0, 1)}
            else:
                ingest_s = await index_claims(app, fcs)
                report |= {"claims_indexed": len(fcs), "ingest_claims_per_s": round(len(fcs) / ingest_s, 1)}
            t0 = time.perf_counter()
            await app.vectors.settle()  # the engine indexes in the background; time a running bot's steady state
            report |= {"index_build_s": round(time.perf_counter() - t0, 1),
                       "candidates_per_list": app.matcher.candidates,
                       "long_queries": await match_latency(app, tweets, repeats),
                       "short_queries": await match_latency(app, short, repeats)}
            return report
