"""core/encoders/vector_memo.py: the memo behind every text model's cache."""

from __future__ import annotations

import numpy as np

from core.encoders.vector_memo import VectorMemo


def test_known_answers_only_when_every_key_is_remembered():
    memo: VectorMemo[str] = VectorMemo(size=2)
    memo.remember(["a", "b"], np.eye(2, dtype=np.float32))
    assert memo.known(["c"]) is None and memo.known(["a", "c"]) is None
    rows = memo.known(["b", "a", "b"])
    assert rows is not None and rows.dtype == np.float32
    assert np.array_equal(rows, [[0, 1], [1, 0], [0, 1]])
    # known() marks what it answered as recently used: "a" (asked after "b") outlives "b".
    memo.known(["b"])
    memo.known(["a"])
    memo.remember(["c"], np.ones((1, 2), dtype=np.float32))
    assert memo.known(["b"]) is None and memo.known(["a", "c"]) is not None


def test_vectors_computes_only_the_missing_keys_once():
    memo: VectorMemo[str] = VectorMemo()
    asked: list[list[str]] = []

    def compute(keys: list[str]) -> np.ndarray:
        asked.append(keys)
        return np.array([[float(len(k))] for k in keys], dtype=np.float32)
    memo.remember(["xx"], np.array([[9.0]], dtype=np.float32))
    out = memo.vectors(["xx", "yyy", "yyy", "z"], compute)
    assert asked == [["yyy", "z"]] and out[:, 0].tolist() == [9.0, 3.0, 3.0, 1.0]
