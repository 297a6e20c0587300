"""Measure the cosine at which a retrieved fact-check is "about the same claim" (core.stance.FACTCHECK_MATCH).

Data: CLEF-2020 CheckThat! Task 2 *train* split (tweet -> verified claim pairs; one gold per tweet).
For each tweet, the top-k verified claims by cosine of the tweet to the evidence text core.ranking embeds
for a fact-check (title — "Claim checked: <claim>", as the knowledge and Fact Check API sources build it).
Prints, per threshold, the precision of "cosine >= t means the same claim" over those candidate pairs and
the share of tweets whose gold is accepted. The offline stance inherits a fact-check's rating, so it wants
high precision (the matcher's `auto` tier uses 0.9).

    .venv/bin/python tools/measure_factcheck_match.py /work/shared/eval/clef2020-task2 --model-dir <dir>
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from core.embeddings import Embedder
from core.evaluation import read_qrels, read_queries, read_verified_claims
from core.model_files import prepare_default_model
from core.textclean import clean_query

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path)
    ap.add_argument("--model-dir", type=Path, default=Path("data/models"))
    ap.add_argument("--split", default="train")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    emb = Embedder(model_dir=prepare_default_model(args.model_dir))
    docs = read_verified_claims(args.data / "verified_claims.docs.tsv")
    ids = [d.id for d in docs]
    texts = [f"{d.title.strip()} — Claim checked: {d.claim.strip()}" for d in docs]
    tweets = {t: clean_query(text) for t, text in read_queries(args.data / args.split / "tweets.queries.tsv")}
    gold = read_qrels(args.data / args.split / "tweet-vclaim-pairs.qrels")
    dv = emb.embed_sync(texts)
    tids = sorted(tweets)
    tv = emb.embed_sync([tweets[t] for t in tids])
    sims = tv @ dv.T
    pairs: list[tuple[float, bool]] = []
    for row, t in zip(sims, tids):
        top = np.argsort(-row)[: args.top]
        pairs += [(float(row[j]), ids[j] in gold.get(t, set())) for j in top]
    cos = np.array([p[0] for p in pairs])
    pos = np.array([p[1] for p in pairs])
    print(f"{args.split}: {len(tids)} tweets, {len(pairs)} candidate pairs (top {args.top})")
    print("threshold  precision  gold accepted")
    for t in np.arange(0.50, 0.96, 0.05):
        sel = cos >= t
        prec = pos[sel].mean() if sel.any() else float("nan")
        print(f"{t:9.2f}  {prec:9.3f}  {pos[sel].sum() / len(tids):13.3f}")


if __name__ == "__main__":
    main()
