"""`tipline eval claim-matching`: the production matcher over CLEF-2020 Task 2 style data.

The claims are indexed into a fresh temporary data dir (so the user's knowledge base is untouched and
the figures never depend on what was there), then every query goes through the same
`ClaimMatcher.by_text` a chat message does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.app import build_app
from bot.settings import Settings
from evals.evaluation import RetrievalScores, read_qrels, read_queries, read_verified_claims, score_run, write_run
from core.matching.matcher import ClaimMatcher
from schema.models import FactCheck

RUN_DEPTH = 20


async def rank_queries(matcher: ClaimMatcher, queries: list[tuple[str, str]], source_of: dict[str, str],
                       progress: Callable[[str, int, int], None] | None = None
                       ) -> dict[str, list[tuple[str, float]]]:
    """Every query through `ClaimMatcher.by_text`, as a chat message goes: query id -> the top RUN_DEPTH
    (claim id in the data set, probability). `source_of` maps fact-check ids to the data set's ids."""
    ranked: dict[str, list[tuple[str, float]]] = {}
    for i, (qid, text) in enumerate(queries, start=1):
        matches = await matcher.by_text(text, limit=RUN_DEPTH) if text.strip() else []
        ranked[qid] = [(source_of[m.factcheck_id], m.similarity) for m in matches]
        if progress and (i % 50 == 0 or i == len(queries)):
            progress("match", i, len(queries))
    return ranked


@dataclass(frozen=True)
class ClaimEvalOutcome:
    queries: int
    claims: int
    scores: RetrievalScores | None


async def run_claim_matching(settings: Settings, claims_path: Path, queries_path: Path, out: Path,
                             qrels_path: Path | None = None, tag: str = "tipline",
                             progress: Callable[[str, int, int], None] | None = None) -> ClaimEvalOutcome:
    claims = read_verified_claims(claims_path)
    queries = read_queries(queries_path)
    gold = read_qrels(qrels_path) if qrels_path else None
    with tempfile.TemporaryDirectory(prefix="tipline-eval-") as tmp:
        # Reuse the user's assembled model files instead of copying them again into the temp dir.
        eval_settings = settings.model_copy(update={"data_dir": Path(tmp), "qdrant_url": None,
                                                    "factchecks_collection": "eval_claims",
                                                    "embed_model_dir": settings.model_dir})
        async with build_app(eval_settings, seed=False) as app:
            factchecks = [FactCheck(claim=c.claim, title=c.title, source_id=c.id, url=f"clef2020:{c.id}")
                          for c in claims]
            by_id = {fc.id: fc.source_id for fc in factchecks}
            await app.kb.add(factchecks, progress=(lambda d, t: progress("index", d, t)) if progress else None)
            ranked = await rank_queries(app.matcher, queries, by_id, progress)
    write_run(out, ranked.items(), tag)
    scores = score_run({q: [d for d, _ in r] for q, r in ranked.items()}, gold) if gold is not None else None
    return ClaimEvalOutcome(len(queries), len(claims), scores)

