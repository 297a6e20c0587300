"""What the confidence on a card means: the probability that the verdict shown is right.

- An inherited verdict (offline, or a fact-check match on the LLM path's offline fallback) is right when
  the top `auto` match is the same claim. The re-ranker's probability is calibrated over every
  candidate, not over the top matches that pass `auto`, so it is mapped through a Platt scaling
  fitted on CLEF-2020 Task 2 train (tools/calibrate_confidence.py; reliability on dev in
  docs/checkability.md). Before: `min(p, 0.99)`.
- NOT_CHECKABLE offline: 1 - p_claim of the checkability model (core/checkability.py).
- NOT_ENOUGH_EVIDENCE ("Unverified") is no verdict, so there is nothing to be confident in: cards
  print no percentage for it and say why there is no verdict instead (core/card_words.py).

The same data file holds the floor below which a non-`auto` fact-check is not listed as related.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.matchfeatures import latin_script

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "confidence.json"
BINS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def reliability_table(p: np.ndarray, y: np.ndarray, bins: tuple[float, ...] = BINS) -> list[dict]:
    """Per probability bin: how many, the mean stated probability, how often it was right."""
    p, y = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    rows = []
    for i, (lo, hi) in enumerate(zip(bins[:-1], bins[1:])):
        sel = (p >= lo) & ((p < hi) if i < len(bins) - 2 else (p <= hi))
        if sel.any():
            rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": int(sel.sum()), "mean_p": round(float(p[sel].mean()), 4),
                         "observed": round(float(y[sel].mean()), 4)})
    return rows


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: tuple[float, ...] = BINS) -> float:
    """Sum over bins of (share of predictions in the bin) x |mean probability - observed frequency|."""
    rows = reliability_table(p, y, bins)
    n = sum(r["n"] for r in rows)
    return sum(r["n"] * abs(r["mean_p"] - r["observed"]) for r in rows) / n if n else 0.0


@dataclass(frozen=True)
class ConfidenceMap:
    platt_a: float = 1.0
    platt_b: float = 0.0
    related_floor: float = 0.0
    provenance: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str = DEFAULT_PATH) -> ConfidenceMap:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(float(data["platt_a"]), float(data["platt_b"]), float(data["related_floor"]),
                   dict(data.get("provenance", {})))

    def floor_for(self, message: str, claim: str) -> float:
        """The floor for listing a non-`auto` fact-check as related. Measured for the English re-ranker
        (both texts in Latin script); a pair across scripts or in another script is scored by its own
        re-ranker, whose `suggest` threshold (applied by the matcher) stays its floor: the English one
        hid the English 5G fact-check of "Вышки 5G распространяют коронавирус" (cross-script p below it)."""
        return self.related_floor if latin_script(message) and latin_script(claim) else 0.0

    def inherited(self, p: float) -> float:
        """P(the inherited verdict is right) for a top `auto` match of re-ranker probability `p`.
        Never 1: no similarity makes a verdict certain (only an exact link match is reported as such)."""
        q = min(max(p, 1e-6), 1 - 1e-6)
        z = self.platt_a * math.log(q / (1 - q)) + self.platt_b
        return min(1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0))), 0.99)


@lru_cache(maxsize=1)
def default_map() -> ConfidenceMap:
    """The shipped calibration (read-only data, loaded once)."""
    return ConfidenceMap.load()
