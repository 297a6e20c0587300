"""Does the engine's filtered search find what an exact search finds? The lookup behind "also reported by"
asks Qdrant Edge for the 64 nearest messages inside a time window (storage/message_vectors.py); on an HNSW
graph a filter can cut the paths to the right neighbours. This compares, on a data dir kept by
`tipline bench corroborate --keep DIR` (not in use by another process):

    .venv/bin/python -m evals.window_recall --data-dir DIR \\
        --queries ../shared/eval/clef2020-task2/dev/tweets.queries.tsv [-n 100]

For each window (the lookup's own, ±7 days around the newest message, then narrower ones ending 12 days
back) it runs the lookup's search as `MessageVectors.nearest_each` builds it (window, Latin script, one chat
excluded, cosine floor) three ways: HNSW as the product searches, HNSW with ACORN, and exact; and prints
recall@64 of the ids and of the stories against exact, how often the best hit is the same, and p50 ms.
Below Edge's full-scan threshold (~10,000 filtered points here) the engine already searches exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import qdrant_edge as qe


from bot.app import edge_dir, load_embedder
from bot.settings import Settings
from core.corroboration.story_model import COS_FLOOR, prepare_text
from evals.evaluation import read_queries
from core.corroboration.corroborator import CANDIDATES
from storage.edge_store import HNSW_EF, _edge_filter
from storage.message_vectors import VECTOR, _window

from storage.vectors import AnyOf

DAY = 86400.0
# (label, days back from the newest message to the window's centre, half-width in days)
WINDOWS = (("lookup window, +-7 d", 0.0, 7.0), ("+-1.2 d, 12 d back", 12.0, 1.2), ("+-0.3 d, 12 d back", 12.0, 0.3))


@dataclass
class Row:
    window: str
    passing: int  # stored messages inside the filter
    way: str
    recall_ids: float
    recall_stories: float
    same_best: float
    p50_ms: float


def messages_shard(settings: Settings) -> Path:
    root = edge_dir(settings)
    catalog = json.loads((root / "catalog.json").read_text())
    name = catalog["aliases"].get("messages", "messages")
    return root / "collections" / catalog["collections"][name]["dir"]


def measure(settings: Settings, queries: Path, n: int,
            sweep: tuple[tuple[int, int], ...] = ((CANDIDATES, max(HNSW_EF, CANDIDATES)),)) -> list[Row]:
    """`sweep`: (limit, hnsw_ef) pairs searched beside the product's; each is judged against exact search
    at the same limit."""
    texts = [prepare_text(q) for _, q in read_queries(queries) if q.strip()][:n]
    embedder = load_embedder(settings, 1)
    vecs = asyncio.run(embedder.embed(texts))
    path = messages_shard(settings)
    try:
        shard = qe.EdgeShard.load(str(path))
    except Exception as exc:
        raise SystemExit(f"cannot open {path} ({exc}); is a tipline process using this data dir?") from None
    try:
        newest, _ = shard.scroll(qe.ScrollRequest(limit=1, order_by=qe.OrderBy("ts", qe.Direction.Desc),
                                                  with_payload=["ts"], with_vector=False))
        if not newest:
            raise SystemExit(f"{path} holds no tracked messages")
        top = float((newest[0].payload or {})["ts"])
        rows = []
        for label, back, half in WINDOWS:
            centre = top - back * DAY
            # as the lookup asks: the window, Latin script, the asker's chat left out
            where = _edge_filter(_window(centre, half * DAY, ["telegram:-1000000007"], (AnyOf("script", ("latin",)),)))
            passing = shard.count(qe.CountRequest(filter=where, exact=True))

            def run(params: qe.SearchParams, limit: int = CANDIDATES) -> tuple[list[tuple[list[str], set[str]]], float]:
                out, ms = [], []
                for v in vecs:
                    req = qe.QueryRequest(limit=limit, query=qe.Query.Nearest(v.astype(np.float32).tolist(),
                                                                                   using=VECTOR),
                                          filter=where, score_threshold=COS_FLOOR, with_payload=["story"],
                                          params=params)
                    t0 = time.perf_counter()
                    points = shard.query(req)
                    ms.append((time.perf_counter() - t0) * 1000)
                    out.append(([str(p.id) for p in points], {str((p.payload or {}).get("story")) for p in points}))
                return out, statistics.median(ms)
            exacts = {k: run(qe.SearchParams(exact=True), k) for k in sorted({CANDIDATES, *(k for k, _ in sweep)})}
            exact, exact_ms = exacts[CANDIDATES]
            rows.append(Row(label, passing, "exact", 1.0, 1.0, 1.0, round(exact_ms, 2)))
            ways = [("hnsw", CANDIDATES, qe.SearchParams(hnsw_ef=max(HNSW_EF, CANDIDATES))),
                    ("hnsw+acorn", CANDIDATES, qe.SearchParams(hnsw_ef=max(HNSW_EF, CANDIDATES),
                                                               acorn=qe.AcornSearchParams(enable=True)))]
            ways += [(f"hnsw k={k} ef={ef}", k, qe.SearchParams(hnsw_ef=ef)) for k, ef in sweep
                     if (k, ef) != (CANDIDATES, max(HNSW_EF, CANDIDATES))]
            for way, k, params in ways:
                exact = exacts[k][0]
                got, ms = run(params, k)
                pairs = [(g, e) for g, e in zip(got, exact) if e[0]]
                rows.append(Row(label, passing, way,
                                round(float(np.mean([len(set(g[0]) & set(e[0])) / len(e[0]) for g, e in pairs])), 3)
                                if pairs else 1.0,
                                round(float(np.mean([len(g[1] & e[1]) / len(e[1]) for g, e in pairs])), 3)
                                if pairs else 1.0,
                                round(float(np.mean([bool(g[0]) and g[0][0] == e[0][0] for g, e in pairs])), 3)
                                if pairs else 1.0,
                                round(ms, 2)))
        return rows
    finally:
        shard.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a data dir kept by tipline bench corroborate")
    ap.add_argument("--queries", type=Path, required=True, help="tweets TSV of looked-up texts")
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--sweep", default="", metavar="K:EF[,K:EF...]",
                    help="more (limit, hnsw_ef) pairs to search, each judged against exact search at its limit")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sweep = tuple((int(k), int(ef)) for k, ef in (p.split(":") for p in args.sweep.split(",") if p))
    rows = measure(Settings(data_dir=args.data_dir), args.queries, args.n, sweep)
    if args.json:
        print(json.dumps([asdict(r) for r in rows]))
    else:
        for r in rows:
            print(f"{r.window:22s} {r.passing:8,d} pass  {r.way:18s} recall {r.recall_ids:.3f}  "
                  f"stories {r.recall_stories:.3f}  same best {r.same_best:.2f}  p50 {r.p50_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
