"""Build a Qdrant Edge shard's indexes in a process of its own:
`python -m storage.edge_build DIR [--threads N --spec JSON]`.

`EdgeShard.optimize()` holds the GIL for the whole build, so storage/edge_store.py never runs it in the
serving process: it hands a copy of the shard to this process and swaps the result in. `--threads` (with
the collection's `--spec`, from which the engine settings are rebuilt) builds the graph on more threads
than the one a background build uses.
"""

from __future__ import annotations

import argparse
import json
import sys

import qdrant_edge as qe


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="storage.edge_build")
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--spec", help='{"dense": {field: dim}, "sparse": [field], "optimize_at": n}')
    args = parser.parse_args(argv)
    config = None
    if args.threads > 1 and args.spec:
        from storage.edge_store import shard_config

        spec = json.loads(args.spec)
        config = shard_config(dict(spec["dense"]), list(spec["sparse"]), int(spec["optimize_at"]),
                              threads=args.threads, unindexed=spec.get("unindexed", ()))
    shard = qe.EdgeShard.load(args.path, config)
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
