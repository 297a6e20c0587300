#!/usr/bin/env python3
"""Train the same-claim decision (core/data/same_claim.json) on chat-like messages we wrote (eval/realistic).

For every training row the production matcher (the shipped re-rankers, the wrapper removed as in a check)
scores the message against its knowledge base: the seed fact-checks for `kb == "seed"` rows, an EUvsDisinfo
data dir (`--euvs-data-dir`, `tipline ingest` of ../shared/eval/euvsdisinfo/cases.tsv) for `kb ==
"euvsdisinfo"` rows. The top candidates' decision features (core/matching/same_claim.py) are labelled 1 when the
candidate is the row's target and the row states, asks about, or disputes that claim (a denial is the same
claim; core/matching/negation.py decides its polarity), 0 otherwise (near misses and messages without a claim are all 0).
The target's twins (eval/realistic/twins.tsv: another seed fact-check of the same claim) are left out of the
fit and count as right answers when the thresholds are chosen.

Rows are split by fact-check as `tipline eval realistic` splits them (one in three dev): only train rows are
read here. The thresholds come from 5-fold cross-validated probabilities (folds by fact-check): `auto` the
lowest with precision >= 0.95 of inherited verdicts (each near miss kept out by a higher target costs
restatements: docs/decisions/2026-11-28-chat-matching.md), `unclaimed` the same among the messages whose top
candidate's `p_claim` is under the claim gate's threshold, `related` the lowest where the top
candidate is the target, its twin or the near miss's neighbour for >= 0.9 of messages, both on the seed rows (EUvsDisinfo's
near-duplicate narratives make its "wrong" top candidates often right).

usage:
  python -m training.same_claim [--euvs-data-dir /tmp/euvs-data]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from bot.app import build_app
from bot.settings import Settings
from core.intake.checkability import default_checkability
from core.intake.claim_text import claim_text
from core.matching.same_claim import FEATURES, TOP_K, VECTOR_PARTS
from evals.realistic_eval import ASSERTING, Row, euvs_rows as euvs_rows_of, read_rows

ROOT = Path(__file__).resolve().parents[1]

SAME = (*ASSERTING, "deny")
AUTO_PRECISION, RELATED_PRECISION = 0.95, 0.9


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50,
                 l2_vector: float | None = None) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method on standardised X (bias unregularised); the
    columns past FEATURES (the e5 vector parts) have their own `l2_vector`."""
    n, d = X.shape
    A = np.hstack([X, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    if l2_vector is not None:
        reg[len(FEATURES):-1] = l2_vector
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(A @ w, -50, 50)))
        grad = A.T @ (p - y) + reg * w
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(reg) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


async def rows_of(app, rows: list[Row], url_of) -> list[dict]:
    """Per message: its top candidates' decision rows, which is the target, and the row."""
    matcher, out = app.matcher, []
    matcher.same_claim = None  # the features as the re-rankers alone give them
    for n, row in enumerate(rows, start=1):
        for t, c in matcher.parts_of(claim_text(row.text)):
            scored = await matcher.scored(t, c)
            if scored is None:
                continue
            top = scored.order()[:TOP_K]
            urls = [scored.hits[i].payload.get("url", "") for i in top]
            target = url_of(row)
            out.append({"row": row, "X": scored.decision_rows(top),
                        "is_target": np.array([bool(target) and u == target for u in urls]),
                        "is_twin": np.array([u in row.twins for u in urls])})
        if n % 100 == 0:
            print(f"  {n}/{len(rows)}", file=sys.stderr, flush=True)
    return out


def labels(item: dict) -> np.ndarray:
    return item["is_target"] & (item["row"].kind in SAME)


def answered_right(item: dict) -> np.ndarray:
    """Which candidates would be a right answer: the target, or its twin (another fact-check of the same claim)."""
    return (item["is_target"] | item["is_twin"]) & (item["row"].kind in SAME)


def fitted(item: dict) -> np.ndarray:
    """The candidates a model is fitted on: not the target's twins, which are neither the target nor wrong, and
    taught as either would blur the line between a restatement and a near miss."""
    return ~item["is_twin"]


def group(item: dict) -> int:
    key = item["row"].target or item["row"].text
    return int(hashlib.sha1(key.encode()).hexdigest(), 16) % 5


def train(items: list[dict], l2: float, l2_vector: float | None) -> dict:
    X = np.vstack([it["X"][fitted(it)] for it in items])
    if l2_vector is None:
        X = X[:, :len(FEATURES)]
    y = np.concatenate([labels(it)[fitted(it)] for it in items]).astype(float)
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    w, b = fit_logistic((X - mean) / std, y, l2, l2_vector=l2_vector)
    return {"mean": mean, "std": std, "w": w, "b": b}


def predict(model: dict, X: np.ndarray) -> np.ndarray:
    X = X[:, :len(model["w"])]
    return 1 / (1 + np.exp(-np.clip(((X - model["mean"]) / model["std"]) @ model["w"] + model["b"], -50, 50)))


def thresholds(items: list[dict], probs: list[np.ndarray], quiet: bool = False,
               auto_precision: float = AUTO_PRECISION) -> dict:
    """From top-1 per message (a message's answer is its best candidate)."""
    best = np.array([p.max() for p in probs])
    arg = [int(p.argmax()) for p in probs]
    # A denial's top candidate being its claim is a right same-claim decision: core/matching/negation.py then
    # withholds the rating, so denials count as right here and their polarity is measured apart.
    right = np.array([bool(answered_right(it)[a]) for it, a in zip(items, arg)])
    from collections import Counter
    wrong = Counter((it["row"].source.split(".")[0], it["row"].kind) for it, ok, b in zip(items, right, best)
                    if b >= 0.8 and not ok)
    if not quiet:
        print("  wrong at p >= 0.8:", dict(wrong), file=sys.stderr)
        for t in (0.3, 0.5, 0.7, 0.8, 0.9, 0.95):
            sel = best >= t
            print(f"  top-1 p >= {t}: {sel.sum()} messages, precision {right[sel].mean():.3f}", file=sys.stderr)
    related = np.array([bool(it["is_target"][a] or it["is_twin"][a]) for it, a in zip(items, arg)])

    def lowest(ok: np.ndarray, precision: float, among: np.ndarray | None = None) -> float:
        for t in np.unique(np.round(best, 4)):
            sel = (best >= t) & (True if among is None else among)
            if sel.sum() >= 10 and ok[sel].mean() >= precision:
                return float(t)
        return 1.0

    auto = lowest(right, auto_precision)
    rel = min(lowest(related, RELATED_PRECISION), auto)
    # The same target among the messages the claim gate turns away (their top candidate's p_claim): a chat
    # line that only names a fact-check's subjects is checked only when its match is surer than `auto`.
    gate = default_checkability().threshold
    turned_away = np.array([it["X"][a, FEATURES.index("p_claim")] < gate for it, a in zip(items, arg)])
    unclaimed = max(auto, lowest(right, auto_precision, turned_away))
    asserting = np.array([it["row"].kind in ASSERTING for it in items])

    def precision(ok: np.ndarray, sel: np.ndarray) -> float:
        return round(float(ok[sel].mean()), 4) if sel.any() else 0

    away_auto, away_sure = turned_away & (best >= auto), turned_away & (best >= unclaimed)
    return {"auto": auto, "related": rel, "unclaimed": unclaimed,
            "cv": {"inherited_precision": precision(right, best >= auto),
                   "coverage_of_restatements": round(float((right & (best >= auto))[asserting].mean()), 4),
                   "related_precision": precision(related, best >= rel),
                   "turned_away": {"messages": int(turned_away.sum()), "at_auto": int(away_auto.sum()),
                                   "at_unclaimed": int(away_sure.sum()),
                                   "precision_at_auto": precision(right, away_auto),
                                   "precision_at_unclaimed": precision(right, away_sure)},
                   "messages": len(items)}}


async def candidate_rows(paths: list[Path], args: argparse.Namespace) -> list[dict]:
    """Every train message's candidate rows: seed rows over the seed, EUvsDisinfo rows over its data dir."""
    items: list[dict] = []
    seed_rows = [r for r in read_rows(paths, "seed") if r.split == "train"]
    async with build_app(Settings(offline=True, data_dir=args.seed_data_dir), one_shot=True) as app:
        print(f"seed: {len(seed_rows)} train messages", file=sys.stderr)
        items += await rows_of(app, seed_rows, lambda r: r.target)
    if args.euvs_data_dir:
        euvs_rows = [r for r in euvs_rows_of(read_rows(paths, "euvsdisinfo"), args.euvs_cases)[0] if r.split == "train"]
        async with build_app(Settings(offline=True, data_dir=args.euvs_data_dir, seed_on_start=False),
                             one_shot=True) as app:
            print(f"EUvsDisinfo: {len(euvs_rows)} train messages", file=sys.stderr)
            items += await rows_of(app, euvs_rows, lambda r: r.target)
    return items


async def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT / "eval" / "realistic")
    ap.add_argument("--seed-data-dir", type=Path, default=ROOT / "data")
    ap.add_argument("--euvs-data-dir", type=Path, help="a data dir holding the EUvsDisinfo cases (see above)")
    ap.add_argument("--euvs-cases", type=Path, default=ROOT.parent / "shared" / "eval" / "euvsdisinfo" / "cases.tsv")
    ap.add_argument("--auto-precision", type=float, default=AUTO_PRECISION,
                    help="precision of inherited verdicts the `auto` threshold is chosen for (cross-validated)")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--l2-vector", type=float, nargs="*", default=[300.0, 1000.0, 3000.0],
                    help="L2 of the e5 vector parts to choose from by cross-validation (none: scalars only)")
    ap.add_argument("--out", type=Path, default=ROOT / "core" / "data" / "same_claim.json")
    ap.add_argument("--features-cache", type=Path, help="keep the candidates' rows in this pickle and read them "
                    "from it next time (for trying training choices; delete it when the matcher changes)")
    ap.add_argument("--drop", nargs="*", default=[], choices=FEATURES, metavar="FEATURE",
                    help="an ablation: train with these inputs held at zero (what the decision loses without them)")
    args = ap.parse_args(argv)
    paths = sorted(args.data.glob("*.jsonl"))
    if args.features_cache and args.features_cache.exists():
        items: list[dict] = pickle.loads(args.features_cache.read_bytes())
    else:
        items = await candidate_rows(paths, args)
        if args.features_cache:
            args.features_cache.write_bytes(pickle.dumps(items))
    for it in items:
        it["X"][:, [FEATURES.index(name) for name in args.drop]] = 0.0
    folds = [group(it) for it in items]
    # Thresholds on the seed rows only: EUvsDisinfo holds many near-duplicate narratives, so a restatement's
    # top candidate is often a sibling of its target, counted wrong though a person would call it right.
    seed = [i for i, it in enumerate(items) if not it["row"].source.startswith("euvs")]

    def cross_validated(l2_vector: float | None) -> list[np.ndarray]:
        probs: list[np.ndarray] = [np.zeros(0)] * len(items)
        for f in range(5):
            model = train([it for it, g in zip(items, folds) if g != f], args.l2, l2_vector)
            for i, (it, g) in enumerate(zip(items, folds)):
                if g == f:
                    probs[i] = predict(model, it["X"])
        return probs

    # The vector parts' L2 (or none of them) by the coverage of restatements at the inherited-precision target.
    tried = {}
    for l2v in [None, *args.l2_vector]:
        probs = cross_validated(l2v)
        tried[l2v] = (thresholds([items[i] for i in seed], [probs[i] for i in seed], quiet=True,
                                 auto_precision=args.auto_precision)["cv"], probs)
        print(f"  L2 of the vector parts {l2v}: {tried[l2v][0]}", file=sys.stderr)
    l2_vector = max(tried, key=lambda k: (tried[k][0]["coverage_of_restatements"], k or 0))
    cv_probs = tried[l2_vector][1]
    same = [it for it in items if it["row"].kind in SAME]
    print(f"  re-rankers: target first for {np.mean([bool(it['is_target'][:1].any()) for it in same]):.3f} of same-claim "
          f"parts, in the top {TOP_K} for {np.mean([bool(it['is_target'].any()) for it in same]):.3f}; decision "
          f"first for {np.mean([bool(it['is_target'][int(cv_probs[i].argmax())]) for i, it in enumerate(items) if it['row'].kind in SAME]):.3f}",
          file=sys.stderr)
    thr = thresholds([items[i] for i in seed], [cv_probs[i] for i in seed], auto_precision=args.auto_precision)
    model = train(items, args.l2, l2_vector)
    out = {"model": "logistic regression over the re-rankers' top candidates", "features": list(FEATURES),
           "vector_parts": list(VECTOR_PARTS) if l2_vector is not None else [],
           "mean": model["mean"].round(6).tolist(), "std": model["std"].round(6).tolist(),
           "weights": model["w"].round(6).tolist(), "bias": round(model["b"], 6),
           "thresholds": {"auto": thr["auto"], "related": thr["related"], "unclaimed": thr["unclaimed"]},
           "provenance": {"data": "eval/realistic train split (by fact-check): " + ", ".join(p.name for p in paths),
                          "cross_validated": thr["cv"], "l2": args.l2, "l2_vector": l2_vector,
                          "l2_vector_tried": {str(k): v[0] for k, v in tried.items()}, "date": dt.date.today().isoformat(),
                          "command": "python -m training.same_claim " + " ".join(argv or sys.argv[1:])}}
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out["thresholds"]), json.dumps(thr["cv"]))
    for name, w in sorted(zip(FEATURES, model["w"][:len(FEATURES)]), key=lambda x: -abs(x[1])):
        print(f"  {name:20} {w:+.3f}")


if __name__ == "__main__":
    asyncio.run(main())
