"""Calibrate the confidence of inherited verdicts and measure the floor for related fact-checks.

An offline verdict is inherited from the top `auto` match; it is right when that match is the same
claim (the rating then applies; negations are held back by core/matching/negation.py). So the confidence a
card shows for an inherited verdict is P(top auto match is the same claim | its re-ranker
probability), which is not the re-ranker's probability itself: that one is calibrated over every
candidate, and the top match of a message whose fact-check is missing is a different population.

Data: CLEF-2020 Task 2 with the shipped English re-ranker, each split as the mixture the thresholds
were picked on (every query against the full corpus with its fact-check, the same without it and its
near-duplicates, and against small random knowledge bases with and without it). The map (Platt
scaling on the logit of p) is fitted on train and its reliability reported on dev, where the
re-ranker was never fitted.

The floor for "related" fact-checks: a non-`auto` match is only listed under Sources when its
probability reaches the floor. Picked on train as the lowest probability at which a listed
non-auto top match is the same claim at least FLOOR_PRECISION of the time; reported on dev.

    .venv/bin/python -m training.confidence --cache /tmp/matchcache    # writes core/data/confidence.json
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

import numpy as np

from core.logistic import logit, platt
from core.matching.confidence import DEFAULT_PATH, BINS, expected_calibration_error, reliability_table
from core.matching.features import FEATURE_NAMES, doc_text
from core.matching.reranker import Reranker
from core.textclean import clean_query
from training.reranker import (
    CachedEmbedder, CachedMultilingual, CachedUse, Corpus, add_data_args, build, build_small, fill_token_columns,
    gloss_vectors, token_states,
    load_split, load_translated,
)

ROOT = Path(__file__).resolve().parents[1]

FLOOR_PRECISION = 0.5


def mixture(corpus: Corpus, emb, multi, use, data: Path, split: str, k: int, seed: int = 7,
            translated: Path | None = None, name: str = "") -> list[dict]:
    """`translated`: a tweets.queries.tsv of our own Russian translations of `split` (same ids): those
    queries instead, scored as production scores a pair across scripts (English-model features zeroed;
    a query with Cyrillic words also searches and scores its English gloss, core/matching/gloss.py)."""
    qids, raws, gold = load_split(data, split)
    if translated is not None:
        qids, raws = load_translated(translated, qids, raws)
    cleans = [clean_query(t) for t in raws]
    tag = f"q_{name or split}_{'ru' if translated is not None else 'en'}"
    qvecs, mvecs, uvecs = emb(cleans, tag), multi(cleans, tag, query=True), use(cleans, tag)
    rng = np.random.default_rng(seed)
    kw = dict(mvecs=mvecs, uvecs=uvecs, multilingual=translated is not None)
    if translated is not None:
        kw["gvecs"] = gloss_vectors(emb, cleans, tag)
    items = (build(corpus, qids, raws, qvecs, cleans, gold, k, **kw)
             + build(corpus, qids, raws, qvecs, cleans, gold, k, no_match=True, dup_cos=0.85, **kw)
             + build_small(corpus, qids, raws, qvecs, cleans, gold, k, rng, with_gold=True, **kw)
             + build_small(corpus, qids, raws, qvecs, cleans, gold, k, rng, with_gold=False, **kw))
    if translated is not None:  # the `cyrillic` model's token alignment columns, as production has them
        docs = [doc_text(c, t) for c, t in zip(corpus.claims, corpus.titles)]
        fill_token_columns(items, dict(zip(qids, token_states(multi.cache, cleans, tag, query=True))),
                           token_states(multi.cache, docs, "doc", query=False))
    return items


def outcomes(items: list[dict], model: Reranker) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per query as production decides it: (p of the top match, is it auto, is it the same claim,
    has the query a fact-check in this knowledge base)."""
    col = FEATURE_NAMES.index(model.auto_floor_feature)
    p1, auto, ok, has = [], [], [], []
    for it in items:
        p = model.score(it["X"])
        tier_auto = (p >= model.auto_threshold) & (it["X"][:, col] >= model.auto_min_cos)
        order = np.lexsort((-p, ~tier_auto))  # auto first, then by probability (core.matching.matcher._best_first)
        j = int(order[0])
        p1.append(float(p[j]))
        auto.append(bool(tier_auto[j]))
        ok.append(bool(it["y"][j]))
        has.append(bool(it["y"].any()))
    return np.array(p1), np.array(auto), np.array(ok), np.array(has)


def fit_platt(p: np.ndarray, y: np.ndarray, iters: int = 100) -> tuple[float, float]:
    """conf = sigmoid(a * logit(p) + b), by Newton's method (tiny L2 for stability)."""
    X = np.c_[logit(p), np.ones(len(p))]
    w = np.array([1.0, 0.0])
    for _ in range(iters):
        q = 1 / (1 + np.exp(-X @ w))
        g = X.T @ (q - y) + 1e-3 * w
        H = (X * (q * (1 - q))[:, None]).T @ X + 1e-3 * np.eye(2)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return float(w[0]), float(w[1])


def related_floor(p1: np.ndarray, auto: np.ndarray, ok: np.ndarray, precision: float) -> float:
    """Lowest p such that non-auto top matches at or above it are the same claim >= `precision` of the time."""
    sel = ~auto
    ps, oks = p1[sel], ok[sel]
    order = np.argsort(-ps)
    prec = np.cumsum(oks[order]) / np.arange(1, len(order) + 1)
    good = [i for i in range(19, len(order)) if prec[i] >= precision]
    return float(ps[order][max(good)]) if good else 1.0


def floor_report(p1, auto, ok, has, floor) -> dict:
    shown = ~auto & (p1 >= floor)
    return {"floor": round(floor, 4),
            "non_auto_tops": int((~auto).sum()),
            "shown": int(shown.sum()),
            "shown_same_claim": round(float(ok[shown].mean()), 4) if shown.any() else None,
            "no_fact_check_queries_showing_a_source": round(float(shown[~has].mean()), 4) if (~has).any() else None,
            "same_claim_tops_kept": round(float((shown & ok).sum() / max(1, (~auto & ok).sum())), 4)}


def calibration_report(split: dict, a: float, b: float) -> dict:
    """ECE and reliability of inherited verdicts per split: before (min(p, 0.99)) and through the map."""
    report: dict = {}
    for name, (p1, auto, ok, has) in split.items():
        raw = np.minimum(p1[auto], 0.99)  # what cards showed before
        cal = np.minimum(platt(p1[auto], a, b), 0.99)  # core.matching.confidence caps at 0.99 too
        y = ok[auto].astype(float)
        report[name] = {
            "inherited": int(auto.sum()),
            "precision_at_auto": round(float(y.mean()), 4) if y.size else None,
            "ece_raw": round(expected_calibration_error(raw, y), 4),
            "ece_calibrated": round(expected_calibration_error(cal, y), 4),
            "reliability_raw": reliability_table(raw, y),
            "reliability_calibrated": reliability_table(cal, y),
        }
        print(f"{name}: {auto.sum()} inherit, precision {report[name]['precision_at_auto']}, "
              f"ECE raw {report[name]['ece_raw']:.4f} -> calibrated {report[name]['ece_calibrated']:.4f}")
        for row in report[name]["reliability_calibrated"]:
            print("   ", row)
    return report


def fit_map_and_floor(split: dict, fit_on: str, suggest: float) -> tuple[float, float, float, dict]:
    """Platt map and related floor fitted on the `fit_on` split's outcomes, with the reliability and the
    floor's effect (and the `suggest` threshold's, for comparison) reported on every split."""
    p_tr, a_tr, ok_tr, _ = split[fit_on]
    a, b = fit_platt(p_tr[a_tr], ok_tr[a_tr].astype(float))
    report: dict = {"platt": {"a": round(a, 4), "b": round(b, 4)}, **calibration_report(split, a, b)}
    floor = related_floor(p_tr, a_tr, ok_tr, FLOOR_PRECISION)
    for name, (p1, auto, ok, has) in split.items():
        report[f"related_{name}"] = floor_report(p1, auto, ok, has, floor)
        report[f"related_{name}_at_suggest"] = floor_report(p1, auto, ok, has, suggest)
        print(f"related floor on {name}:", report[f"related_{name}"], " at suggest:",
              report[f"related_{name}_at_suggest"])
    return a, b, floor, report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_args(ap)
    ap.add_argument("--k", type=int, default=40)
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--pairs", default="english,cross_script",
                    help="which maps to fit and report: english (English messages, English re-ranker), "
                         "cross_script (Russian messages against English fact-checks, Cyrillic re-ranker)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    wanted = set(args.pairs.split(","))

    from core.encoders.model_files import prepare_default_model
    emb = CachedEmbedder(prepare_default_model(args.model_dir), args.cache)
    multi = CachedMultilingual(args.cache)
    use = CachedUse(args.cache)
    corpus = Corpus(args.data, emb, multi, use)
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    out = dict(previous)
    out["bins"] = list(BINS)
    provenance = dict(previous.get("provenance", {}))

    if "english" in wanted:
        model = Reranker.load_default()
        split = {name: outcomes(mixture(corpus, emb, multi, use, args.data, name, args.k), model)
                 for name in ("train", "dev")}
        a, b, floor, report = fit_map_and_floor(split, "train", model.suggest_threshold)
        out.update({"platt_a": a, "platt_b": b, "related_floor": floor})
        provenance.update({"reranker": "core/data/reranker.json (English)",
                           "data": "CLEF-2020 Task 2 train (fit) and dev (report), each as the mixture with and "
                                   "without the fact-check, full and small knowledge bases",
                           "floor_precision": FLOOR_PRECISION, **report})

    if "cross_script" in wanted:
        # Russian messages against the English fact-checks, scored by the Cyrillic re-ranker as
        # production scores a pair across scripts from a message with Cyrillic words. Fitted on
        # train-rest, the 400 translated train tweets the re-ranker never saw (eval/clef2020-ru/README.md),
        # reported on the Russian dev.
        model = Reranker.load_cyrillic()
        split = {"train_rest_ru": outcomes(mixture(corpus, emb, multi, use, args.data, "train", args.k,
                                                   translated=args.translations / "train-rest" / "tweets.queries.tsv",
                                                   name="train-rest"), model),
                 "dev_ru": outcomes(mixture(corpus, emb, multi, use, args.data, "dev", args.k,
                                            translated=args.translations / "dev" / "tweets.queries.tsv"), model)}
        a, b, floor, report = fit_map_and_floor(split, "train_rest_ru", model.suggest_threshold)
        if "platt_a" in out:
            report.update(calibration_report({"dev_ru_with_the_english_map": split["dev_ru"]},
                                             out["platt_a"], out["platt_b"]))
        out["cross_script"] = {"platt_a": a, "platt_b": b, "related_floor": floor}
        provenance["cross_script"] = {
            "reranker": "core/data/reranker_cyrillic.json",
            "data": "eval/clef2020-ru: train-rest (fit; never seen by the re-ranker) and dev (report), Russian "
                    "translations of CLEF-2020 Task 2 tweets against the English claims, as the same mixture",
            **report}

    provenance.update({"date": date.today().isoformat(), "script": "training/confidence.py"})
    out["provenance"] = provenance
    if not args.dry_run:
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
