#!/usr/bin/env python3
"""Would the cross-script mapped terms help as a fifth candidate list? For our Russian translations of
the CLEF-2020 tweets (eval/clef2020-ru): recall@K of BM25 over the claims with each message's words
replaced by their English alternatives (core/crosslingual_terms.py), searched in the same sparse index,
and the recall of the union of the four production lists with and without it. Also the gloss list
(core/gloss.py: the message's English gloss read by MiniLM, searched in the claim vectors), which
production searches for a message with Cyrillic words, alone and with the mapped terms.

usage:
  python tools/xl_candidate_recall.py --data ../shared/eval/clef2020-task2 --cache /tmp/matchcache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import train_reranker as T  # noqa: E402

from core.crosslingual_terms import load_lexicon  # noqa: E402
from core.sparse import terms  # noqa: E402
from core.textclean import clean_query  # noqa: E402


def mapped_text(text: str, lexicon) -> str:
    """The message's terms with each Cyrillic one's English alternatives beside it."""
    out: list[str] = []
    for t in terms(clean_query(text)):
        out += [*lexicon.get(t, ()), t]
    return " ".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    T.add_data_args(ap)
    ap.add_argument("--k", type=int, default=40)
    ap.add_argument("--splits", default="dev,train")
    args = ap.parse_args(argv)
    from core.model_files import prepare_default_model
    emb = T.CachedEmbedder(prepare_default_model(args.model_dir), args.cache)
    multi, use = T.CachedMultilingual(args.cache), T.CachedUse(args.cache)
    corpus = T.Corpus(args.data, emb, multi, use)
    lexicon = load_lexicon()
    for split in args.splits.split(","):
        qids, raws, gold = T.load_split(args.data, split)
        qids, raws = T.load_translated(args.translations / split / "tweets.queries.tsv", qids, raws)
        cleans = [clean_query(t) for t in raws]
        qvecs, mvecs = emb(cleans, f"q_{split}_ru"), multi(cleans, f"q_{split}_ru", query=True)
        gvecs = T.gloss_vectors(emb, cleans, f"q_{split}_ru")
        r_xl = r_union = r_both = r_gl = r_ugl = r_all = 0.0
        for q, raw, clean, qv, mv, gv in zip(qids, raws, cleans, qvecs, mvecs, gvecs):
            cand, _, _ = corpus.candidates(qv, clean, args.k, (), mv)
            xl = set(T.top_k(corpus.sparse.scores(mapped_text(raw, lexicon)), args.k).tolist())
            g = {corpus.index[x] for x in gold[q] if x in corpus.index}
            union = set(cand.tolist())
            r_xl += len(g & xl) / len(g)
            r_union += len(g & union) / len(g)
            r_both += len(g & (union | xl)) / len(g)
            gl = set(T.top_k(corpus.claim_vecs @ gv, args.k).tolist()) if gv is not None else set()
            r_gl += len(g & gl) / len(g)
            r_ugl += len(g & (union | gl)) / len(g)
            r_all += len(g & (union | gl | xl)) / len(g)
        n = len(qids)
        print(f"{split}/ru: mapped-term sparse recall@{args.k} {r_xl / n:.4f}; union of the four lists "
              f"{r_union / n:.4f} -> with it {r_both / n:.4f}", flush=True)
        print(f"{split}/ru: gloss dense recall@{args.k} {r_gl / n:.4f}; union of the four lists -> with it "
              f"{r_ugl / n:.4f}; with it and the mapped terms {r_all / n:.4f}", flush=True)


if __name__ == "__main__":
    main()
