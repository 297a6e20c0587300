"""Measure the cosine at which a retrieved fact-check is "about the same claim" (core.stance.FACTCHECK_MATCH).

Data: CLEF-2020 CheckThat! Task 2 *train* split (tweet -> verified claim pairs; one gold per tweet).
For each tweet, the top-k verified claims by cosine of the tweet to the evidence text core.ranking embeds
for a fact-check (title — "Claim checked: <claim>", as the knowledge and Fact Check API sources build it).
Prints, per threshold, the precision of "cosine >= t means the same claim" over those candidate pairs and
the share of tweets whose gold is accepted. The offline stance inherits a fact-check's rating, so it wants
high precision (the matcher's `auto` tier uses 0.9).

    .venv/bin/python tools/measure_factcheck_match.py /work/shared/eval/clef2020-task2 --model-dir <dir>

`--relevance` instead measures core.ranking.MIN_RELEVANCE: the cosine of each tweet to its gold fact-check
(on-topic evidence by construction) against its cosine to a random other fact-check (off-topic), and
prints percentiles of both, embedding only the gold and the sampled fact-checks.
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
    ap.add_argument("--relevance", action="store_true")
    args = ap.parse_args()
    if args.relevance:
        return relevance(args)
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


def relevance(args: argparse.Namespace) -> None:
    emb = Embedder(model_dir=prepare_default_model(args.model_dir))
    docs = {d.id: f"{d.title.strip()} — {d.claim.strip()}" for d in read_verified_claims(
        args.data / "verified_claims.docs.tsv")}
    tweets = dict(read_queries(args.data / args.split / "tweets.queries.tsv"))
    gold = read_qrels(args.data / args.split / "tweet-vclaim-pairs.qrels")
    rng = np.random.default_rng(0)
    all_ids = sorted(docs)
    rows = [(t, sorted(g)[0], str(rng.choice(all_ids))) for t, g in sorted(gold.items()) if t in tweets]
    rows = [(t, g, r) for t, g, r in rows if r != g]
    tv = emb.embed_sync([clean_query(tweets[t]) for t, _, _ in rows])
    gv = emb.embed_sync([docs[g] for _, g, _ in rows])
    rv = emb.embed_sync([docs[r] for _, _, r in rows])
    on, off = (tv * gv).sum(1), (tv * rv).sum(1)
    print(f"{args.split}: {len(rows)} tweets; cosine percentiles")
    print("pct    on-topic  off-topic")
    for q in (1, 2, 5, 10, 25, 50, 75, 90, 95, 98, 99):
        print(f"{q:3d}   {np.percentile(on, q):8.3f}  {np.percentile(off, q):9.3f}")
    for t in (0.15, 0.2, 0.25, 0.3, 0.35):
        print(f"floor {t:.2f}: keeps {np.mean(on >= t):.3f} of on-topic, {np.mean(off >= t):.3f} of off-topic")


if __name__ == "__main__":
    main()
