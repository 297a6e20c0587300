"""Does a message dispute the fact-checked claim it matches? ("Это фейк, что …", "Неправда, що …", "Не верьте: …")

A message that denies a checked claim matches it as closely as one repeating it, and inheriting the rating would
invert the answer. One logistic model decides, trained on the pairs we wrote (eval/realistic: denials against
restatements, questions and conditions of the same fact-checks; training/denial.py). Its inputs: what the
negation rules see in the pair (core/matching/negation.py: their answer, debunk frames, negated words aligned with the
claim's), the message's e5 vector, and that vector minus the claim's. The vector carries a denial's tone in any
language the model reads ("так званий", "вкид", "не ведіться" …) where the rules' word lists stop; the difference
reads that tone relative to the claim: a claim that is itself negative ("Berlin has no evidence that Navalny was
poisoned", "There are no Russian troops in Ukraine") is restated in a negative tone, and the message's vector
alone read that as a denial. The message's vector is the one matching already computed (remembered by the
encoder), the claim's the one stored with the fact-check (KnowledgeBase.claim_reads).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.logistic import probability, standardised_weights
from core.matching.negation import POLARITY_FEATURES, polarity_features

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "denial.json"
VECTOR_INPUT = "message, message minus claim"  # what the vector columns hold; a model trained on another is refused


def denial_features(message: str, claim: str, vector: np.ndarray, claim_vector: np.ndarray) -> np.ndarray:
    """One row: the rules' polarity features, the message's e5 query vector, and that vector minus the claim's."""
    v = np.asarray(vector, dtype=np.float64).ravel()
    return np.concatenate([np.asarray(polarity_features(message, claim), dtype=np.float64), v,
                           v - np.asarray(claim_vector, dtype=np.float64).ravel()])


@dataclass(frozen=True)
class Denial:
    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    provenance: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> Denial:
        if tuple(data["rules"]) != POLARITY_FEATURES or data.get("vector_input") != VECTOR_INPUT:
            raise ValueError("denial.json was trained on other features; rerun python -m training.denial")
        return cls(*standardised_weights(data), float(data["threshold"]),
                   dict(data.get("provenance", {})))

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> Denial:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    def probability(self, message: str, claim: str, vector: np.ndarray, claim_vector: np.ndarray) -> float:
        row = denial_features(message, claim, vector, claim_vector)
        if row.shape != self.mean.shape:
            raise ValueError(f"denial.json expects {self.mean.shape[0]} inputs, got {row.shape[0]}: another encoder?")
        return float(probability(row, self.mean, self.std, self.weights, self.bias))

    def disputes(self, message: str, claim: str, vector: np.ndarray, claim_vector: np.ndarray) -> bool:
        return self.probability(message, claim, vector, claim_vector) >= self.threshold


@lru_cache(maxsize=1)
def default_denial() -> Denial | None:
    """The shipped model, or None before one was trained."""
    return Denial.load() if DEFAULT_PATH.exists() else None
