"""Store-level search latency on synthetic data: before (the numpy indexes of a tree from before
Qdrant Edge, e.g. 0f18bd8) vs after (Qdrant Edge). Run each from its own tree:

    PYTHONPATH=<tree> .venv/bin/python tools/bench_vector_store.py {fc|msg} N {before|after}

Prints one JSON line (docs/storage.md). The claim texts come from ../shared/eval/clef2020-task2."""

import asyncio
import sys
import time
import uuid
import tempfile
import json
import os
from pathlib import Path
import numpy as np

kind, N, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(7)
D = 384


def unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


Q = 200


def pct(xs, p):
    return float(np.percentile(xs, p))


if kind == "fc":
    from core.sparse import document_vector, query_vector

    claims = [
        line.split("\t")[1]
        for line in open("/work/shared/eval/clef2020-task2/verified_claims.docs.tsv", encoding="utf-8")
        .read()
        .splitlines()[1:]
        if "\t" in line
    ]
    texts = [f"{claims[i % len(claims)]} v{i // len(claims)}" for i in range(N)]
    C = 2000
    cent = unit(rng.normal(size=(C, D)))
    lab = rng.integers(C, size=N)
    dense = unit(cent[lab] + 0.08 * rng.normal(size=(N, D)).astype(np.float32))
    title = unit(cent[lab] + 0.08 * rng.normal(size=(N, D)).astype(np.float32))
    multi = unit(cent[lab] + 0.08 * rng.normal(size=(N, D)).astype(np.float32))
    qi = rng.integers(N, size=Q)
    qv = unit(dense[qi] + 0.05 * rng.normal(size=(Q, D)).astype(np.float32))
    qm = unit(multi[qi] + 0.05 * rng.normal(size=(Q, D)).astype(np.float32))
    qs = [query_vector(texts[i]) for i in qi]
    ids = [str(uuid.UUID(int=i + 1)) for i in range(N)]
    res = {"kind": kind, "n": N, "which": which}
    if which == "before":
        from storage.local_index import LocalHybridIndex
        from storage.vectors import Hit

        idx = LocalHybridIndex({"claim": D, "title": D, "multi": D})
        t0 = time.time()
        for i in range(N):
            idx.upsert(
                ids[i],
                {"claim": dense[i], "title": title[i], "multi": multi[i]},
                document_vector(texts[i]),
                {"claim": texts[i]},
            )
        idx.search({"claim": qv[0]}, qs[0], 40)
        res["fill_s"] = time.time() - t0
        lat = []
        for k in range(Q):
            a = time.perf_counter()
            hits = {}
            for ln, rows in idx.search({"claim": qv[k], "title": qv[k], "multi": qm[k]}, qs[k], 40).items():
                for r, (row, sc) in enumerate(rows, 1):
                    h = hits.get(row)
                    if h is None:
                        h = hits[row] = Hit(idx.id_of(row), idx.payload_of(row), idx.vectors_of(row), {}, {})
                    h.ranks[ln] = r
                    h.scores[ln] = sc
            lat.append((time.perf_counter() - a) * 1000)
        res["search_p50_ms"], res["search_p95_ms"] = pct(lat, 50), pct(lat, 95)
    else:
        from storage.edge_store import EdgeVectorStore
        from storage.vectors import FactCheckPoint

        async def main():
            with tempfile.TemporaryDirectory() as tmp:
                st = await EdgeVectorStore.open(Path(tmp), dim=D)
                await st.ensure_factchecks("fc")
                t0 = time.time()
                for i in range(0, N, 512):
                    await st.upsert_factchecks(
                        "fc",
                        [
                            FactCheckPoint(
                                ids[j], dense[j], title[j], document_vector(texts[j]), {"claim": texts[j]}, multi[j]
                            )
                            for j in range(i, min(N, i + 512))
                        ],
                    )
                res["upsert_pts_per_s"] = N / (time.time() - t0)

                async def measure(tag):
                    lat = []
                    for k in range(Q):
                        a = time.perf_counter()
                        await st.search_factchecks("fc", qv[k], qs[k], 40, multi=qm[k])
                        lat.append((time.perf_counter() - a) * 1000)
                    res[tag + "_p50_ms"], res[tag + "_p95_ms"] = pct(lat, 50), pct(lat, 95)
                    return lat

                building = bool(st._tasks)
                await measure("search_while_writing_or_building" if building else "search_plain")
                t0 = time.time()
                await st.settle()
                res["settle_build_s"] = time.time() - t0
                await measure("search_indexed")
                await st.aclose()

        asyncio.run(main())
else:
    T = 30 * 86400.0
    C = max(100, N // 100)
    cent = unit(rng.normal(size=(C, D)))
    lab = rng.integers(C, size=N)
    vecs = unit(cent[lab] + 0.06 * rng.normal(size=(N, D)).astype(np.float32))
    ts = rng.uniform(0, T, N)
    chats = [f"telegram:c{int(c)}" for c in rng.integers(500, size=N)]
    qi = rng.integers(N, size=Q)
    qv = unit(vecs[qi] + 0.06 * rng.normal(size=(Q, D)).astype(np.float32))
    qt = rng.uniform(7 * 86400, T, Q)
    W = 7 * 86400.0
    res = {"kind": kind, "n": N, "which": which}
    if which == "before":
        from storage.message_vectors import WindowIndex

        idx = WindowIndex(D)
        t0 = time.time()
        for i in np.argsort(ts):
            idx.add(f"k{i}", vecs[i], ts[i], chats[i], None)
        res["fill_s"] = time.time() - t0
        lat = []
        found = []
        for k in range(Q):
            a = time.perf_counter()
            rows, cos = idx.search(qv[k], t=qt[k], window_s=W, exclude_chats=[chats[qi[k]]], floor=0.35, limit=64)
            lat.append((time.perf_counter() - a) * 1000)
            found.append(len(rows))
        res["nearest_p50_ms"], res["nearest_p95_ms"], res["found_mean"] = (
            pct(lat, 50),
            pct(lat, 95),
            float(np.mean(found)),
        )
    else:
        from storage.edge_store import EdgeVectorStore
        from storage.message_vectors import MessagePoint, MessageVectors

        async def main():
            with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
                st = await EdgeVectorStore.open(Path(tmp), dim=D)
                mv = MessageVectors(st, "messages")
                await mv.ensure()
                t0 = time.time()
                for i in range(0, N, 2048):
                    await mv.upsert(
                        [
                            MessagePoint(
                                f"k{j}",
                                f"telegram:{chats[j][9:]}",
                                float(ts[j]),
                                f"k{j}",
                                float(ts[j]),
                                frozenset({"e"}),
                                frozenset({j % 1000, 7}),
                                False,
                                vector=vecs[j],
                                platform="telegram",
                                message_id=str(j),
                            )
                            for j in range(i, min(N, i + 2048))
                        ]
                    )
                res["upsert_pts_per_s"] = N / (time.time() - t0)

                async def measure(tag):
                    lat = []
                    found = []
                    for k in range(Q):
                        a = time.perf_counter()
                        r = await mv.nearest(
                            qv[k], t=qt[k], window_s=W, exclude_chats=[chats[qi[k]]], floor=0.35, limit=64
                        )
                        lat.append((time.perf_counter() - a) * 1000)
                        found.append(len(r))
                    res[tag + "_p50_ms"], res[tag + "_p95_ms"], res[tag + "_found"] = (
                        pct(lat, 50),
                        pct(lat, 95),
                        float(np.mean(found)),
                    )

                await measure("nearest_during_build" if st._tasks else "nearest_plain")
                t0 = time.time()
                await st.settle()
                res["settle_build_s"] = time.time() - t0
                await measure("nearest_indexed")
                await st.aclose()

        asyncio.run(main())
print(json.dumps(res))
