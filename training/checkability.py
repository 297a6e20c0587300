"""Train the offline "is there a claim?" gate (core/intake/checkability.py) and write core/data/checkability.json.

Data:
- CLEF-2020 CheckThat! Task 1 train (English COVID tweets, `claim` label): ../shared/eval/clef2020-task1/train.tsv.
  Its lines are read here and never copied into the product; only the fitted weights are shipped.
- Our own chat messages, English / Russian / Ukrainian / mixed (training/data/checkability_chat_train.tsv;
  checkability_chat_more.tsv: small talk, promos and opinions that name the news, beside short hearsay claims;
  checkability_chat_names.tsv: jokes, tastes, thanks and requests for advice naming the subjects of
  disinformation, beside short claims on the same subjects).
- The train split of our realistic forwards (eval/realistic, split by fact-check as `tipline eval realistic`
  splits them): a message with no claim is 0, every other kind (restatements, questions, conditions, denials,
  near misses) is 1, each reduced to its claim as the engine reduces it (core/intake/claim_text.py).
Reported, never used for a decision: CLEF Task 1 dev and our own EN/RU chat dev set
(tests/data/checkability_chat_dev.tsv).

The model is the mean of a few networks of one relu hidden layer (each from its own seeded start, by L-BFGS),
Platt-scaled on its out-of-fold probabilities. Every choice (features, the networks' L2, the threshold) is
taken on 5-fold cross-validation over the train messages, scored as the mean of the CLEF macro-F1 and the chat
macro-F1 (the acceptance has both kinds of message).

    .venv/bin/python -m training.checkability                # fit, report, write the weights
    .venv/bin/python -m training.checkability --dry-run      # report only

The e5 query vectors are cached as .npy under --cache (first run: ~2 min of e5 on 2 cores).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, cast

import numpy as np

from core.intake.checkability import CUE_NAMES, DEFAULT_PATH, Network, cues
from core.logistic import platt
from training.confidence import fit_platt
from core.textclean import clean_query

ROOT = Path(__file__).resolve().parent.parent

CLEF = ROOT.parent / "shared" / "eval" / "clef2020-task1"
CHAT_TRAIN = (ROOT / "training" / "data" / "checkability_chat_train.tsv",
              ROOT / "training" / "data" / "checkability_chat_more.tsv",
              ROOT / "training" / "data" / "checkability_chat_names.tsv")
CHAT_DEV = ROOT / "tests" / "data" / "checkability_chat_dev.tsv"


@dataclass
class Split:
    name: str
    ids: list[str]
    texts: list[str]  # cleaned, as the gate sees them
    y: np.ndarray
    vecs: np.ndarray | None = None
    cues: np.ndarray | None = None

    def X(self, use_e5: bool = True, cue_mask: np.ndarray | None = None) -> np.ndarray:
        assert self.vecs is not None and self.cues is not None, "embed() the split first"
        parts = []
        if use_e5:
            parts.append(self.vecs)
        c = self.cues if cue_mask is None else self.cues * cue_mask
        parts.append(c)
        return np.hstack(parts)


def read_messages(path: Path, name: str) -> Split:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return Split(name, [r["tweet_id"] for r in rows], [clean_query(r["tweet_text"]) for r in rows],
                 np.array([int(r["claim"]) for r in rows], dtype=np.float64))


def concat(a: Split, b: Split) -> Split:
    return Split(f"{a.name}+{b.name}", a.ids + b.ids, a.texts + b.texts, np.r_[a.y, b.y])


# Files of the realistic corpus written for the matcher alone, left out of the gate: the near misses and
# restatements tilt it toward "claim", the chat lines naming fact-checks' subjects toward "no claim"; each cost
# it on CLEF Task 1 and on chat (docs/decisions/2026-11-28-chat-matching.md, fifth and sixth rounds).
MATCHER_ONLY = ("more3_seed.jsonl", "noclaim_names_seed.jsonl")


def read_realistic(data: Path, name: str) -> Split:
    """The realistic corpus's train rows as gate examples (cleaned as the gate sees them)."""
    from core.intake.claim_text import claim_text
    from evals.realistic_eval import read_rows

    paths = [p for p in sorted(data.glob("*.jsonl")) if p.name not in MATCHER_ONLY]
    rows = [r for kb in ("seed", "euvsdisinfo") for r in read_rows(paths, kb) if r.split == "train"]
    return Split(name, [r.source for r in rows], [clean_query(claim_text(r.text)) for r in rows],
                 np.array([r.kind != "no_claim" for r in rows], dtype=np.float64))


def embed(splits: list[Split], cache: Path) -> None:
    from core.encoders.multilingual import E5Encoder

    cache.mkdir(parents=True, exist_ok=True)
    encoder = None
    for s in splits:
        key = hashlib.sha1("\x00".join(s.texts).encode()).hexdigest()[:16]
        path = cache / f"check_{s.name}_{key}.npy"
        if path.exists():
            s.vecs = np.load(path)
        else:
            encoder = encoder or E5Encoder()
            s.vecs = encoder.queries_sync(s.texts)
            np.save(path, s.vecs)
        s.cues = np.vstack([cues(t) for t in s.texts])


def fit_logistic(X: np.ndarray, y: np.ndarray, w_sample: np.ndarray, l2: float, iters: int = 30):
    """Weighted L2 logistic regression on standardised features, by Newton's method."""
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    Z = np.hstack([(X - mean) / std, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(Z @ w, -50, 50)))
        g = Z.T @ (w_sample * (p - y)) + reg * w
        H = (Z * (w_sample * p * (1 - p))[:, None]).T @ Z + np.diag(reg + 1e-9)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    return mean, std, w[:-1], float(w[-1])


def predict(X, mean, std, w, b) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(((X - mean) / std) @ w + b, -50, 50)))


def fit_network(Z: np.ndarray, y: np.ndarray, w_sample: np.ndarray, hidden: int, alpha: float, seed: int,
                maxiter: int = 300) -> Network:
    """One relu hidden layer and a sigmoid output on standardised rows: weighted mean log-loss plus
    alpha / (2n) |weights|^2, by L-BFGS from a seeded Glorot start."""
    from scipy.optimize import minimize

    n, d = Z.shape
    rng = np.random.default_rng(seed)
    lim1, lim2 = np.sqrt(6 / (d + hidden)), np.sqrt(6 / (hidden + 1))
    theta0 = np.r_[rng.uniform(-lim1, lim1, d * hidden), np.zeros(hidden), rng.uniform(-lim2, lim2, hidden), 0.0]

    def unpack(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        return (t[:d * hidden].reshape(d, hidden), t[d * hidden:d * hidden + hidden],
                t[d * hidden + hidden:d * hidden + 2 * hidden], float(t[-1]))

    def loss(t: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, w2, b2 = unpack(t)
        H = Z @ W1 + b1
        A = np.maximum(H, 0.0)
        p = 1 / (1 + np.exp(-np.clip(A @ w2 + b2, -50, 50)))
        value = (-np.sum(w_sample * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))) / n
                 + alpha / (2 * n) * (np.sum(W1 ** 2) + np.sum(w2 ** 2)))
        g = w_sample * (p - y) / n
        gA = np.outer(g, w2) * (H > 0)
        return value, np.r_[(Z.T @ gA + alpha / n * W1).ravel(), gA.sum(0), A.T @ g + alpha / n * w2, g.sum()]

    return Network(*unpack(minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": maxiter}).x))


def fit_networks(X: np.ndarray, y: np.ndarray, w_sample: np.ndarray, hidden: int, alpha: float,
                 seeds: int) -> tuple[np.ndarray, np.ndarray, list[Network]]:
    mean, std = X.mean(0), X.std(0)
    std[std == 0] = 1.0
    Z = (X - mean) / std
    return mean, std, [fit_network(Z, y, w_sample, hidden, alpha, seed) for seed in range(seeds)]


def predict_networks(X: np.ndarray, mean: np.ndarray, std: np.ndarray, networks: list[Network]) -> np.ndarray:
    return np.mean([n.probability((X - mean) / std) for n in networks], axis=0)


def prf(y: np.ndarray, p: np.ndarray, threshold: float) -> dict[str, float]:
    pred = p >= threshold
    out: dict[str, float] = {}
    for cls, name in ((1, "claim"), (0, "no_claim")):
        tp = float(np.sum((pred == cls) & (y == cls)))
        fp = float(np.sum((pred == cls) & (y != cls)))
        fn = float(np.sum((pred != cls) & (y == cls)))
        P = tp / (tp + fp) if tp + fp else 0.0
        R = tp / (tp + fn) if tp + fn else 0.0
        out[f"{name}_P"], out[f"{name}_R"] = round(P, 4), round(R, 4)
        out[f"{name}_F1"] = round(2 * P * R / (P + R), 4) if P + R else 0.0
    out["macro_F1"] = round((out["claim_F1"] + out["no_claim_F1"]) / 2, 4)
    out["accuracy"] = round(float(np.mean(pred == (y == 1))), 4)
    out["right"], out["n"] = int(np.sum(pred == (y == 1))), int(len(y))
    return out


def cv_probs(X: np.ndarray, y: np.ndarray, w_sample: np.ndarray, fit, folds: int = 5, seed: int = 7) -> np.ndarray:
    """Out-of-fold probabilities; `fit(X, y, w_sample)` returns a function of rows."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=int)
    for cls in (0, 1):  # stratified
        idx = np.flatnonzero(y == cls)
        rng.shuffle(idx)
        fold[idx] = np.arange(len(idx)) % folds
    out = np.zeros(len(y))
    for k in range(folds):
        tr, te = fold != k, fold == k
        out[te] = fit(X[tr], y[tr], w_sample[tr])(X[te])
    return out


def objective(p: np.ndarray, y: np.ndarray, is_chat: np.ndarray, threshold: float) -> float:
    return (prf(y[~is_chat], p[~is_chat], threshold)["macro_F1"] + prf(y[is_chat], p[is_chat], threshold)["macro_F1"]) / 2


THRESHOLDS = np.round(np.arange(0.2, 0.81, 0.05), 2)


def best_threshold(p, y, is_chat) -> tuple[float, float]:
    scores = [(objective(p, y, is_chat, t), -abs(t - 0.5), t) for t in THRESHOLDS]
    s, _, t = max(scores)
    return float(t), s


def timing(path: Path) -> int:
    """CPU per message (process time, all threads): the e5 query alone, the gate with the vector still
    to compute, and the gate when the vector is already in the encoder's cache (as for the matcher,
    which embeds the same cleaned text)."""
    import time

    from core.intake.checkability import CheckabilityModel, ClaimGate
    from core.encoders.multilingual import E5Encoder

    with path.open(encoding="utf-8", newline="") as f:
        texts = [r["tweet_text"] for r in csv.DictReader(f, delimiter="\t")]
    enc = E5Encoder()
    gate = ClaimGate(CheckabilityModel.load(), cast(Any, enc))  # the sync encoder is all assess_many needs
    enc.queries_sync(["warm-up"])

    def cpu_ms(fn) -> float:
        t0 = time.process_time()
        for x in texts:
            fn(x)
        return (time.process_time() - t0) * 1000 / len(texts)

    enc.clear_cache()
    e5 = cpu_ms(lambda x: enc.queries_sync([clean_query(x)]))
    enc.clear_cache()
    cold = cpu_ms(lambda x: gate.assess_many([x]))
    warm = cpu_ms(lambda x: gate.assess_many([x]))  # every vector is cached now
    print(f"{len(texts)} messages, CPU ms per message: e5 query alone {e5:.1f}; gate, vector to compute "
          f"{cold:.1f}; gate, vector cached {warm:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clef", type=Path, default=CLEF)
    ap.add_argument("--chat", type=Path, nargs="+", default=list(CHAT_TRAIN))
    ap.add_argument("--chat-dev", type=Path, default=CHAT_DEV)
    ap.add_argument("--realistic", type=Path, default=ROOT / "eval" / "realistic",
                    help="the realistic corpus whose train split joins the chat messages (--realistic '' for none)")
    ap.add_argument("--cache", type=Path, default=ROOT / "data" / "checkcache")
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--dry-run", action="store_true", help="report only, write nothing")
    ap.add_argument("--hidden", type=int, nargs="+", default=[32], help="hidden units to choose from (64: no better)")
    ap.add_argument("--alpha", type=float, nargs="+", default=[3.0, 10.0, 30.0], help="L2 strengths to choose from")
    ap.add_argument("--seeds", type=int, default=3, help="networks averaged (each from its own seeded start)")
    ap.add_argument("--quick", action="store_true", help="skip the per-cue ablation")
    ap.add_argument("--timing", action="store_true",
                    help="only measure the gate's CPU per message with the shipped weights (chat dev messages)")
    args = ap.parse_args(argv)
    if args.timing:
        return timing(args.chat_dev)

    clef_tr = read_messages(args.clef / "train.tsv", "clef_train")
    clef_dev = read_messages(args.clef / "dev.tsv", "clef_dev")
    chat_tr = read_messages(args.chat[0], "chat_train")
    for n, path in enumerate(args.chat[1:], start=1):
        chat_tr = concat(chat_tr, read_messages(path, f"chat_train{n}"))
    if str(args.realistic) not in ("", "."):
        chat_tr = concat(chat_tr, read_realistic(args.realistic, "realistic_train"))
    chat_dev = read_messages(args.chat_dev, "chat_dev")
    embed([clef_tr, clef_dev, chat_tr, chat_dev], args.cache)
    is_chat = np.r_[np.zeros(len(clef_tr.y), bool), np.ones(len(chat_tr.y), bool)]
    y = np.r_[clef_tr.y, chat_tr.y]

    def train_X(use_e5=True, mask=None):
        return np.vstack([clef_tr.X(use_e5, mask), chat_tr.X(use_e5, mask)])

    w_sample = np.ones(len(y))  # chat messages weighted 1 (1 and 2 tried with the logistic model: 1 won)

    def networks(hidden: int, alpha: float, seeds: int):
        def fit(X, yy, ws):
            mean, std, members = fit_networks(X, yy, ws, hidden, alpha, seeds)
            return lambda rows: predict_networks(rows, mean, std, members)
        return fit

    def logistic(l2: float):
        def fit(X, yy, ws):
            weights = fit_logistic(X, yy, ws, l2)
            return lambda rows: predict(rows, *weights)
        return fit

    def cv_score(X, fit) -> tuple[float, float]:
        p = cv_probs(X, y, w_sample, fit)
        threshold, s = best_threshold(p, y, is_chat)
        return s, threshold

    print("== selection on train, 5-fold CV: mean of CLEF macro-F1 and chat macro-F1 ==")
    grid = []
    for hidden in args.hidden:
        for alpha in args.alpha:
            s, thr = cv_score(train_X(), networks(hidden, alpha, args.seeds))
            grid.append((s, hidden, alpha, thr))
            print(f"hidden={hidden} alpha={alpha} ({args.seeds} networks): CV objective {s:.4f} at threshold {thr}",
                  flush=True)
    _, hidden, alpha, _ = max(grid)
    p_cv = cv_probs(train_X(), y, w_sample, networks(hidden, alpha, args.seeds))
    # Platt scaling of the out-of-fold probabilities: averaged networks are sure of themselves at the ends, and
    # SURE_NO_CLAIM and the NOT_CHECKABLE confidence read p_claim as a probability.
    calibration = fit_platt(p_cv, y)
    thr, s_all = best_threshold(platt(p_cv, *calibration), y, is_chat)
    print(f"chosen: hidden={hidden} alpha={alpha}; calibration a={calibration[0]:.3f} b={calibration[1]:.3f}; "
          f"threshold {thr} (CV objective {s_all:.4f})")

    print("\n== what each part adds (train CV objective, own best threshold) ==")
    ablation = {"networks, e5 + all cues": round(s_all, 4),
                "one logistic regression, e5 + all cues (L2 100)": round(cv_score(train_X(), logistic(100.0))[0], 4),
                "cues only (logistic)": round(cv_score(train_X(False), logistic(1.0))[0], 4)}
    if not args.quick:
        one = networks(hidden, alpha, 1)  # one network per variant: the cue ablation at a seventh of the cost
        base = cv_score(train_X(), one)[0]
        ablation["one network, e5 + all cues"] = round(base, 4)
        ablation["one network, e5 only"] = round(cv_score(train_X(True, np.zeros(len(CUE_NAMES))), one)[0], 4)
        for i, name in enumerate(CUE_NAMES):
            mask = np.ones(len(CUE_NAMES))
            mask[i] = 0
            ablation[f"one network, without {name}"] = round(cv_score(train_X(True, mask), one)[0], 4)
        # Together, the cues whose removal alone did not lower the objective (a cue stays only if it helps).
        idle = [i for i, name in enumerate(CUE_NAMES) if ablation[f"one network, without {name}"] >= base]
        if idle:
            mask = np.ones(len(CUE_NAMES))
            mask[idle] = 0
            label = "one network, without " + "+".join(CUE_NAMES[i] for i in idle)
            ablation[label] = round(cv_score(train_X(True, mask), one)[0], 4)
    for k, v in ablation.items():
        print(f"{k:<48} {v:.4f}")
    # Without the chat messages (CLEF only): what our own data adds.
    clef_only = networks(hidden, alpha, args.seeds)(clef_tr.X(), clef_tr.y, np.ones(len(clef_tr.y)))

    print("\n== fit on all train, reported on dev ==")
    mean, std, members = fit_networks(train_X(), y, w_sample, hidden, alpha, args.seeds)

    def model(X: np.ndarray) -> np.ndarray:
        return platt(predict_networks(X, mean, std, members), *calibration)

    report = {}
    for split in (clef_dev, chat_dev):
        p = model(split.X())
        report[split.name] = prf(split.y, p, thr)
        report[split.name + "_at_0.5"] = prf(split.y, p, 0.5)
        report[split.name + "_clef_only_model"] = prf(split.y, clef_only(split.X()), thr)
        for key in (split.name, split.name + "_at_0.5", split.name + "_clef_only_model"):
            print(key, json.dumps(report[key]))
        if split is chat_dev:
            for i, (sid, text, yy, pp) in enumerate(zip(split.ids, split.texts, split.y, p)):
                if (pp >= thr) != (yy == 1):
                    print(f"  wrong: {sid} p_claim={pp:.2f} gold={int(yy)} {text}")
    # Reliability of p_claim on CLEF dev + chat dev (is the probability a probability?)
    p_all = np.r_[model(clef_dev.X()), model(chat_dev.X())]
    y_all = np.r_[clef_dev.y, chat_dev.y]
    bins = np.linspace(0, 1, 6)
    rel: list[dict[str, Any]] = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        sel = (p_all >= lo) & (p_all < hi + (1e-9 if hi == 1 else 0))
        if sel.any():
            rel.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": int(sel.sum()), "mean_p": round(float(p_all[sel].mean()), 3),
                        "observed": round(float(y_all[sel].mean()), 3)})
    ece = sum(r["n"] * abs(r["mean_p"] - r["observed"]) for r in rel) / len(p_all)
    print("reliability (dev):", json.dumps(rel), f"ECE {ece:.4f}")

    out = {
        "cue_names": list(CUE_NAMES), "embedding_dim": int(clef_tr.X().shape[1] - len(CUE_NAMES)),
        "embedding": "multilingual-e5-small query vector of core.textclean.clean_query(message)",
        "model": f"mean probability of {len(members)} networks: standardised rows, {hidden} relu units, a sigmoid",
        "mean": mean.round(6).tolist(), "std": std.round(6).tolist(), "threshold": thr,
        "calibration": {"a": round(calibration[0], 6), "b": round(calibration[1], 6)},
        "networks": [{"W1": np.round(n.hidden_weights, 5).tolist(), "b1": np.round(n.hidden_bias, 5).tolist(),
                      "w2": np.round(n.out_weights, 5).tolist(), "b2": round(n.out_bias, 6)} for n in members],
        "provenance": {
            "trained": date.today().isoformat(), "script": "training/checkability.py",
            "train": f"CLEF-2020 Task 1 train ({len(clef_tr.y)} tweets) + our chat messages ({len(chat_tr.y)}: "
                     + ", ".join(p.name for p in args.chat)
                     + (f" and the train split of {args.realistic.name}/" if str(args.realistic) not in ("", ".")
                        else "") + ")",
            "hidden": hidden, "alpha": alpha, "networks": len(members), "chat_weight": 1.0,
            "grid_cv": {f"hidden={h} alpha={a}": round(g, 4) for g, h, a, _ in grid},
            "cv_objective": round(s_all, 4), "ablation_cv": ablation,
            "dev": report, "dev_reliability": rel, "dev_ece": round(ece, 4),
        },
    }
    if not args.dry_run:
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
