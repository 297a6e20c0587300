"""`tipline eval checkability`: the offline "is there a claim?" gate over a TSV of messages.

Reads a TSV with a header holding `tweet_id` and `tweet_text` (other columns ignored, so CLEF-2020
Task 1 files are read as they are) and writes `tweet_id<TAB>p_claim<TAB>label` (label 1 = has a
claim), the gate's own decision at its shipped threshold. When the file also has a `claim` column,
precision, recall and F1 of both classes are returned too.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from core.intake.checkability import ClaimGate
from evals.evaluation import EvalDataError

BATCH = 64


class MessagesFileError(EvalDataError):
    """The messages file is not a TSV with tweet_id and tweet_text columns."""


@dataclass(frozen=True)
class ClassScores:
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class CheckabilityOutcome:
    messages: int
    claims: int  # messages labelled 1
    scores: dict[str, ClassScores] | None  # "claim", "no_claim", when gold labels were given

    @property
    def macro_f1(self) -> float | None:
        return (self.scores["claim"].f1 + self.scores["no_claim"].f1) / 2 if self.scores else None


def read_messages(path: Path) -> tuple[list[str], list[str], list[int] | None]:
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        fields = reader.fieldnames or []
        if "tweet_id" not in fields or "tweet_text" not in fields:
            raise MessagesFileError(f"{path}: needs a header with tweet_id and tweet_text columns (got {fields})")
        rows = list(reader)
    gold = [int(r["claim"]) for r in rows] if "claim" in fields and all(
        (r.get("claim") or "").strip() in ("0", "1") for r in rows) else None
    return [r["tweet_id"] for r in rows], [r["tweet_text"] or "" for r in rows], gold


def class_scores(gold: list[int], pred: list[int], cls: int) -> ClassScores:
    tp = sum(1 for g, p in zip(gold, pred) if g == cls and p == cls)
    fp = sum(1 for g, p in zip(gold, pred) if g != cls and p == cls)
    fn = sum(1 for g, p in zip(gold, pred) if g == cls and p != cls)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ClassScores(precision, recall, f1, sum(1 for g in gold if g == cls))


def run_checkability_eval(gate: ClaimGate, messages: Path, out: Path) -> CheckabilityOutcome:
    ids, texts, gold = read_messages(messages)
    decided = []
    for i in range(0, len(texts), BATCH):
        decided += gate.assess_many(texts[i:i + BATCH])
    pred = [1 if d.checkable else 0 for d in decided]
    with out.open("w", encoding="utf-8") as f:
        for tid, d, label in zip(ids, decided, pred):
            f.write(f"{tid}\t{d.p_claim:.4f}\t{label}\n")
    scores = ({"claim": class_scores(gold, pred, 1), "no_claim": class_scores(gold, pred, 0)}
              if gold is not None else None)
    return CheckabilityOutcome(len(ids), sum(pred), scores)
