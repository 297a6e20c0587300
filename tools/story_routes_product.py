#!/usr/bin/env python3
"""Offline probe (not shipped): the CROSS/NATIVE decision with the two posts' e5 vectors side by side (their
product, 384 columns scaled by 384 so that they sum to the cosine, with their own L2) beside the shipped
columns. Direct links only, union-find per split (English pairs by the shipped English model), thresholds on a
grid maximising the mean of the two corpora's train F1. Reads the vectors tools/story_routes_xl.py cached in
/tmp/storycache (run it first).

usage: python tools/story_routes_product.py [../shared/eval/clef2020-task2]
"""
import hashlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import story_routes_xl as X  # noqa: E402

from core.corroboration import (  # noqa: E402
    CROSS, ENGLISH, NATIVE, StoryModel, _sigmoid, clusters_at, fit_logistic, pairwise_scores, route, story_models)
from core.token_align import stored_states  # noqa: E402
from evals.corroboration_eval import run_stream, translated_stream  # noqa: E402

streams = {}
cache = Path("/tmp/storycache")
def cached(texts, which):
    key = hashlib.sha256(("\x1e".join(texts) + which).encode()).hexdigest()[:20]
    z = np.load(cache / f"xl_{which}_{key}.npz")
    return z["v"] if which != "states" else np.split(z["v"], z["cut"])
D = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/eval/clef2020-task2")
R = Path(__file__).resolve().parents[1] / "eval"
for split in ("train", "dev"):
    m, g = translated_stream(D / split / "tweets.queries.tsv", R / "clef2020-ru" / split / "tweets.queries.tsv", D / split / "tweet-vclaim-pairs.qrels")
    t = [x.text for x in m]
    streams[f"clef_{split}"] = (m, g, cached(t, "mini"), cached(t, "e5"), [stored_states(s) for s in cached(t, "states")])
    m, g = X.story_stream(R / "stories" / f"{split}.jsonl")
    t = [x.text for x in m]
    streams[f"stories_{split}"] = (m, g, cached(t, "mini"), cached(t, "e5"), [stored_states(s) for s in cached(t, "states")])

shipped = story_models()
probe = StoryModel(weights=(0.0,) * 4, bias=0.0, threshold=2.0, weak_threshold=None)
def pairs_of(part):
    m, g, mini, multi, states = part
    det = run_stream(m, mini, shipped[0], record_pairs=True, multi=multi, others=[probe, probe], states=states)
    P = [(i, j) for i, j, _ in det.pairs]
    x = np.array([f for _, _, f in det.pairs])
    r = np.array([int(route(det._latin[i], det._latin[j])) for i, j in P])
    y = np.array([float(bool(g[det.ids[i]] & g[det.ids[j]])) for i, j in P])
    prod = np.array([det._multi[i] * det._multi[j] for i, j in P])
    return det, P, x, r, y, prod
cols = [0, 1, 2, 4, 5, 6, 7, 8]
data = {k: pairs_of(v) for k, v in streams.items()}
def fit_route(rt, scale, keys):
    xs = np.vstack([np.hstack([data[k][2][data[k][3] == rt][:, cols], scale * data[k][5][data[k][3] == rt]]) for k in keys])
    ys = np.concatenate([data[k][4][data[k][3] == rt] for k in keys])
    return fit_logistic(xs, ys, l2=1e-4)
def scores(k, models):
    det, P, x, r, y, prod = data[k]
    out = np.zeros(len(P)) - 1
    for rt in (CROSS, NATIVE):
        (w, b), scale, t = models[rt]
        sel = r == rt
        out[sel] = _sigmoid(np.hstack([x[sel][:, cols], scale * prod[sel]]) @ w + b) - t
    sel = r == ENGLISH
    out[sel] = shipped[0].score(x[sel]) - shipped[0].threshold
    return out
def f1(k, models):
    det = data[k][0]
    cl = clusters_at(det.ids, data[k][1], scores(k, models) + 1.0, 1.0)
    return pairwise_scores(cl, streams[k][1])
for l2p in (None, 1e-1, 1e-2, 1e-3, 1e-4):  # None: no product columns
    scale = 0.0 if l2p is None else 384 * np.sqrt(1e-4 / l2p)
    models = {}
    for rt in (CROSS, NATIVE):
        keys = ["clef_train", "stories_train"]
        models[rt] = [fit_route(rt, scale, keys), scale, 0.5]
    # thresholds: mean train F1 of both corpora, CROSS then NATIVE, grid
    for rt in (CROSS, NATIVE):
        best = (0.5, -1)
        for t in np.linspace(0.05, 0.95, 37):
            models[rt][2] = t
            v = np.mean([f1("clef_train", models).f1, f1("stories_train", models).f1])
            if v > best[1]:
                best = (t, v)
        models[rt][2] = best[0]
    out = " | ".join(f"{k} {f1(k, models).precision:.3f}/{f1(k, models).recall:.3f}/{f1(k, models).f1:.3f}" for k in data)
    print(f"product L2 {l2p}: thr {models[CROSS][2]:.3f}/{models[NATIVE][2]:.3f} :: {out}", flush=True)
