#!/usr/bin/env python3
"""CPU of the cross-script term features (core/crosslingual_terms.py) per match: `prepare_query` +
`candidate_features` for 40 Russian dev tweets against 100 CLEF claims each, without and with the
query's term groups, side by side in one process; pass 1 with the candidates' mapped terms not yet
cached, pass 2 cached (as for the fact-checks that come back query after query).

usage:
  python tools/xl_feature_cost.py [--data ../shared/eval/clef2020-task2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import train_reranker as T  # noqa: E402

from core.crosslingual_terms import load_lexicon  # noqa: E402
from core.matchfeatures import CorpusStats, candidate_features, prepare_query  # noqa: E402
from core.textclean import clean_query  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/eval/clef2020-task2"))
    ap.add_argument("--translations", type=Path, default=ROOT / "eval" / "clef2020-ru")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--candidates", type=int, default=100)
    args = ap.parse_args(argv)
    t = time.process_time()
    load_lexicon()
    print(f"lexicon load {time.process_time() - t:.3f} s CPU")
    _, claims, titles = T.load_claims(args.data)
    stats = CorpusStats()
    for c, ti in zip(claims, titles):
        stats.add(c, ti)
    qids, raws, _ = T.load_split(args.data, "dev")
    _, raws = T.load_translated(args.translations / "dev" / "tweets.queries.tsv", qids, raws)
    raws = raws[:args.queries]
    rng = np.random.default_rng(0)
    v = rng.normal(size=384).astype(np.float32)
    m = min(args.candidates, len(claims))
    cands = [rng.choice(len(claims), m, replace=False) for _ in raws]
    for label in ("not cached", "cached"):
        with_xl = without = 0.0
        for raw, cand in zip(raws, cands):
            cs, ts = [claims[i] for i in cand], [titles[i] for i in cand]
            cv = rng.normal(size=(m, 384)).astype(np.float32)
            clean = clean_query(raw)
            t = time.process_time()
            pq = dataclasses.replace(prepare_query(raw, clean, v, stats), xl=None)
            candidate_features(pq, cs, ts, cv, cv, {}, stats)
            without += time.process_time() - t
            t = time.process_time()
            candidate_features(prepare_query(raw, clean, v, stats), cs, ts, cv, cv, {}, stats)
            with_xl += time.process_time() - t
        n = len(raws)
        print(f"{label}: per match of {m} candidates, CPU without the xl columns {without / n * 1e3:.1f} ms, "
              f"with {with_xl / n * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
