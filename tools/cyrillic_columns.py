#!/usr/bin/env python3
"""Screen new candidate columns for the `cyrillic` re-ranker (issue 11): build its item sets as
tools/train_reranker.py --models cyrillic does (our Russian translations of the CLEF-2020 tweets,
eval/clef2020-ru, against the English claims, gloss list and columns included), append each variant's
columns, refit with the tool's own `fit` and print train 5-fold CV MAP@5, dev MAP@5 and recall@5, and
`auto` with its precision and coverage on the dev mixture. Nothing is written but the vector cache.

Variants (each on top of every shipped column):
  base       the shipped columns only (the baseline of the same run: the small knowledge bases are
             random, so compare within one run);
  e5pass     e5 reading the message with the "passage: " prefix too (symmetric), its cosine to the
             candidate's e5 vector, gap to the best and margin over the others (one more e5 call);
  glosse5    e5 reading the English gloss (core/gloss.py) as a passage, the same three columns;
  prf        Rocchio in e5 space: the query plus 0.5 x the mean of its 3 nearest candidates, cosine and gap;
  agree      agreement of the Cyrillic model's four signals (e5, USE, gloss MiniLM, cross-script BM25):
             share of them ranking the candidate in the top 3 of the candidates, mean and best 1/rank;
  tok10f     token alignment (tools/token_alignment.py): BERTScore F of e5's layer-10 token states of the
             message and of the candidate's claim + headline, and its gap to the best candidate;
  tok10f64   the same with the states projected to 64 dimensions (float16), the projection fitted on our
             seed knowledge base's fact-checks (core/data/seed_factchecks.jsonl), as a store would keep them;
  tok12r     recall R alone (the score Qdrant's multivector MaxSim gives) from the last layer, and its gap.
Also with --dense: plain dense MAP@5 / recall@40 of the e5 variants over the whole corpus, and (with a
token variant) e5's top 40 re-ordered by token alignment.

usage:
  python tools/cyrillic_columns.py --data ../shared/eval/clef2020-task2 --cache /tmp/matchcache --dense
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import token_alignment as TA  # noqa: E402
import train_reranker as T  # noqa: E402

from core.crosslingual_terms import load_lexicon  # noqa: E402
from core.gloss import gloss  # noqa: E402
from core.matchfeatures import FEATURE_NAMES, doc_text  # noqa: E402
from core.textclean import clean_query  # noqa: E402

_COL = {n: FEATURE_NAMES.index(n) for n in FEATURE_NAMES}
Column = Callable[[dict, dict, np.ndarray], list[np.ndarray]]


def _norm(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-9)


def _margin(v: np.ndarray) -> np.ndarray:
    if v.size < 2:
        return np.zeros_like(v)
    first, second = np.sort(v)[::-1][:2]
    return v - np.where(v == first, second, first)


def _cos_cols(vec: np.ndarray, cand: np.ndarray, docs: np.ndarray) -> list[np.ndarray]:
    c = docs[cand] @ vec
    return [c, c - c.max(), _margin(c)]


def _ranks(v: np.ndarray) -> np.ndarray:
    r = np.empty(v.size)
    r[np.argsort(-v, kind="stable")] = np.arange(1, v.size + 1)
    return r


def e5pass(it: dict, q: dict, docs: np.ndarray) -> list[np.ndarray]:
    return _cos_cols(q["passage"][it["qi"]], it["cand"], docs)


def glosse5(it: dict, q: dict, docs: np.ndarray) -> list[np.ndarray]:
    return _cos_cols(q["gloss_passage"][it["qi"]], it["cand"], docs)


def prf(it: dict, q: dict, docs: np.ndarray, k: int = 3, a: float = 0.5) -> list[np.ndarray]:
    mv, cand = q["query"][it["qi"]], it["cand"]
    near = cand[np.argsort(-(docs[cand] @ mv))[:k]]
    return _cos_cols(_norm(mv + a * docs[near].mean(0)), cand, docs)[:2]


def agree(it: dict, q: dict, docs: np.ndarray) -> list[np.ndarray]:
    X = it["X"]
    R = np.stack([_ranks(X[:, _COL[n]]) for n in ("cos_multi", "cos_use", "cos_gloss", "xl_bm25")])
    return [(R <= 3).mean(0), (1.0 / R).mean(0), 1.0 / R.min(0)]


def tokalign(layer: int, which: int, projected: bool = False) -> Column:
    """Token alignment columns: R (which=0), P (1) or F (2) and its gap to the best candidate."""
    memo: dict[tuple[str, int, int], float] = {}

    def columns(it: dict, q: dict, docs: np.ndarray) -> list[np.ndarray]:
        proj = q["projection"] if projected else None
        qm = TA.project(q["tokens"][layer][it["qi"]], proj)
        vals = []
        for c in it["cand"].tolist():
            key = (q["split"], it["qi"], c)
            if key not in memo:
                memo[key] = TA.alignment(qm, TA.project(q["doc_tokens"][layer][c], proj))[which]
            vals.append(memo[key])
        v = np.asarray(vals)
        return [v, v - v.max()]
    return columns


VARIANTS: dict[str, list[Column]] = {"base": [], "e5pass": [e5pass], "glosse5": [glosse5], "prf": [prf],
                                     "agree": [agree], "agree+e5pass": [agree, e5pass],
                                     "tok10f": [tokalign(10, 2)], "tok10f64": [tokalign(10, 2, projected=True)],
                                     "tok12r": [tokalign(12, 0)]}
TOKEN_VARIANTS = ("tok10f", "tok10f64", "tok12r")


def load_queries(args, split: str, multi: T.CachedMultilingual, *, every: bool = True
                 ) -> tuple[list[str], list[str], dict, dict]:
    """The split's Russian queries and their e5 vectors; `every=False`: the "query: " ones only (the
    others are read by the e5pass, glosse5 and --dense screens alone, and cost an e5 call per text)."""
    qids, raws, gold = T.load_split(args.data, split)
    qids, raws = T.load_translated(args.translations / split / "tweets.queries.tsv", qids, raws)
    cleans = [clean_query(t) for t in raws]
    vecs = {"query": multi(cleans, f"q_{split}_ru", query=True), "split": split}
    if every:
        lexicon = load_lexicon()
        glosses = [gloss(c, lexicon) or c for c in cleans]
        vecs |= {"passage": multi(cleans, f"qp_{split}_ru", query=False),
                 "gloss_query": multi(glosses, f"q_{split}_glosse5", query=True),
                 "gloss_passage": multi(glosses, f"qp_{split}_glosse5", query=False)}
    return qids, raws, gold, vecs


def dense_report(split: str, corpus: T.Corpus, qids: list[str], gold: dict, vecs: dict) -> None:
    def score(S: np.ndarray) -> str:
        ap = rec = 0.0
        for i, q in enumerate(qids):
            g = {str(corpus.index[x]) for x in gold[q] if x in corpus.index}
            top = [str(x) for x in T.top_k(S[i], 40).tolist()]
            ap += T.ap5(top, g)
            rec += len(g & set(top)) / max(len(g), 1)
        return f"MAP@5 {ap / len(qids):.4f} recall@40 {rec / len(qids):.4f}"
    D = corpus.multi_vecs
    mv, near = vecs["query"], np.argsort(-(vecs["query"] @ D.T), axis=1)[:, :3]
    rows = {"e5 query: (shipped)": mv, "e5 passage:": vecs["passage"], "e5 query + passage": _norm(mv + vecs["passage"]),
            "e5 gloss as query": vecs["gloss_query"], "e5 gloss as passage": vecs["gloss_passage"],
            "e5 Rocchio (k 3, a 0.5)": _norm(mv + 0.5 * D[near].mean(1))}
    for name, v in rows.items():
        print(f"{split}/ru dense {name}: {score(v @ D.T)}", flush=True)
    if "tokens" not in vecs:
        return
    # Token alignment re-orders e5's top 40 (recall@40 stays e5's): by F alone, and by e5 cosine + F.
    S = mv @ D.T
    top = np.argsort(-S, axis=1)[:, :40]
    for layer, proj in [(layer, None) for layer in sorted(vecs["tokens"])] + [(10, vecs["projection"])]:
        F = np.array([[TA.alignment(TA.project(vecs["tokens"][layer][i], proj),
                                    TA.project(vecs["doc_tokens"][layer][c], proj))[2] for c in top[i]]
                      for i in range(len(qids))])
        label = f"layer {layer}" + (f", {proj.shape[1]}-d" if proj is not None else "")
        for what, vals in (("F", F), ("e5 + F", np.take_along_axis(S, top, 1) + F)):
            R = np.full_like(S, -np.inf)
            np.put_along_axis(R, top, vals, 1)
            print(f"{split}/ru dense e5 top 40 by {what} ({label}): {score(R)}", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    T.add_data_args(ap)
    ap.add_argument("--k", type=int, default=40, help="top-K per candidate list")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--dense", action="store_true", help="also the plain dense screen of the e5 variants")
    ap.add_argument("--no-dev-calibration", action="store_true",
                    help="`auto` from train CV only, not raised for precision 0.9 on the dev mixture (tiny sets)")
    ap.add_argument("--projection-dim", type=int, default=64, help="tok10f64's dimensions")
    args = ap.parse_args(argv)
    names = args.variants.split(",")

    from core.model_files import prepare_default_model
    emb = T.CachedEmbedder(prepare_default_model(args.model_dir), args.cache)
    multi, use = T.CachedMultilingual(args.cache), T.CachedUse(args.cache)
    corpus = T.Corpus(args.data, emb, multi, use)
    rng = np.random.default_rng(7)  # the tool's seed; splits drawn in its order (train, then dev)
    sets, qvecs = {}, {}
    tokens = TA.TokenStates(args.cache) if any(n in TOKEN_VARIANTS for n in names) else None
    shared: dict = {}
    if tokens is not None:
        shared["doc_tokens"] = tokens([doc_text(c, t) for c, t in zip(corpus.claims, corpus.titles)], "doc", query=False)
        seed = [json.loads(line) for line in (ROOT / "core" / "data" / "seed_factchecks.jsonl").open(encoding="utf-8")]
        seed_states = tokens([doc_text(s["claim"], s.get("title", "")) for s in seed], "seed", query=False)
        shared["projection"] = TA.fit_projection(seed_states[10], args.projection_dim)
    every = args.dense or any(n in ("e5pass", "glosse5", "agree+e5pass") for n in names)
    for split in ("train", "dev"):
        qids, raws, gold, vecs = load_queries(args, split, multi, every=every)
        vecs |= shared
        cleans = [clean_query(t) for t in raws]
        if tokens is not None:
            vecs["tokens"] = tokens(cleans, f"q_{split}_ru", query=True)
        if args.dense:
            dense_report(split, corpus, qids, gold, vecs)
        qv = emb(cleans, f"q_{split}_ru")
        kw = dict(mvecs=vecs["query"], multilingual=True, uvecs=use(cleans, f"q_{split}_ru"),
                  gvecs=T.gloss_vectors(emb, cleans, f"q_{split}_ru"))
        items = T.build(corpus, qids, raws, qv, cleans, gold, args.k, **kw)
        nomatch = T.build(corpus, qids, raws, qv, cleans, gold, args.k, no_match=True, dup_cos=0.85, **kw)
        small = [*T.build_small(corpus, qids, raws, qv, cleans, gold, args.k, rng, with_gold=True, dup_cos=0.85, **kw),
                 *T.build_small(corpus, qids, raws, qv, cleans, gold, args.k, rng, with_gold=False, dup_cos=0.85, **kw)]
        index = {q: i for i, q in enumerate(qids)}
        for it in (*items, *nomatch, *small):
            it["qi"] = index[it["qid"]]
        sets[split], qvecs[split] = (items, nomatch, small, gold), vecs

    for name in names:
        fns = VARIANTS[name]

        def widen(items: list[dict], split: str) -> list[dict]:
            return [{**it, "X": np.column_stack([it["X"], *[c for f in fns for c in f(it, qvecs[split], corpus.multi_vecs)]])}
                    if fns else it for it in items]
        tr, tr_nm, tr_small, gold_tr = sets["train"]
        dev, dev_nm, dev_small, gold_dev = sets["dev"]
        tr_all = widen(tr + tr_nm + tr_small, "train")
        extra = tr_all[0]["X"].shape[1] - len(FEATURE_NAMES)
        names = FEATURE_NAMES + tuple(f"{name}_{i}" for i in range(extra))
        report = {"dev_ru": (widen(dev, "dev"), gold_dev, widen(dev_nm + dev_small, "dev"))}
        with contextlib.redirect_stdout(io.StringIO()):  # fit's own progress lines
            model, _ = T.fit(name, tr_all, report, corpus, args, "cos_multi",
                             calibrate_on=None if args.no_dev_calibration else "dev_ru",
                             train_gold=gold_tr, names=names)
        m = model["provenance"]["metrics"]
        a = m["thresholds"]["auto"]["dev_ru_mixed"]
        print(f"{name}: train CV MAP@5 {m['train_cv']['map5']:.4f}; dev MAP@5 {m['dev_ru']['map5']:.4f} "
              f"recall@5 {m['dev_ru']['recall5']:.4f}; auto {model['thresholds']['auto']:.3f} precision "
              f"{a['precision_with_floor']} coverage {a['coverage_with_floor']}", flush=True)


if __name__ == "__main__":
    main()
