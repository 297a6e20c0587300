"""`tipline eval tatoeba`: does the shipped setup read Russian and Ukrainian?

Tatoeba test pairs as in the LASER paper (1,000 sentence pairs per language, line i of one file
translating line i of the other). For every sentence: is its nearest neighbour (cosine) among the
1,000 on the other side its translation? Accuracy in both directions, for the multilingual model the
matcher uses across languages and, for comparison, the English model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.encoders.text_embedder import TextEmbedder
from evals.vector_cache import VectorCache, identity_of_embedder_sync
from core.encoders.multilingual import MultilingualEncoder


@dataclass(frozen=True)
class PairAccuracy:
    model: str
    language: str
    pairs: int
    to_english: float    # share of foreign sentences whose nearest English sentence is the translation
    from_english: float  # and the other way round


def nearest_accuracy(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(a→b, b→a) nearest-neighbour accuracy; row i of `a` translates row i of `b`."""
    sims = a @ b.T
    gold = np.arange(len(a))
    return float((sims.argmax(axis=1) == gold).mean()), float((sims.argmax(axis=0) == gold).mean())


def read_pairs(directory: Path, lang: str, limit: int | None = None) -> tuple[list[str], list[str]]:
    """`tatoeba.<lang>-eng.<lang>` and `tatoeba.<lang>-eng.eng`, line by line."""
    foreign = (directory / f"tatoeba.{lang}-eng.{lang}").read_text(encoding="utf-8").splitlines()
    english = (directory / f"tatoeba.{lang}-eng.eng").read_text(encoding="utf-8").splitlines()
    if len(foreign) != len(english):
        raise ValueError(f"{lang}: {len(foreign)} sentences against {len(english)} English ones")
    return foreign[:limit], english[:limit]


def evaluate(directory: Path, multilingual: MultilingualEncoder, english_model: TextEmbedder | None = None,
             languages: Sequence[str] = ("rus", "ukr"), limit: int | None = None,
             cache: VectorCache | None = None) -> list[PairAccuracy]:
    """`cache`: keeps the sentence vectors between runs (`tipline bench report`); nothing here is timed."""
    cache = cache or VectorCache(None)
    multi_id = identity_of_embedder_sync(multilingual.queries_sync, multilingual.model_name)
    english_id = identity_of_embedder_sync(english_model.embed_sync, english_model.model_name) \
        if english_model is not None else ""
    out = []
    for lang in languages:
        foreign, english = read_pairs(directory, lang, limit)

        # Symmetric task: both sides as queries, as the e5 model card advises for bitext mining.
        def multi(texts: list[str]) -> np.ndarray:
            return cache.vectors_sync("tatoeba", multi_id, texts, lambda: multilingual.queries_sync(texts))

        to_en, from_en = nearest_accuracy(multi(foreign), multi(english))
        out.append(PairAccuracy(multilingual.model_name, lang, len(foreign), to_en, from_en))
        if english_model is not None:
            def plain(texts: list[str]) -> np.ndarray:
                return cache.vectors_sync("tatoeba", english_id, texts, lambda: english_model.embed_sync(texts))

            to_en, from_en = nearest_accuracy(plain(foreign), plain(english))
            out.append(PairAccuracy(english_model.model_name, lang, len(foreign), to_en, from_en))
    return out
