"""evals/kept_queries.py: the report's claim-matching quality ranked from kept query vectors is the real
matcher's ranking (real models, SQLite and Qdrant Edge), a second run embeds nothing, and kept vectors
that do not reproduce the real ranking are thrown away."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evals.claim_eval import rank_queries
from evals.kept_queries import LABEL, model_identities, rank_kept
from evals.vector_cache import VectorCache
from schema.models import FactCheck, Verdict

FCS = [FactCheck(source_id=f"kq{i}", claim=claim, title=title, url=f"https://factcheck.example/kq{i}", publisher="Example",
                 rating_text="False", verdict=Verdict.REFUTED)
       for i, (claim, title) in enumerate([
           ("Drinking bleach cures the coronavirus.", "No, bleach does not cure COVID-19"),
           ("The Eiffel Tower was sold for scrap in 2019.", ""),
           ("Вышки 5G распространяют коронавирус.", "Нет, 5G не распространяет вирус"),
       ])]
QUERIES = [("q1", "Bleach cures covid, drink it — Someone (@someone) March 1, 2020"),
           ("q2", "They sold the Eiffel Tower for scrap metal!"),
           ("q3", "5G вышки распространяют вирус, это правда"),
           ("q4", "Drinking bleach cures coronavirus. Гарантированно.")]


class _Ids(dict):
    """Fact-check id -> the test's name; the seed's fact-checks keep their ids."""

    def __init__(self) -> None:
        super().__init__({fc.id: fc.source_id for fc in FCS})

    def __missing__(self, key: str) -> str:
        return key


async def test_kept_vectors_rank_as_the_real_matcher_and_embed_nothing(app, tmp_path: Path) -> None:
    await app.kb.add(FCS)
    app.clear_embedding_caches()
    real = await rank_queries(app.matcher, QUERIES, _Ids())
    assert real["q2"][0][0] == "kq1"

    first = VectorCache(tmp_path / "vc")
    ranked, how = await rank_kept(app, QUERIES, _Ids(), first, sample=2)
    assert (ranked, how) == (real, "computed") and first.misses == [LABEL]
    again = VectorCache(tmp_path / "vc")
    ranked, how = await rank_kept(app, QUERIES, _Ids(), again, sample=2)
    assert (ranked, how) == (real, "kept") and again.hits == [LABEL] and not again.misses


async def test_kept_vectors_that_disagree_are_not_used(app, tmp_path: Path) -> None:
    await app.kb.add(FCS)
    app.clear_embedding_caches()
    real = await rank_queries(app.matcher, QUERIES, _Ids())
    cache = VectorCache(tmp_path / "vc")
    await rank_kept(app, QUERIES, _Ids(), cache, sample=2)
    # The same key, other vectors (as from a model whose identity probe did not change): each text's
    # English vector swapped with another text's.
    models, texts = await model_identities(app), [t for _, t in QUERIES]
    arrays = cache.kept(LABEL, models, texts)
    assert arrays is not None and len(arrays["english"]) >= 4
    arrays["english"] = np.roll(arrays["english"], 1, axis=0)
    cache.keep(LABEL, models, texts, arrays)
    ranked, how = await rank_kept(app, QUERIES, _Ids(), VectorCache(tmp_path / "vc"), sample=2)
    assert (ranked, how) == (real, "computed: kept vectors disagreed")
