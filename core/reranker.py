"""Learned re-ranker for fact-check candidates: features (core.matchfeatures) -> probability of a match.

A pointwise logistic regression trained by tools/train_reranker.py on the CLEF-2020 CheckThat!
Task 2 train split. The weights file (core/data/reranker.json) carries the feature names it was
trained on, the standardisation, the weights, the two decision thresholds on the probability and the
training provenance (data split, date, metrics).

- `auto`: a top-1 candidate at or above it is the same claim with precision >= 0.9 (cross-validated
  on train): the bot may say "already fact-checked" outright.
- `suggest`: precision >= 0.5: show it as "possibly related".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.matchfeatures import FEATURE_NAMES

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "reranker.json"


@dataclass(frozen=True)
class Reranker:
    feature_names: tuple[str, ...]
    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    bias: float
    auto_threshold: float
    suggest_threshold: float
    provenance: dict = field(default_factory=dict)
    # Semantic floor for `auto`: the candidate's cos_doc must reach it too (see train_reranker.py).
    auto_min_cos_doc: float = 0.0

    @classmethod
    def from_dict(cls, data: dict) -> Reranker:
        names = tuple(data["feature_names"])
        n = len(names)
        mean, std, w = (np.asarray(data[k], dtype=np.float64) for k in ("mean", "std", "weights"))
        if not (mean.shape == std.shape == w.shape == (n,)):
            raise ValueError("reranker weights do not match its feature names")
        thr = data["thresholds"]
        return cls(names, mean, np.where(std > 0, std, 1.0), w, float(data["bias"]),
                   float(thr["auto"]), float(thr["suggest"]), dict(data.get("provenance", {})),
                   float(thr.get("auto_min_cos_doc", 0.0)))

    @classmethod
    def load(cls, path: Path | str) -> Reranker:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def load_default(cls) -> Reranker:
        model = cls.load(DEFAULT_PATH)
        if model.feature_names != FEATURE_NAMES:
            raise ValueError("core/data/reranker.json was trained on other features; rerun tools/train_reranker.py")
        return model

    def score(self, features: np.ndarray) -> np.ndarray:
        """Probabilities (n,) that each candidate row (n, n_features) is a correct match."""
        X = np.asarray(features, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        if X.shape[1] != len(self.feature_names):
            raise ValueError(f"expected {len(self.feature_names)} features, got {X.shape[1]}")
        z = ((X - self.mean) / self.std) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))

    def decision(self, probability: float) -> str:
        """"auto", "suggest" or "none" for a top-1 probability."""
        if probability >= self.auto_threshold:
            return "auto"
        if probability >= self.suggest_threshold:
            return "suggest"
        return "none"
