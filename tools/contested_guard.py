#!/usr/bin/env python3
"""What the contested-match guard (core/contested.py) does to automatic matches on CLEF-2020 Task 2 (English).

Builds the English item sets as tools/train_reranker.py does (full corpus, no-match copies, small
knowledge bases; same seeds, same order), scores them with the shipped English re-ranker, and counts,
per split and kind, the top-1 matches that reach `auto` (threshold and cos_doc floor), how many are
right, and how many of each the guard demotes to `suggest` at each relative gap asked for.

usage (about 17 minutes on 2 loaded cores with the embedding cache of train_reranker.py):
  python tools/contested_guard.py --data ../shared/eval/clef2020-task2 --cache /tmp/matchcache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import train_reranker as T  # noqa: E402

from core.contested import RIVAL_REL_GAP, RIVAL_SIMILARITIES, rival  # noqa: E402
from core.matchfeatures import FEATURE_NAMES  # noqa: E402
from core.model_files import prepare_default_model  # noqa: E402
from core.reranker import Reranker  # noqa: E402
from core.sparse import term_ids  # noqa: E402
from core.textclean import clean_query  # noqa: E402


def tally(rows: list[dict], reranker: Reranker, gaps: list[float], claims: list[str], titles: list[str]) -> dict:
    """{kind: {"auto": n, "right": n, gap: (right demoted, wrong demoted)}} over `rows`."""
    floor_col = FEATURE_NAMES.index(reranker.auto_floor_feature)
    cols = [FEATURE_NAMES.index(n) for n in RIVAL_SIMILARITIES]
    out: dict = {}
    for r in rows:
        p = reranker.score(r["X"])
        top = int(np.argmax(p))
        if p[top] < reranker.auto_threshold or r["X"][top, floor_col] < reranker.auto_min_cos:
            continue
        right = bool(r["y"][top])
        fresh: dict = {"auto": 0, "right": 0, **{g: [0, 0] for g in gaps}}
        t = out.setdefault(r["kind"], fresh)
        t["auto"] += 1
        t["right"] += right
        docs = [frozenset(term_ids(claims[i])) | frozenset(term_ids(titles[i])) for i in r["cand"]]
        for g in gaps:
            if rival(frozenset(term_ids(r["clean"])), docs, r["X"][:, cols], p >= reranker.suggest_threshold,
                     top, g) is not None:
                t[g][0 if right else 1] += 1
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    T.add_data_args(ap, translations=False)
    ap.add_argument("--gaps", default=f"0.2,{RIVAL_REL_GAP},0.3", help="relative gaps to report (comma-separated)")
    args = ap.parse_args(argv)
    gaps = [float(g) for g in args.gaps.split(",")]
    emb = T.CachedEmbedder(prepare_default_model(args.model_dir), args.cache)
    multi, use = T.CachedMultilingual(args.cache), T.CachedUse(args.cache)
    corpus = T.Corpus(args.data, emb, multi, use)
    reranker = Reranker.load_default()
    rng = np.random.default_rng(7)  # train_reranker.py's: the same small knowledge bases, train first
    for split in ("train", "dev"):
        qids, raws, gold = T.load_split(args.data, split)
        cleans = [clean_query(t) for t in raws]
        qvecs = emb(cleans, f"q_{split}_en")
        kw = dict(mvecs=multi(cleans, f"q_{split}_en", query=True), multilingual=False,
                  uvecs=use(cleans, f"q_{split}_en"))
        sets = {"full": T.build(corpus, qids, raws, qvecs, cleans, gold, 40, **kw),
                "no-match": T.build(corpus, qids, raws, qvecs, cleans, gold, 40, no_match=True, dup_cos=0.85, **kw),
                "small": T.build_small(corpus, qids, raws, qvecs, cleans, gold, 40, rng, with_gold=True, **kw)
                + T.build_small(corpus, qids, raws, qvecs, cleans, gold, 40, rng, with_gold=False, **kw)}
        clean_of = dict(zip(qids, cleans))
        rows = [{**it, "kind": kind, "clean": clean_of[it["qid"]]} for kind, items in sets.items() for it in items]
        res = tally(rows, reranker, gaps, corpus.claims, corpus.titles)
        n_rows = len(rows)
        for g in gaps:
            auto = sum(t["auto"] for t in res.values())
            right = sum(t["right"] for t in res.values())
            lost = sum(t[g][0] for t in res.values())
            dropped = sum(t[g][1] for t in res.values())
            parts = ", ".join(f"{k}: {t[g][0]} of {t['right']} right, {t[g][1]} of {t['auto'] - t['right']} wrong"
                              for k, t in res.items())
            print(f"{split} mixture, gap {g}: demoted {lost} of {right} right and {dropped} of {auto - right} wrong "
                  f"automatic matches; precision {right / auto:.4f} -> {(right - lost) / max(1, auto - lost - dropped):.4f}, "
                  f"coverage {auto / n_rows:.4f} -> {(auto - lost - dropped) / n_rows:.4f} ({parts})", flush=True)


if __name__ == "__main__":
    main()
