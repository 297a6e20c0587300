"""core/encoders/onnx_text.py runs the default model without fastembed: the vectors must be fastembed's, and the
cached optimised graph must be used, rebuilt when damaged, and never required (read-only model dir)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from core.encoders.embeddings import DEFAULT_MODEL, Embedder
from core.encoders.onnx_text import MODEL_FILE, WEIGHTS_FILE, OnnxTextModel, optimised_path, part_path

TEXTS = ["5G towers spread covid", "Путин сказал, что вакцины опасны", "", " ", "word " * 400,
         "Bill Gates wants to microchip everyone!!! 🙂 https://example.org/a?b=c", "x", "Ще не вмерла України"]


@pytest.fixture
def own_model(tmp_path: Path, model_dir: Path) -> Path:
    """A private copy: the session-wide model dir must not get a cache file from this test's checks."""
    target = tmp_path / "model"
    shutil.copytree(model_dir, target, ignore=shutil.ignore_patterns("*.opt-*"))
    return target


def test_same_vectors_as_fastembed(own_model: Path) -> None:
    from fastembed import TextEmbedding

    model = OnnxTextModel(own_model)
    ours = model.embed(TEXTS)
    theirs = np.asarray(list(TextEmbedding(model_name=DEFAULT_MODEL, specific_model_path=str(own_model),
                                           local_files_only=True, threads=1).embed(TEXTS, batch_size=len(TEXTS))))
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    # One by one (no padding) gives the same vectors as in a padded batch.
    for i, text in enumerate(TEXTS):  # the same session (a new one per text cost 0.8 s of CPU, not 0.2 s)
        assert np.abs(model.embed([text])[0] - theirs[i]).max() < 1e-5


def test_optimised_graph_is_cached_and_reused(own_model: Path) -> None:
    cached = optimised_path(own_model / MODEL_FILE)
    assert not cached.exists()
    first = OnnxTextModel(own_model).embed(TEXTS[:2])
    assert (cached / MODEL_FILE).is_file() and (cached / WEIGHTS_FILE).stat().st_size > 1_000_000
    stamp = (cached / MODEL_FILE).stat().st_mtime_ns
    second = OnnxTextModel(own_model).embed(TEXTS[:2])
    assert (cached / MODEL_FILE).stat().st_mtime_ns == stamp  # loaded, not written again
    assert np.abs(first - second).max() < 1e-6
    assert not list(own_model.glob("*.part"))
    # The cached graph gives fastembed's vectors too (its weights are read from the separate file).
    assert np.abs(second - OnnxTextModel(own_model).embed(TEXTS[:2])).max() < 1e-6


def test_damaged_cache_is_rebuilt(own_model: Path) -> None:
    good = OnnxTextModel(own_model).embed(TEXTS[:1])
    cached = optimised_path(own_model / MODEL_FILE)
    (cached / MODEL_FILE).write_bytes(b"not an onnx graph")
    again = OnnxTextModel(own_model).embed(TEXTS[:1])
    assert np.abs(good - again).max() < 1e-6
    assert (cached / MODEL_FILE).stat().st_size > 1_000


def test_unwritable_cache_runs_without_it(own_model: Path) -> None:
    # A directory where onnxruntime would write the graph: its write fails as on a read-only model dir
    # (a baked image; root ignores chmod, so this is how the suite makes it fail).
    cached = optimised_path(own_model / MODEL_FILE)
    part_path(cached).mkdir()
    vecs = Embedder(DEFAULT_MODEL, model_dir=own_model, workers=1).embed_sync(TEXTS[:2])
    assert vecs.shape == (2, 384)
    assert not cached.exists()
