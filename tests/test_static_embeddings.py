"""StaticEmbedder: the table distilled from the real ONNX model (no mocks).

The distillation runs once per session (~20–25 s on 2 cores: 29,527 vocabulary ids through MiniLM), into
the session's temporary model dir; every test after that loads the cached .npy.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from core.static_embeddings import StaticEmbedder


@pytest.fixture(scope="session")
def static(model_dir: Path) -> StaticEmbedder:
    return StaticEmbedder(model_dir)


def test_vectors_are_normalised_and_deterministic(static: StaticEmbedder) -> None:
    texts = ["The vaccine causes autism", "Stock markets fell sharply on Monday", "Kyiv was shelled overnight"]
    a = static.embed_sync(texts)
    b = static.embed_sync(list(reversed(texts)))[::-1]
    assert a.dtype == np.float32 and a.shape == (3, static.dim)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a, b)  # independent of batch order and of earlier calls
    np.testing.assert_array_equal(a, asyncio.run(static.embed(texts)))


def test_similar_sentences_score_above_unrelated(static: StaticEmbedder) -> None:
    v = static.embed_sync([
        "COVID-19 vaccines cause autism in children",
        "Children get autism from the coronavirus vaccine",
        "The central bank raised interest rates by half a point",
        "Russian missiles hit a power plant near Kharkiv",
        "A missile strike on a Kharkiv power station, Russia attacks",
    ])
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert sims[3, 4] > sims[3, 2] + 0.2
    assert sims[0, 1] > sims[0, 3]


def test_odd_input_does_not_crash(static: StaticEmbedder) -> None:
    texts = ["", "   ", "😀🔥🙏", "Путин заявил, что Киев готов к переговорам", "a" * 10_000,
             "word " * 2_000 + "vaccine", "[CLS] [SEP] [MASK] [UNK]", "\x00\u200b\ufeff"]
    v = static.embed_sync(texts)
    assert v.shape == (len(texts), static.dim) and np.isfinite(v).all()
    norms = np.linalg.norm(v, axis=1)
    # text with no known token (empty, emoji, one 10k-char "word" = [UNK], special tokens) is the zero
    # vector, cosine 0 with everything; the rest is unit length
    for text, n in zip(texts, norms):
        assert n == pytest.approx(1.0, abs=1e-5) or n == 0.0, text[:40]
    assert norms[0] == 0.0 and norms[2] == 0.0 and norms[6] == 0.0
    assert norms[3] == pytest.approx(1.0, abs=1e-5) and norms[5] == pytest.approx(1.0, abs=1e-5)
    assert static.embed_sync([]).shape == (0, static.dim)


def test_cache_file_is_reused(static: StaticEmbedder, model_dir: Path) -> None:
    path = static.cache_path
    assert path.parent == model_dir and path.name.startswith("static-") and path.suffix == ".npy"
    mtime = path.stat().st_mtime_ns
    again = StaticEmbedder(model_dir)
    assert again.cache_path == path and again.build_seconds is None  # loaded, not distilled
    assert path.stat().st_mtime_ns == mtime
    text = ["Floods in Pakistan displaced millions"]
    np.testing.assert_array_equal(again.embed_sync(text), static.embed_sync(text))
