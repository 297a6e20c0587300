"""The default embedding model (all-MiniLM-L6-v2, int8 ONNX) run with onnxruntime and tokenizers directly.

Why not fastembed here: importing fastembed costs ~0.36 s of CPU (it pulls in its image models,
huggingface_hub and requests), and it builds a fresh optimised graph on every start (~0.25 s per
session). A cold `tipline check` paid both. This module does what fastembed's
`TextEmbedding` does for this model, step for step (tokenizer set-up as in
`fastembed.common.preprocessor_utils.load_tokenizer`, mean pooling over the attention mask in float64,
L2 normalisation), and `tests/test_onnx_text.py` checks the vectors against fastembed's.

The optimised graph is cached next to the model: onnxruntime writes it once
(`SessionOptions.optimized_model_filepath`, its weights in a separate file that later starts map instead
of reading) and later starts load it with optimisation off: 0.05 s of CPU per session instead of 0.24 s,
and ~160 MB less RSS. The cache is saved at ORT_ENABLE_EXTENDED, the highest level onnxruntime calls
portable (ENABLE_ALL adds layout changes for this CPU); the int8 weights are stored dequantised (90 MB
on disk beside the 23 MB model). Its name carries the onnxruntime version and the model's size and
mtime, so an upgrade or a new model file builds a new one instead of loading a stale graph.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "model.data"


def load_tokenizer(model_dir: Path) -> Any:
    """tokenizer.json with truncation, special tokens and batch-longest padding set as fastembed does."""
    from tokenizers import AddedToken, Tokenizer

    tok_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    config_path = model_dir / "config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    special_path = model_dir / "special_tokens_map.json"
    special = json.loads(special_path.read_text()) if special_path.is_file() else {}
    limits = [v for v in (tok_config.get("model_max_length"), tok_config.get("max_length"))
              if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**63 - 1]
    if not limits:
        raise ValueError(f"no maximum context length in {model_dir / 'tokenizer_config.json'}")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(max_length=min(limits),
                                direction=tok_config.get("truncation_side") or truncation.get("direction", "right"))
    for value in special.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tok_config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"no pad token for {model_dir}")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.enable_padding(direction=tok_config.get("padding_side") or padding.get("direction", "right"),
                             pad_id=pad_id, pad_type_id=padding.get("pad_type_id", 0), pad_token=pad_token,
                             pad_to_multiple_of=padding.get("pad_to_multiple_of"), length=None)
    return tokenizer


def optimised_path(model: Path) -> Path:
    """The cached optimised graph of `model`: a directory holding `model.onnx` and its weights `model.data`."""
    import onnxruntime as ort

    st = model.stat()
    return model.with_name(f"{model.stem}.opt-ort{ort.__version__}-{st.st_size}-{int(st.st_mtime)}")


def part_path(cached: Path) -> Path:
    return cached.with_name(f"{cached.name}.{os.getpid()}.part")


def open_session(model: Path, threads: int = 1) -> Any:
    """An onnxruntime session, from the cached optimised graph when there is one (else built and cached)."""
    import onnxruntime as ort

    def options(level: Any) -> Any:
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = threads
        return so

    cached = optimised_path(model)
    providers = ["CPUExecutionProvider"]
    if (cached / MODEL_FILE).is_file():
        try:
            return ort.InferenceSession(str(cached / MODEL_FILE), options(ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                                        providers=providers)
        except Exception:  # a damaged cache: build it again below
            log.warning("the cached optimised model %s could not be loaded; rebuilding it", cached, exc_info=True)
            shutil.rmtree(cached, ignore_errors=True)
    so = options(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    # The weights go to a file of their own, which onnxruntime maps instead of reading: loading the cache
    # then costs 0.05 s of CPU and ~100 MB less RSS than a graph with its 90 MB of weights inside (0.19 s).
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS_FILE)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    # Built in a private directory, then renamed: two processes starting at once never read half a cache.
    tmp = part_path(cached)
    try:
        tmp.mkdir()
        so.optimized_model_filepath = str(tmp / MODEL_FILE)
        session = ort.InferenceSession(str(model), so, providers=providers)
        try:
            tmp.rename(cached)
        except OSError:  # another process got there first; theirs is as good
            pass
    except Exception:  # e.g. a read-only model dir (onnxruntime raises its own Fail): run without the cache
        log.info("could not cache the optimised model next to %s", model, exc_info=True)
        session = ort.InferenceSession(str(model), options(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
                                       providers=providers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return session


class OnnxTextModel:
    """One single-threaded session and its tokenizer: `embed(texts)` -> mean-pooled, L2-normalised float32."""

    def __init__(self, model_dir: Path, threads: int = 1):
        self.tokenizer = load_tokenizer(model_dir)
        self.session = open_session(model_dir / MODEL_FILE, threads)
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self.inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(hidden.dtype, copy=False)
