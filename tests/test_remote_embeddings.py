"""The embeddings-server embedder (core/encoders/remote_embeddings.py) against a fake OpenAI-compatible
/v1/embeddings server backed by the real model: same vectors as in-process, batched, retried, cached,
and a whole check with TIPLINE_EMBED_URL set."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from bot.app import build_app
from core.encoders.embeddings import Embedder, EmbeddingError
from core.encoders.remote_embeddings import RemoteEmbedder
from tests.conftest import SeededDataDir, isolated_settings, model_cache
from tests.fakes.embeddings_api import FakeEmbeddings

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [f"Claim number {i}: the city council voted {i} times on the new bridge" for i in range(70)]


@pytest.fixture(scope="module")
def local(model_dir: Path) -> Embedder:
    return Embedder(model_dir=model_dir, workers=1)


@pytest.fixture
async def server(local: Embedder) -> AsyncIterator[FakeEmbeddings]:
    fake = await FakeEmbeddings(embedder=local, api_key="ek").start()
    yield fake
    await fake.stop()


async def _remote(server: FakeEmbeddings, **kw: object) -> RemoteEmbedder:
    defaults: dict[str, object] = {"api_key": "ek", "batch_size": 32, "backoff_s": 0.01, "timeout_s": 10.0}
    return await asyncio.to_thread(RemoteEmbedder.connect, server.base_url, "all-MiniLM-L6-v2", **{**defaults, **kw})


async def test_same_vectors_as_in_process_batched_and_cached(server: FakeEmbeddings, local: Embedder) -> None:
    remote = await _remote(server)
    try:
        assert remote.dim == local.dim == 384
        server.requests.clear()
        got = await remote.embed(TEXTS)
        assert got.dtype == np.float32 and got.shape == (70, 384)
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # normalised here: the fake sends x3
        assert np.allclose(got, local.embed_sync(TEXTS), atol=1e-5)
        assert [len(r["input"]) for r in server.requests] == [32, 32, 6]
        assert all(r["model"] == "all-MiniLM-L6-v2" and r["encoding_format"] == "float" for r in server.requests)
        # the cache: both paths, no new request; order and duplicates kept
        again = remote.embed_sync([TEXTS[5], TEXTS[1], TEXTS[5]])  # all cached: no request, so no loop needed
        assert len(server.requests) == 3
        assert np.allclose(again, got[[5, 1, 5]])
        remote.clear_cache()
        await remote.embed([TEXTS[0]])
        assert len(server.requests) == 4
    finally:
        await remote.aclose()


async def test_empty_and_odd_texts_are_sent_as_something_the_server_takes(server: FakeEmbeddings) -> None:
    remote = await _remote(server)
    try:
        vecs = await remote.embed(["", "bad \ud800 surrogate", "x" * 20000])
        assert vecs.shape == (3, 384)
        sent = server.requests[-1]["input"]
        assert sent[0] == " " and "\ud800" not in sent[1] and len(sent[2]) == 4096
        assert (await remote.embed([])).shape == (0, 384)
    finally:
        await remote.aclose()


async def test_overloaded_and_rate_limited_answers_are_retried(server: FakeEmbeddings) -> None:
    remote = await _remote(server, retries=3)
    try:
        server.requests.clear()
        server.fail(503, times=2)
        server.fail(429, headers={"Retry-After": "0"})
        vecs = await remote.embed(["a claim to embed after a warm-up"])
        assert vecs.shape == (1, 384) and len(server.requests) == 4
        server.fail(503, times=2)
        # the sync path (evals, benches) from a thread, as they call it; the loop serves the fake meanwhile
        assert (await asyncio.to_thread(remote.embed_sync, ["and the sync path retries too"])).shape == (1, 384)
    finally:
        await remote.aclose()


async def test_a_server_that_stays_down_or_refuses_fails_in_one_sentence(server: FakeEmbeddings) -> None:
    remote = await _remote(server, retries=1)
    try:
        server.fail(503, times=5)
        with pytest.raises(EmbeddingError, match=r"could not be used \(HTTP 503, 2 attempts\); check TIPLINE_EMBED_URL"):
            await remote.embed(["down"])
        server.failures.clear()
        wrong_key = await asyncio.to_thread(RemoteEmbedder, server.base_url, "m", api_key="nope")
        with pytest.raises(EmbeddingError, match=r"refused the request \(HTTP 401: Incorrect API key provided.\)"):
            await wrong_key.embed(["text"])
        await wrong_key.aclose()
        too_big = await _remote(server, batch_size=64)  # past the server's maximum batch: not retried
        server.requests.clear()
        with pytest.raises(EmbeddingError, match="maximum allowed batch size 32"):
            await too_big.embed(TEXTS)
        assert len(server.requests) == 2  # one per batch (64 + 6), none retried
        await too_big.aclose()
    finally:
        await remote.aclose()


async def test_a_check_with_the_embeddings_server(server: FakeEmbeddings, tmp_path: Path, model_dir: Path) -> None:
    settings = isolated_settings(tmp_path / "data", model_dir, embed_url=server.base_url, embed_api_key="ek")
    async with build_app(settings) as app:
        assert isinstance(app.embedder, RemoteEmbedder)
        seen = len(server.requests)
        result = await app.engine.check("5G masts are spreading the coronavirus all over the world")
    assert len(server.requests) > seen  # the message was embedded by the server
    assert result.matches and "5G" in result.matches[0].claim


def test_a_wrong_embeddings_url_fails_the_cli_in_one_sentence(tmp_path: Path, model_dir: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(tmp_path / "data"), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                "TIPLINE_GDELT_URL": "", "TIPLINE_EMBED_URL": f"http://127.0.0.1:{port}/v1", "PYTHONPATH": str(ROOT),
                "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir))})
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "check", "some claim"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"tipline: the embeddings server at http://127.0.0.1:{port}/v1/embeddings could not "
                                   "be used (cannot connect, 4 attempts); check TIPLINE_EMBED_URL and that the "
                                   "server is up")


async def test_another_model_of_the_same_size_re_embeds_the_knowledge_base(server: FakeEmbeddings, tmp_path: Path,
                                                                         model_dir: Path,
                                                                         seeded: SeededDataDir) -> None:
    """Same dimension, other model: the stored vectors belong to another space, so they are embedded again
    (before, only a change of dimension was noticed and searches compared vectors of two models)."""
    data = seeded.copy_to(tmp_path / "data")  # a data dir the local model seeded
    async with build_app(isolated_settings(data, model_dir)) as app:
        n = await app.kb.count()
    seen: list[tuple[int, int]] = []
    remote = isolated_settings(data, model_dir, embed_url=server.base_url, embed_api_key="ek",
                               embed_model="another-384d-model")
    async with build_app(remote, progress=lambda d, t: seen.append((d, t))) as app:
        assert seen and seen[-1] == (n, n)  # every fact-check, embedded by the server
        assert await app.kb.count() == n
        result = await app.engine.check("5G masts are spreading the coronavirus all over the world")
        assert result.matches and "5G" in result.matches[0].claim
    seen.clear()
    async with build_app(remote, progress=lambda d, t: seen.append((d, t))) as app:
        assert not seen  # the same models: nothing to do
    async with build_app(isolated_settings(data, model_dir), progress=lambda d, t: seen.append((d, t))) as app:
        assert seen and seen[-1] == (n, n)  # and back
