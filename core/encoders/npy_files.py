"""Reading .npy/.npz files while other threads may be reading them too.

`np.load` parses each array's header with `ast.literal_eval`. On CPython 3.11 the AST constructor keeps
its recursion depth in per-interpreter state, so two threads parsing at once (a garbage collection in one
can switch to the other mid-parse) can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). It happened in the suite when `bot/app.py` loaded MiniLM, e5 and USE in three
threads at once. So every header this program reads goes through one lock: the reads are a few per
start, and the arrays themselves are read or mapped after it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# One per process: the state it guards (the interpreter's AST recursion depth) is one per process too.
_HEADERS = threading.Lock()


def read_arrays(path: Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file, read into memory (no pickles)."""
    with _HEADERS, np.load(path, allow_pickle=False) as f:
        return {name: np.asarray(f[name]) for name in names}


def map_array(path: Path) -> np.ndarray:
    """An .npy file mapped read-only, as a plain ndarray view (np.memmap's subclass would ride along
    into results)."""
    with _HEADERS:
        return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
