"""The logistic regressions the training scripts fit (re-rankers, same-claim, denial, claim gate): their weights
read from JSON and applied to standardised rows, written once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def standardised_weights(data: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, std, weights, bias) from a model file; a constant column's std of 0 reads as 1."""
    mean, std, w = (np.asarray(data[k], dtype=np.float64) for k in ("mean", "std", "weights"))
    return mean, np.where(std > 0, std, 1.0), w, float(data["bias"])


def probability(rows: np.ndarray, mean: np.ndarray, std: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    """The model's probability for each row (or for one row)."""
    z = ((rows - mean) / std) @ weights + bias
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
