"""Build a Qdrant Edge shard's indexes in a process of its own: `python -m storage.edge_build DIR`.

`EdgeShard.optimize()` holds the GIL for the whole build, so storage/edge_store.py never runs it in the
serving process: it hands a copy of the shard to this process and swaps the result in.
"""

from __future__ import annotations

import sys

import qdrant_edge as qe


def main(path: str) -> int:
    shard = qe.EdgeShard.load(path)
    try:
        shard.optimize()
        shard.flush()
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
