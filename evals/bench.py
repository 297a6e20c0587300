"""`tipline bench`: what every speed benchmark shares.

Rules all of them keep (docs/benchmarks.md says why):
- everything runs in a fresh temporary data dir, so the user's knowledge base is neither used nor touched;
- a timed path sees a message it has not seen before: the embedder's cache is cleared before each timed
  message (`Embedder.clear_cache`), unless the figure is labelled warm, and then the cold one is beside it;
- a breakdown into components is of means, which add up to the mean total (medians do not add up);
- a figure repeated R times is reported as the median of the R runs and their range (`Spread`).

The benchmarks themselves: bench_ingest.py, bench_match.py, bench_corroborate.py, bench_pipeline.py; the
whole documented set and docs/benchmarks.md: bench_report.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path

import numpy as np

from bot.settings import Settings
from evals.evaluation import read_verified_claims
from schema.models import FactCheck


def temp_settings(settings: Settings, data_dir: Path, **update) -> Settings:
    """`settings` in a throwaway data dir: embedded Qdrant, the user's assembled model files reused, and the
    files derived from the models too (its model cache): written into each throwaway dir, USE's 76 MB of
    arrays and its tokenizer cost ~1.3 s of CPU per app the benches build, untimed but paid every pass."""
    return settings.model_copy(update={"data_dir": Path(data_dir), "qdrant_url": None, "factchecks_collection": "bench",
                                       "embed_model_dir": settings.model_dir, "model_cache_dir": settings.models_dir,
                                       **update})


def factchecks(claims_path: Path, limit: int | None = None) -> list[FactCheck]:
    """The claims file (vclaim_id, vclaim, title) as fact-checks, read at run time and never shipped."""
    claims = read_verified_claims(claims_path)[:limit]
    return [FactCheck(claim=c.claim, title=c.title, url=f"bench:{c.id}", source_id=c.id) for c in claims]


def jittered(v: np.ndarray, rows: np.ndarray, rng: np.random.Generator, sigma: float = 0.01) -> np.ndarray:
    """Rows `rows` of the unit vectors `v`, each plus Gaussian noise (`sigma` per dimension) and
    renormalised: synthetic items shaped like the real ones around them, for benches at sizes no file
    has (100k claims, 1M tracked messages) without embedding texts nobody wrote."""
    w = v[rows] + rng.normal(0, sigma, (len(rows), v.shape[1])).astype(np.float32)
    return (w / np.linalg.norm(w, axis=1, keepdims=True)).astype(np.float32)


def pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else 0.0


def mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if len(values) else 0.0


@dataclass(frozen=True)
class Spread:
    """One figure measured in several runs: the median run and the range, every run kept."""

    median: float
    lo: float
    hi: float
    runs: tuple[float, ...]

    @classmethod
    def of(cls, runs: Sequence[float], digits: int = 1) -> Spread:
        r = tuple(round(float(x), digits) for x in runs)
        if not r:
            return cls(0.0, 0.0, 0.0, ())
        return cls(round(statistics.median(runs), digits), min(r), max(r), r)

    def text(self, fmt: str = ",.1f") -> str:
        """"19.5 (18.9–21.0)", or just the value for a single run."""
        if len(self.runs) <= 1:
            return format(self.median, fmt)
        return f"{format(self.median, fmt)} ({format(self.lo, fmt)}–{format(self.hi, fmt)})"

    def as_dict(self) -> dict:
        return {"median": self.median, "min": self.lo, "max": self.hi, "runs": list(self.runs)}


def plain(value):
    """A report with `Spread`s in it, as JSON-able dicts and lists."""
    if isinstance(value, Spread):
        return value.as_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def format_report(report: dict, indent: str = "") -> str:
    """A report as indented `key: value` lines (a Spread as 'median (min–max)')."""
    lines = []
    for k, v in report.items():
        if isinstance(v, Spread):
            lines.append(f"{indent}{k}: {v.text(',.2f')}")
        elif isinstance(v, dict):
            lines.append(f"{indent}{k}:")
            lines.append(format_report(v, indent + "  "))
        else:
            lines.append(f"{indent}{k}: {v}")
    return "\n".join(lines)
