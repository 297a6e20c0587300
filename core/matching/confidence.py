"""What the confidence on a card means: the probability that the verdict shown is right.

- An inherited verdict (offline, or a fact-check match on the LLM path's offline fallback) is right when
  the top `auto` match is the same claim. The re-ranker's probability is calibrated over every
  candidate, not over the top matches that pass `auto`, so it is mapped through a Platt scaling
  fitted on CLEF-2020 Task 2 train (training/confidence.py; reliability on dev in
  docs/checkability.md). Before: `min(p, 0.99)`.
- NOT_CHECKABLE offline: 1 - p_claim of the checkability model (core/intake/checkability.py).
- NOT_ENOUGH_EVIDENCE ("Unverified") is no verdict, so there is nothing to be confident in: cards
  print no percentage for it and say why there is no verdict instead (bot/card_words.py).

The same data file holds the floor below which a non-`auto` fact-check is not listed as related: one
for English pairs (the English re-ranker), one for pairs across scripts (a Russian message against an
English fact-check and back: the multilingual re-ranker), measured the same way on our Russian
translations of CLEF tweets (eval/clef2020-ru). A pair in one non-Latin script has no labelled data and
keeps its re-ranker's `suggest` threshold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.logistic import platt
from core.textscript import latin_script

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "confidence.json"
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
    # Pairs across scripts: their own floor (None: the multilingual re-ranker's `suggest` stays the floor).
    # Their inherited verdicts go through the English map: on the Russian dev it measured ECE 0.044 (0.033
    # before the cross-script term features), a map fitted on Russian train tweets instead 0.038 (0.043
    # before): both within 0.05, and the two refits disagree on which is better (training/confidence.py).
    cross_script_floor: float | None = None

    @classmethod
    def load(cls, path: Path | str = DEFAULT_PATH) -> ConfidenceMap:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        cross = data.get("cross_script") or {}
        return cls(float(data["platt_a"]), float(data["platt_b"]), float(data["related_floor"]),
                   dict(data.get("provenance", {})),
                   float(cross["related_floor"]) if "related_floor" in cross else None)

    def floor_for(self, message: str, claim: str) -> float:
        """The floor for listing a non-`auto` fact-check as related, by the pair's scripts (the re-ranker
        that scored it): both Latin, the English floor; across scripts, the cross-script floor (at the
        multilingual `suggest` threshold 70 % of Russian dev messages without a fact-check listed a
        "possibly related" one, 21 % of them the same claim; at the floor 11 % and 46 %); one non-Latin
        script, 0 (the matcher's `suggest` threshold: no labelled pairs to measure a floor on)."""
        message_latin, claim_latin = latin_script(message), latin_script(claim)
        if message_latin and claim_latin:
            return self.related_floor
        if message_latin != claim_latin and self.cross_script_floor is not None:
            return self.cross_script_floor
        return 0.0

    def inherited(self, p: float) -> float:
        """P(the inherited verdict is right) for a top `auto` match of re-ranker probability `p`.
        Never 1: no similarity makes a verdict certain (only an exact link match is reported as such)."""
        return min(float(platt(np.asarray(p), self.platt_a, self.platt_b)), 0.99)


@lru_cache(maxsize=1)
def default_map() -> ConfidenceMap:
    """The shipped calibration (read-only data, loaded once)."""
    return ConfidenceMap.load()
