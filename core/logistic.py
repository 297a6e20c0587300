"""The logistic regressions the training scripts fit (re-rankers, same-claim, denial): their weights read from
JSON and applied to standardised rows, and the Platt scaling that calibrates a probability (the match's
confidence, the claim gate), written once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def standardised_weights(data: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, std, weights, bias) from a model file; a constant column's std of 0 reads as 1."""
    mean, std, w = (np.asarray(data[k], dtype=np.float64) for k in ("mean", "std", "weights"))
    return mean, np.where(std > 0, std, 1.0), w, float(data["bias"])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def platt(p: np.ndarray, a: float, b: float) -> np.ndarray:
    """sigmoid(a * logit(p) + b): a probability calibrated by Platt scaling (a and b fitted on held-out ones)."""
    return sigmoid(a * logit(p) + b)


def probability(rows: np.ndarray, mean: np.ndarray, std: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    """The model's probability for each row (or for one row)."""
    return sigmoid(((rows - mean) / std) @ weights + bias)
