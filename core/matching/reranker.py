"""Learned re-ranker for fact-check candidates: features (core.matching.features) -> probability of a match.

Pointwise logistic regressions trained by training/reranker.py on the CLEF-2020 CheckThat!
Task 2 train split, three of them (chosen per pair in core/matching/matcher.py):
- `english` (reranker.json): an English message against an English fact-check, every feature;
- `multilingual` (reranker_multilingual.json): a message and a fact-check in different scripts
  (Russian against English and back), trained on our own Russian, Ukrainian and mixed translations
  of the train tweets, with the English model's features zeroed;
- `same_script` (reranker_same_script.json): both in one non-Latin script (Russian against Russian),
  trained on English pairs with the English model's features zeroed (no labelled Russian pairs exist). The weights file (core/data/reranker.json) carries the feature names it was
trained on, the standardisation, the weights, the two decision thresholds on the probability and the
training provenance (data split, date, metrics).

- `auto`: a top-1 candidate at or above it is the same claim with precision >= 0.9 (cross-validated
  on train): the bot may say "already fact-checked" outright.
- `suggest`: precision >= 0.5: show it as "possibly related".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from core.logistic import probability, standardised_weights
from core.matching.features import FEATURE_NAMES

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "reranker.json"
MULTILINGUAL_PATH = Path(__file__).resolve().parents[1] / "data" / "reranker_multilingual.json"
SAME_SCRIPT_PATH = Path(__file__).resolve().parents[1] / "data" / "reranker_same_script.json"
CYRILLIC_PATH = Path(__file__).resolve().parents[1] / "data" / "reranker_cyrillic.json"


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
    # Semantic floor for `auto`: the candidate's `auto_floor_feature` (a similarity) must reach
    # `auto_min_cos` too (see train_reranker.py).
    auto_min_cos: float = 0.0
    auto_floor_feature: str = "cos_doc"

    @classmethod
    def from_dict(cls, data: dict) -> Reranker:
        names = tuple(data["feature_names"])
        n = len(names)
        mean, std, w, bias = standardised_weights(data)
        if not (mean.shape == std.shape == w.shape == (n,)):
            raise ValueError("reranker weights do not match its feature names")
        thr = data["thresholds"]
        return cls(names, mean, std, w, bias,
                   float(thr["auto"]), float(thr["suggest"]), dict(data.get("provenance", {})),
                   float(thr.get("auto_min_cos", thr.get("auto_min_cos_doc", 0.0))),
                   str(thr.get("auto_floor_feature", "cos_doc")))

    @classmethod
    def load(cls, path: Path | str) -> Reranker:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def load_default(cls, path: Path = DEFAULT_PATH) -> Reranker:
        """A shipped model. It may read a subset of FEATURE_NAMES, in their order (the gloss columns
        exist only for the Cyrillic model): `score` then picks its columns out of the full matrix."""
        model = cls.load(path)
        if tuple(n for n in FEATURE_NAMES if n in model.feature_names) != model.feature_names:
            raise ValueError(f"{path.name} was trained on other features; rerun python -m training.reranker")
        return model

    @classmethod
    def load_multilingual(cls) -> Reranker:
        return cls.load_default(MULTILINGUAL_PATH)

    @classmethod
    def load_same_script(cls) -> Reranker:
        return cls.load_default(SAME_SCRIPT_PATH)

    @classmethod
    def load_cyrillic(cls) -> Reranker:
        return cls.load_default(CYRILLIC_PATH)

    @cached_property
    def _columns(self) -> list[int]:
        return [FEATURE_NAMES.index(n) for n in self.feature_names]

    def score(self, features: np.ndarray) -> np.ndarray:
        """Probabilities (n,) that each candidate row (n, n_features) is a correct match."""
        X = np.asarray(features, dtype=np.float64)
        if X.ndim == 1:
            X = X.reshape(1, -1)
        if X.shape[1] == len(FEATURE_NAMES) and len(self.feature_names) != len(FEATURE_NAMES):
            X = X[:, self._columns]
        if X.shape[1] != len(self.feature_names):
            raise ValueError(f"expected {len(self.feature_names)} features, got {X.shape[1]}")
        return probability(X, self.mean, self.std, self.weights, self.bias)

    def decision(self, probability: float) -> str:
        """"auto", "suggest" or "none" for a top-1 probability."""
        if probability >= self.auto_threshold:
            return "auto"
        if probability >= self.suggest_threshold:
            return "suggest"
        return "none"
