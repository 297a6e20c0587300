"""Evaluation data readers and retrieval metrics (CLEF CheckThat! Task 2 definitions)."""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

csv.field_size_limit(10**9)


class EvalDataError(ValueError):
    pass


def read_tsv(path: Path, min_columns: int) -> list[list[str]]:
    """Rows after the header. The files quote some fields with "" escapes (spanning lines), so the csv
    module's default quoting is right; QUOTE_NONE breaks those rows."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise EvalDataError(f"cannot read {path}: {exc}") from exc
    if not rows:
        raise EvalDataError(f"{path} is empty")
    body = rows[1:]
    bad = [i + 2 for i, r in enumerate(body) if len(r) < min_columns]
    if bad:
        raise EvalDataError(f"{path}: line(s) {', '.join(map(str, bad[:5]))} have fewer than {min_columns} columns")
    return body


@dataclass(frozen=True)
class VerifiedClaim:
    id: str
    claim: str
    title: str


def read_verified_claims(path: Path) -> list[VerifiedClaim]:
    return [VerifiedClaim(r[0], r[1], r[2] if len(r) > 2 else "") for r in read_tsv(path, 2)]


def read_queries(path: Path) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in read_tsv(path, 2)]


def read_qrels(path: Path) -> dict[str, set[str]]:
    gold: dict[str, set[str]] = defaultdict(set)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalDataError(f"cannot read {path}: {exc}") from exc
    for line in lines:
        p = line.split()
        if len(p) >= 4 and p[3] != "0":
            gold[p[0]].add(p[2])
    return dict(gold)


@dataclass(frozen=True)
class RetrievalScores:
    queries: int
    map5: float
    mrr: float
    recall5: float


def score_run(ranked: Mapping[str, Sequence[str]], gold: Mapping[str, set[str]]) -> RetrievalScores:
    """MAP@5 exactly as shared/eval/map5.py (AP over the top 5 / min(|gold|, 5)), MRR over the full
    ranking, recall@5. Queries with gold but no ranking count as 0."""
    aps, rrs, recalls = [], [], []
    for q, relevant in gold.items():
        ranking = list(ranked.get(q, []))
        hits, s = 0, 0.0
        for k, v in enumerate(ranking[:5]):
            if v in relevant:
                hits += 1
                s += hits / (k + 1)
        aps.append(s / min(len(relevant), 5))
        rrs.append(next((1.0 / (k + 1) for k, v in enumerate(ranking) if v in relevant), 0.0))
        recalls.append(len(set(ranking[:5]) & relevant) / len(relevant))
    n = len(aps) or 1
    return RetrievalScores(len(aps), sum(aps) / n, sum(rrs) / n, sum(recalls) / n)


def write_run(path: Path, rows: Iterable[tuple[str, Sequence[tuple[str, float]]]], tag: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for qid, ranking in rows:
            for rank, (doc, score) in enumerate(ranking, start=1):
                f.write(f"{qid}\tQ0\t{doc}\t{rank}\t{score:.6f}\t{tag}\n")
