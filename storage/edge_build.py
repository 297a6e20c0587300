"""Build a Qdrant Edge shard's indexes in a process of its own:
`python -m storage.edge_build DIR [--threads N --spec JSON]`.

`EdgeShard.optimize()` holds the GIL for the whole build, so storage/edge_store.py never runs it in the
serving process: it hands a copy of the shard to this process and swaps the result in. `--threads` (with
the collection's `--spec`, from which the engine settings are rebuilt) builds the graph on more threads
than the one a background build uses; the spec's `index_all` (settle) indexes every segment, however small.
`--rewrite SRC` (storage/edge_store.py `purge`): DIR is made anew from the live points of the shard copy SRC,
which is then removed, so nothing of a deleted point is carried over
(neither its payload in a segment nor its write in the write-ahead log).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys

import qdrant_edge as qe


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="storage.edge_build")
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--spec", help='{"dense": {field: dim}, "sparse": [field], "optimize_at": n, '
                        '"indexes": {field: kind}}')
    parser.add_argument("--rewrite", metavar="SRC", help="make PATH anew from the live points of the shard SRC")
    args = parser.parse_args(argv)
    config = None
    spec = json.loads(args.spec) if args.spec else None
    if spec is not None:
        from storage.edge_store import shard_config

        config = shard_config(dict(spec["dense"]), list(spec["sparse"]), int(spec["optimize_at"]),
                              threads=args.threads, unindexed=spec.get("unindexed", ()),
                              index_all=bool(spec.get("index_all", False)))
    if args.rewrite:
        if config is None or spec is None:
            parser.error("--rewrite needs --spec")
        rewrite(args.rewrite, args.path, config, spec.get("indexes", {}))
    shard = qe.EdgeShard.load(args.path, config)
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()
    return 0


def rewrite(source: str, path: str, config: qe.EdgeConfig, indexes: dict[str, str], batch: int = 1024) -> None:
    """A new shard at `path` with `source`'s live points (ids, vectors, payloads) and payload indexes; then
    `source` is removed."""
    from storage.edge_store import _INDEX_KINDS

    src = qe.EdgeShard.load(source)
    try:
        dst = qe.EdgeShard.create(path, config)
        try:
            for name, kind in indexes.items():
                dst.update(qe.UpdateOperation.create_field_index(name, _INDEX_KINDS[kind]))  # type: ignore[index]
            offset = None
            while True:
                records, offset = src.scroll(qe.ScrollRequest(offset=offset, limit=batch, with_payload=True,
                                                              with_vector=True))
                if records:
                    dst.update(qe.UpdateOperation.upsert_points([
                        qe.Point(r.id if isinstance(r.id, int) else str(r.id), r.vector, r.payload or {})
                        for r in records if r.vector is not None]))
                if offset is None:
                    break
            dst.flush()
        finally:
            dst.close()
    finally:
        src.close()
    shutil.rmtree(source, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
