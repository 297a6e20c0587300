"""Static (model2vec-style) text embeddings distilled from the bundled MiniLM ONNX model.

A transformer embedding costs ~10–25 ms of CPU per text; a static embedding is a table lookup: every
WordPiece token of the MiniLM vocabulary gets one fixed vector, and a text's vector is the (weighted)
mean of its tokens' vectors, L2-normalised. The table is distilled once from the real model
(`distill_token_vectors`):

1. every vocabulary id except [PAD] and [unusedN] is run through the ONNX model as "[CLS] token [SEP]"
   (onnxruntime directly, batches of 1024 inputs of length 3) and the last hidden state is mean-pooled
   over the 3 positions: one 384-d vector per token;
2. post-processing (`post_process`): optional PCA (numpy SVD of the centred scatter matrix) and a frequency
   weighting from the token rank (the vocabulary id, as model2vec does):
   - "sif": w = a / (a + p(rank)), p ∝ 1/(rank + 2) (Zipf); a = 1e-4 is model2vec's default, a smaller
     a down-weights frequent tokens more;
   - "zipf": w = log(1 + rank) — older model2vec;
   - "none".

The finished matrix is cached next to the model as `static-<key>.npy` (key: model.onnx and
tokenizer.json size and mtime, the variant and FORMAT_VERSION), built once and `np.load`ed afterwards.
`data/` is git-ignored, so the cache is never committed.

Text with no known token (empty, only emoji, only [UNK]) gets the zero vector: cosine 0 with everything,
rather than a made-up direction that would make two emoji-only messages "the same story".

The public surface matches `core.embeddings.Embedder` (`embed_sync`, `embed`, `dim`, `model_name`).
Measured against MiniLM in tools/measure_static_embeddings.py, and not used by the product: it was clearly worse
at both jobs it was meant for (docs/benchmarks.md, "A cheaper embedding, measured").
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

FORMAT_VERSION = "1"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
WEIGHTINGS = ("none", "sif", "zipf")
MAX_TOKENS = 512
DISTILL_BATCH = 1024
# The variant chosen on the train splits only (tools/measure_static_embeddings.py sweeps PCA none/384/256/128
# × none/zipf/sif 1e-3/1e-4/1e-5 and keeps the best mean of train same-story F1 and train CLIMATE-FEVER
# recall@5, dense and BM25 hybrid): PCA 256 with SIF 1e-5 (.671/.215/.350 vs model2vec's 1e-4 .635/.200/.346).
DEFAULT_PCA_DIMS: int | None = 256
DEFAULT_WEIGHTING = "sif"
DEFAULT_SIF_COEFFICIENT = 1e-5

_UNUSED = re.compile(r"^\[unused\d+\]$")


def _tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / TOKENIZER_FILE))
    tok.no_padding()  # tokenizer.json pads to 128: the static model wants every text's own tokens only
    tok.enable_truncation(MAX_TOKENS)
    return tok


def vocabulary_mask(model_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """(distill, use): `distill` = ids that get a vector (all but [PAD] and [unusedN]);
    `use` = ids that count in a sentence (also not [UNK], [CLS], [SEP], [MASK])."""
    tok = _tokenizer(model_dir)
    vocab = tok.get_vocab(with_added_tokens=True)
    size = max(vocab.values()) + 1
    distill = np.zeros(size, dtype=bool)
    use = np.zeros(size, dtype=bool)
    special = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    for token, i in vocab.items():
        if token == "[PAD]" or _UNUSED.match(token):
            continue
        distill[i] = True
        use[i] = token not in special
    return distill, use


def distill_token_vectors(model_dir: Path, batch_size: int = DISTILL_BATCH,
                          threads: int | None = None) -> np.ndarray:
    """One raw 384-d vector per vocabulary id (zero rows for ids not distilled): "[CLS] tok [SEP]"
    through the ONNX model, last hidden state mean-pooled over the 3 positions."""
    import onnxruntime as ort

    model_dir = Path(model_dir)
    tok = _tokenizer(model_dir)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    distill, _ = vocabulary_mask(model_dir)
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(model_dir / MODEL_FILE), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    ids = np.flatnonzero(distill)
    out: np.ndarray | None = None
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        x = np.empty((len(chunk), 3), dtype=np.int64)
        x[:, 0], x[:, 1], x[:, 2] = cls_id, chunk, sep_id
        feed = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)}
        hidden = sess.run(None, {k: v for k, v in feed.items() if k in names})[0]
        if out is None:
            out = np.zeros((len(distill), hidden.shape[-1]), dtype=np.float32)
        out[chunk] = hidden.mean(axis=1)
    assert out is not None, "empty vocabulary"
    return out


def post_process(raw: np.ndarray, distill: np.ndarray, pca_dims: int | None = DEFAULT_PCA_DIMS,
                 weighting: str = DEFAULT_WEIGHTING, sif_coefficient: float = DEFAULT_SIF_COEFFICIENT) -> np.ndarray:
    """PCA (centred, numpy SVD; `pca_dims` None = keep the raw vectors uncentred) then the rank
    weighting. Rows of ids not distilled stay zero."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown weighting {weighting!r} (one of {WEIGHTINGS})")
    x = raw[distill].astype(np.float64)
    if pca_dims is not None:
        x = x - x.mean(axis=0)
        # principal axes = singular vectors of the d×d scatter matrix (same as an SVD of x, ~20× faster)
        u, _, _ = np.linalg.svd(x.T @ x)
        x = x @ u[:, :min(pca_dims, u.shape[1])]
    rank = np.arange(len(raw), dtype=np.float64)
    if weighting == "sif":
        inv = 1.0 / (rank + 2.0)
        p = inv / inv.sum()
        w = sif_coefficient / (sif_coefficient + p)
    elif weighting == "zipf":
        w = np.log1p(rank)
    else:
        w = np.ones(len(raw))
    out = np.zeros((len(raw), x.shape[1]), dtype=np.float32)
    out[distill] = (x * w[distill, None]).astype(np.float32)
    return out


def variant_name(pca_dims: int | None, weighting: str, sif_coefficient: float = DEFAULT_SIF_COEFFICIENT) -> str:
    return f"pca={pca_dims}:" + (f"sif={sif_coefficient:g}" if weighting == "sif" else weighting)


def cache_key(model_dir: Path, variant: str) -> str:
    parts = [FORMAT_VERSION, variant]
    for name in (MODEL_FILE, TOKENIZER_FILE):
        st = (Path(model_dir) / name).stat()
        parts += [name, str(st.st_size), str(st.st_mtime_ns)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


class StaticEmbedder:
    """Embeds texts into L2-normalised float32 vectors with a distilled static token table.

    `cache_dir` (default: the model dir) holds the matrix; `build_seconds` is set when this instance
    had to distil it (None when it was loaded from the cache).
    """

    def __init__(self, model_dir: Path, *, pca_dims: int | None = DEFAULT_PCA_DIMS,
                 weighting: str = DEFAULT_WEIGHTING, sif_coefficient: float = DEFAULT_SIF_COEFFICIENT,
                 cache_dir: Path | None = None, raw: np.ndarray | None = None):
        self.model_dir = Path(model_dir)
        if weighting not in WEIGHTINGS:
            raise ValueError(f"unknown weighting {weighting!r} (one of {WEIGHTINGS})")
        self.pca_dims, self.weighting, self.sif_coefficient = pca_dims, weighting, sif_coefficient
        self.variant = variant_name(pca_dims, weighting, sif_coefficient)
        self._tok = _tokenizer(self.model_dir)
        distill, use = vocabulary_mask(self.model_dir)
        self.cache_path = Path(cache_dir or self.model_dir) / \
            f"static-{cache_key(self.model_dir, self.variant)}.npy"
        self.build_seconds: float | None = None
        if self.cache_path.exists():
            matrix = np.load(self.cache_path)
        else:
            t0 = time.perf_counter()
            if raw is None:  # `raw`: an already distilled table (the measurement tool sweeps variants)
                raw = distill_token_vectors(self.model_dir)
            matrix = post_process(raw, distill, pca_dims, weighting, sif_coefficient)
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_path.with_name(f"{self.cache_path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.npy")
            np.save(tmp, matrix)
            tmp.replace(self.cache_path)  # atomic: a crash never leaves a half-written table behind
            self.build_seconds = time.perf_counter() - t0
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._use = use
        self.dim = int(self._matrix.shape[1])
        self.model_name = f"static:{self.model_dir.name}:{self.variant}"

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tok.encode_batch([t or "" for t in texts], add_special_tokens=False)
        for row, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            ids = ids[self._use[ids]] if ids.size else ids
            if ids.size:
                out[row] = self._matrix[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_sync, list(texts))
