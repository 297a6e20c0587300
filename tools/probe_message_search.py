"""Qdrant Edge alone: filtered nearest-message search on 30,000 clustered messages after one index build
(docs/storage.md). .venv/bin/python tools/probe_message_search.py"""

import asyncio
import time
import tempfile
import numpy as np
from pathlib import Path
from storage.edge_store import EdgeVectorStore
from storage.message_vectors import MessagePoint, MessageVectors
from storage.vectors import Query, Where, Between, AnyOf

N = 30000
D = 384
rng = np.random.default_rng(7)


def unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


C = 300
cent = unit(rng.normal(size=(C, D)))
lab = rng.integers(C, size=N)
vecs = unit(cent[lab] + 0.03 * rng.normal(size=(N, D)).astype(np.float32))
ts = rng.uniform(0, 30 * 86400, N)
chats = rng.integers(500, size=N)


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        st = await EdgeVectorStore.open(Path(tmp), dim=D, optimize_at=20000, optimize_every=10**9)
        mv = MessageVectors(st, "m")
        await mv.ensure()
        for i in range(0, N, 2048):
            await mv.upsert(
                [
                    MessagePoint(
                        f"k{j}",
                        f"telegram:c{chats[j]}",
                        float(ts[j]),
                        f"k{j}",
                        0.0,
                        frozenset(),
                        frozenset({1}),
                        False,
                        vector=vecs[j],
                        platform="telegram",
                        message_id=str(j),
                    )
                    for j in range(i, min(N, i + 2048))
                ]
            )
        t0 = time.time()
        await st.settle()
        print("build", time.time() - t0, await st.indexed_vectors("m"))
        qi = rng.integers(N, size=100)
        W = 7 * 86400.0
        for label, mk in (
            ("no filter", lambda k: None),
            ("window", lambda k: Where(must=(Between("ts", gte=ts[k] - W, lte=ts[k] + W),))),
            (
                "window+not chat",
                lambda k: Where(
                    must=(Between("ts", gte=ts[k] - W, lte=ts[k] + W),),
                    must_not=(AnyOf("chat", (f"telegram:c{chats[k]}",)),),
                ),
            ),
            ("not chat", lambda k: Where(must_not=(AnyOf("chat", (f"telegram:c{chats[k]}",)),))),
        ):
            for payload in (False, True):
                lat = []
                n = 0
                for k in qi:
                    a = time.perf_counter()
                    [r] = await st.query_batch(
                        "m",
                        [Query("text", vecs[k], 64, where=mk(k), min_score=0.35)],
                        payload=["key", "chat", "ts", "story", "story_start", "ents", "terms", "denies"]
                        if payload
                        else False,
                    )
                    lat.append((time.perf_counter() - a) * 1000)
                    n += len(r)
                print(
                    f"{label:18s} payload={payload!s:5s} p50 {np.median(lat):6.2f} p95 {np.percentile(lat, 95):6.2f} found {n / len(qi):.1f}"
                )
        await st.aclose()


asyncio.run(main())
