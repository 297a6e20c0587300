#!/usr/bin/env python3
"""Build the Russian/Ukrainian -> English word lexicon (core/data/crosslingual_lexicon.tsv.gz) that
`core.matching.crosslingual_terms` reads: a bilingual dictionary induced from the USE multilingual model we
already ship, no download and no evaluation data.

How: the most frequent words of each language (wordfreq's lists: a dev tool, `pip install wordfreq`,
never a runtime dependency) are embedded one by one with USE (core/encoders/use_encoder.py); every Cyrillic
word takes its nearest English words by CSLS (cosine minus the mean similarity of each side's k
nearest neighbours in the other language: it discounts "hub" words close to everything, such as
"poured" or "peat", which plain cosine gave as the translation of "вышки"). Words are stored as
`core.encoders.sparse.terms` normalises them (lower case, accents folded, English plurals folded), so a
translation is a BM25 term of the English fact-checks as they are indexed.

Then Ukrainian words the Russian list lacks also take the translations of their Russian cognates
(`pivot_ukrainian`): USE reads Ukrainian worse than Russian ("блискавка" -> heifer, "області" ->
plastering), while "області" spelled the Russian way, "области", is in the lexicon as "area". Measured
through the product on our Ukrainian dev tweets (eval/clef2020-uk): MAP@5 0.7831 -> 0.7914, 5 queries
better and none worse; dropping the Ukrainian-only USE entries instead gave 0.7695.

Tatoeba is evaluation data and is never read here; nor is CLEF.

usage:
  python -m training.lexicon [--ru 50000 --uk 30000 --en 50000] [--out core/data/crosslingual_lexicon.tsv.gz]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import re
import time
from pathlib import Path

import numpy as np

from core.encoders.sparse import terms

ROOT = Path(__file__).resolve().parents[1]

_CYRILLIC = re.compile(r"^[а-яёіїєґ'’-]+$")
_ASCII = re.compile(r"^[a-z]+$")


def vocab(lang: str, n: int, pattern: re.Pattern[str]) -> list[str]:
    import wordfreq  # dev tool only

    out, seen = [], set()
    for w in wordfreq.top_n_list(lang, n):
        if len(w) >= 2 and pattern.match(w) and w not in seen:
            seen.add(w)
            out.append(w)
    return out


def embed(words: list[str], batch: int = 256) -> np.ndarray:
    from core.encoders.use_encoder import UseEncoder

    enc = UseEncoder(cache_size=0)
    vecs = np.vstack([enc.encode_sync(words[i:i + batch]) for i in range(0, len(words), batch)])
    return (vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)).astype(np.float32)


def cached(cache: Path | None, name: str, words: list[str]) -> np.ndarray:
    if cache is None:
        return embed(words)
    path = cache / f"lexicon_{name}.npy"
    if path.exists():
        vecs = np.load(path)
        if len(vecs) == len(words):
            return vecs
    cache.mkdir(parents=True, exist_ok=True)
    vecs = embed(words)
    np.save(path, vecs)
    return vecs


# Ukrainian letters and endings and the Russian ones they most often stand for in a cognate, on words as
# `terms` folds them (й -> и, ї -> і, ’ -> ' on both sides): "області"/"области", "дітеи"/"детеи", "м'ясо"/"мясо",
# "роботи"/"роботы", "населення"/"население", "фактів"/"фактов".
_UK_LETTERS = {"і": ("и", "е", "о"), "и": ("ы",), "є": ("е", "ье"), "ґ": ("г",), "'": ("ь", "")}
_UK_ENDINGS = (("ння", "ние"), ("ння", "нье"), ("ів", "ов"))
PIVOT_MIN_LEN = 5  # shorter words are mostly function words, and false friends among them are many ("ніж")
PIVOT_MAX_EDITS = 2  # letters changed: "рік" -> "рок" (year -> rock) is the kind of false friend this limits
PIVOT_MAX_FORMS = 256  # spellings tried per word at most


def russian_spellings(word: str) -> set[str]:
    """The Russian spellings of a Ukrainian word, letter by letter and by ending, at most PIVOT_MAX_FORMS."""
    options = [(c, *_UK_LETTERS.get(c, ())) for c in word]
    if np.prod([len(o) for o in options], dtype=np.float64) > PIVOT_MAX_FORMS:
        return set()
    out = {"".join(p) for p in itertools.product(*options)}
    for uk, ru in _UK_ENDINGS:
        if word.endswith(uk):
            out |= {stem + ru for stem in russian_spellings(word[:-len(uk)]) or {word[:-len(uk)]}}
    return out


def pivot_ukrainian(lexicon: dict[str, list[str]], russian: set[str], ukrainian: list[str],
                    top: int = 4) -> int:
    """Give each Ukrainian word absent from the Russian list the translations of its Russian cognates (at most
    `top`, first, then its own); returns how many words gained some."""
    gained = 0
    for w in ukrainian:
        key = terms(w)
        if w in russian or len(key) != 1 or len(key[0]) < PIVOT_MIN_LEN:
            continue
        k = key[0]
        cognates = [v for v in sorted(russian_spellings(k)) if v != k and v in lexicon and v in russian
                    and sum(a != b for a, b in zip(v, k)) + abs(len(v) - len(k)) <= PIVOT_MAX_EDITS]
        via: list[str] = []
        for v in cognates:
            via += [t for t in lexicon[v] if t not in via]
        if via:
            lexicon[k] = via[:top] + [t for t in lexicon.get(k, []) if t not in via[:top]]
            gained += 1
    return gained


def mean_topk(a: np.ndarray, b: np.ndarray, k: int, chunk: int = 2000) -> np.ndarray:
    """Per row of `a`: mean cosine of its k nearest rows of `b` (CSLS's neighbourhood density)."""
    out = np.empty(len(a), dtype=np.float32)
    for i in range(0, len(a), chunk):
        s = a[i:i + chunk] @ b.T
        out[i:i + chunk] = np.partition(s, -k, axis=1)[:, -k:].mean(axis=1)
    return out


def translate(src: np.ndarray, tgt: np.ndarray, k: int, top: int, min_cos: float, within: float,
              chunk: int = 2000) -> list[list[tuple[int, float]]]:
    """For each source row, up to `top` target indices by CSLS, each with cosine >= min_cos and a CSLS
    no more than `within` below the best one."""
    r_src = mean_topk(src, tgt, k)
    r_tgt = mean_topk(tgt, src, k)
    out: list[list[tuple[int, float]]] = []
    for i in range(0, len(src), chunk):
        cos = src[i:i + chunk] @ tgt.T
        csls = 2 * cos - r_src[i:i + chunk, None] - r_tgt[None, :]
        best = np.argpartition(-csls, top, axis=1)[:, :top]
        for row in range(len(cos)):
            cand = sorted(best[row].tolist(), key=lambda j: -csls[row, j])
            b = csls[row, cand[0]]
            out.append([(j, float(cos[row, j])) for j in cand
                        if cos[row, j] >= min_cos and csls[row, j] >= b - within])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ru", type=int, default=50000, help="most frequent Russian words")
    ap.add_argument("--uk", type=int, default=30000, help="most frequent Ukrainian words")
    ap.add_argument("--en", type=int, default=50000, help="most frequent English words (the targets)")
    ap.add_argument("--k", type=int, default=10, help="CSLS neighbourhood")
    ap.add_argument("--top", type=int, default=3, help="translations kept per word at most")
    ap.add_argument("--min-cos", type=float, default=0.6)
    ap.add_argument("--within", type=float, default=0.05, help="CSLS below the best one still kept")
    ap.add_argument("--out", type=Path, default=ROOT / "core" / "data" / "crosslingual_lexicon.tsv.gz")
    ap.add_argument("--cache", type=Path, default=None,
                    help="keep the word vectors here (~2 min of USE per build on this machine)")
    args = ap.parse_args(argv)

    t0 = time.time()
    en = vocab("en", args.en, _ASCII)
    src: list[str] = []
    seen: set[str] = set()
    for lang, n in (("ru", args.ru), ("uk", args.uk)):
        for w in vocab(lang, n, _CYRILLIC):
            if w not in seen:
                seen.add(w)
                src.append(w)
    print(f"vocabulary: {len(src)} Cyrillic, {len(en)} English", flush=True)
    E, S = cached(args.cache, f"en{args.en}", en), cached(args.cache, f"cyr{args.ru}_{args.uk}", src)
    print(f"embedded in {time.time() - t0:.0f} s", flush=True)
    pairs = translate(S, E, args.k, args.top, args.min_cos, args.within)
    lexicon: dict[str, list[str]] = {}
    for w, tr in zip(src, pairs):
        key = terms(w)
        if len(key) != 1 or key[0] in lexicon:
            continue
        targets: list[str] = []
        for j, _ in tr:
            for t in terms(en[j]):  # stop words drop out; plurals fold ("vaccines" -> "vaccine")
                if t not in targets:
                    targets.append(t)
        if targets:
            lexicon[key[0]] = targets
    ru_words = vocab("ru", args.ru, _CYRILLIC)
    russian = {k[0] for k in map(terms, ru_words) if len(k) == 1} | set(ru_words)
    gained = pivot_ukrainian(lexicon, russian, vocab("uk", args.uk, _CYRILLIC))
    print(f"{gained} Ukrainian words took their Russian cognates' translations", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=9) as f:
        f.write(f"# built by training/lexicon.py: USE word vectors, CSLS k={args.k}, top {args.top}, "
                f"cos >= {args.min_cos}, within {args.within}; ru {args.ru}, uk {args.uk}, en {args.en}; "
                "Ukrainian words pivoted through Russian cognates\n")
        for w in sorted(lexicon):
            f.write(w + "\t" + " ".join(lexicon[w]) + "\n")
    tmp.replace(args.out)
    print(f"{len(lexicon)} entries -> {args.out} ({args.out.stat().st_size // 1024} KB) in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
