#!/usr/bin/env python3
"""Fit the same-story models for pairs with a non-Latin side on cos, ent and rare alone (core/corroboration/story_model.py:
CROSS_*, NATIVE_* until 2026-11-29). The shipped models also read token alignment and numbers and are fitted
with our story set by training/story_models.py; this tool stays for the weak-link measurements below, which
its docs cite (their figures are of the three-column models it fits).

Data: the CLEF-2020 Task 2 train tweets plus our Russian translations of them (eval/clef2020-ru), each
translation posted by another account ("@ru_<handle>") at the tweet's time; two messages are one story
when their tweets share a verified claim (`evals.corroboration_eval.translated_stream`, which strips
every signature: a translation keeps its tweet's handle, which no real pair of posts shares).

  CROSS  (one side Latin, one not): logistic on [e5 cosine, entity Jaccard, IDF term Jaccard] over the
         candidate pairs of that route, threshold = the best pairwise F1 of the whole clustering (the
         English model's links as shipped);
  NATIVE (both non-Latin): the same fit on the Russian translations alone (their own stream), where
         Russian-Russian pairs are not also linked through their English originals.
Dev is only reported, beside the English vectors alone (the shipped behaviour before these models).

usage:
  python -m evals.fit_story_models --data ../shared/eval/clef2020-task2 [--cache /tmp/storycache]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np


from bot.app import load_embedder, load_multilingual
from bot.settings import Settings
from core.corroboration.story_model import ROUTE_FEATURES, StoryModel
from evals.story_detector import pairwise_scores
from evals.corroboration_eval import fit, fit_routes, run_stream, translated_stream

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="the clef2020-task2 directory")
    ap.add_argument("--translations", type=Path, default=Path(__file__).resolve().parents[1] / "eval" / "clef2020-ru")
    ap.add_argument("--cache", type=Path, help="keep the vectors here as .npy for reruns")
    ap.add_argument("--data-dir", type=Path, default=Path("data"), help="where the default model is assembled")
    ap.add_argument("--weak", action="store_true",
                    help="also measure weak links on the CROSS and NATIVE routes (shipped: English route only)")
    ap.add_argument("--weak-cv", type=int, default=0, metavar="FOLDS",
                    help="and cross-validate them on train grouped by claim (route models refit per fold)")
    args = ap.parse_args(argv)
    settings = Settings(data_dir=args.data_dir)
    embedder, multilingual = load_embedder(settings), load_multilingual(settings)

    def vectors(texts: list[str], which: str) -> np.ndarray:
        key = hashlib.sha256(("\x1e".join(texts) + which).encode()).hexdigest()[:20]
        path = args.cache / f"story_{which}_{key}.npy" if args.cache else None
        if path is not None and path.exists():
            return np.load(path)
        v = np.asarray(embedder.embed_sync(texts) if which == "mini" else multilingual.queries_sync(texts),
                       np.float32)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, v)
        return v

    data = {}
    for split in ("train", "dev"):
        msgs, gold = translated_stream(args.data / split / "tweets.queries.tsv",
                                       args.translations / split / "tweets.queries.tsv",
                                       args.data / split / "tweet-vclaim-pairs.qrels")
        texts = [m.text for m in msgs]
        data[split] = (msgs, vectors(texts, "mini"), vectors(texts, "e5"), gold)

    msgs, mini, e5, gold = data["train"]
    models, info = fit_routes(msgs, mini, e5, gold, StoryModel())
    ru = [i for i, m in enumerate(msgs) if m.id.startswith("ru")]
    native, native_info = fit([msgs[i] for i in ru], e5[ru], {k: v for k, v in gold.items() if k.startswith("ru")},
                              features=range(ROUTE_FEATURES))  # `shared` weighs 0 off the English route
    shipped = [models[0], models[1], native]

    def show(name: str, m: StoryModel) -> None:
        print(f"{name}_WEIGHTS = ({', '.join(f'{w:.4f}' for w in m.weights)})  {name}_BIAS = {m.bias:.4f}  "
              f"{name}_THRESHOLD = {m.threshold:.4f}")
    show("CROSS", models[1])
    show("NATIVE", native)
    print(f"train pairs: {info['candidate_pairs']} candidates, {info['positive_pairs']} positive (by route); "
          f"Russian-only fit: {native_info['candidate_pairs']} candidates")
    for split, (msgs, mini, e5, gold) in data.items():
        for label, clusters in (
                ("English vectors only", run_stream(msgs, mini, StoryModel()).clusters()),
                ("routed (shipped)", run_stream(msgs, mini, StoryModel(), multi=e5, others=shipped[1:]).clusters())):
            s = pairwise_scores(clusters, gold)
            own = np.mean([clusters[m.id] == clusters[f"ru{m.id}"] for m in msgs if f"ru{m.id}" in clusters])
            print(f"{split:5} {label:22} P {s.precision:.3f} R {s.recall:.3f} F1 {s.f1:.3f}  "
                  f"tweets linked to their own translation {own:.3f}")
    if args.weak:
        weak_routes(data, shipped)
    if args.weak_cv:
        weak_routes_cv(data["train"], args.weak_cv)
    return 0


def weak_routes_cv(train: tuple, folds: int, fracs: tuple[float | None, ...] = (None, 0.5, 0.71, 0.85),
                   english: StoryModel | None = None) -> None:
    """Weak links on the CROSS and NATIVE routes judged on held-out claims: per fold, the two route
    models fitted on the other folds (as `main` fits them on all of train, the English model as shipped),
    then the held-out claims' tweets and translations replayed as a stream of their own (sparse) and
    inside the whole train stream, pairs touching a held-out message (dense)."""
    from dataclasses import replace

    from evals.story_linking_cv import Pooled, claim_groups, split_folds, touching

    msgs, mini, e5, gold = train
    english = english or StoryModel()
    pools = {f: Pooled() for f in fracs}
    dense = {f: Pooled() for f in fracs}
    for held in split_folds(claim_groups([m.id for m in msgs], gold), folds, np.random.default_rng(0)):
        tr = [k for k, m in enumerate(msgs) if m.id not in held]
        te = [k for k, m in enumerate(msgs) if m.id in held]
        tmsgs = [msgs[k] for k in tr]
        models, _ = fit_routes(tmsgs, mini[tr], e5[tr], gold, english)
        ru = [k for k, m in enumerate(tmsgs) if m.id.startswith("ru")]
        native, _ = fit([tmsgs[k] for k in ru], e5[tr][ru], gold, features=range(ROUTE_FEATURES))
        for f in fracs:
            others = [replace(m, weak_threshold=None if f is None else f * m.threshold) for m in (models[1], native)]
            det = run_stream([msgs[k] for k in te], mini[te], english, multi=e5[te], others=others)
            pools[f].add(det.clusters(), gold)
            t, p, g = touching(run_stream(msgs, mini, english, multi=e5, others=others).clusters(), gold, held)
            dense[f].true, dense[f].pred, dense[f].gold = dense[f].true + t, dense[f].pred + p, dense[f].gold + g
        print(f"  fold done ({len(te)} held-out messages)", file=sys.stderr, flush=True)
    for f in fracs:
        print(f"CV ({folds} folds by claim) routed, CROSS / NATIVE weak at {f} of their thresholds: "
              "sparse P {:.3f} R {:.3f} F1 {:.3f}, dense P {:.3f} R {:.3f} F1 {:.3f}".format(
                  *pools[f].prf(), *dense[f].prf()))


def weak_routes(data: dict, shipped: list[StoryModel]) -> None:
    """The shipped English weak links plus weak links on the CROSS and NATIVE routes, each route's weak
    threshold a fraction of its own threshold (shipped English: 0.40 / 0.5667 = 0.71 of it)."""
    from dataclasses import replace

    for frac in (None, 0.5, 0.71, 0.85):
        others = [replace(m, weak_threshold=None if frac is None else round(frac * m.threshold, 4))
                  for m in shipped[1:]]
        for split, (msgs, mini, e5, gold) in data.items():
            s = pairwise_scores(run_stream(msgs, mini, StoryModel(), multi=e5, others=others).clusters(), gold)
            weak = "off" if frac is None else " / ".join(f"{m.weak_threshold:.3f}" for m in others)
            print(f"{split:5} routed, CROSS / NATIVE weak {weak:15} P {s.precision:.3f} R {s.recall:.3f} "
                  f"F1 {s.f1:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
