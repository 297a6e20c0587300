"""Another embedding model of the same dimension (TIPLINE_EMBED_URL pointed at another 384-d model): the
tracked messages are embedded again from SQLite, so stories never compare vectors of two models. (The
fact-checks' side: tests/test_remote_embeddings.py.) Real SQLite, Qdrant Edge, the real model behind a fake
OpenAI-compatible embeddings server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import build_app
from core.encoders.embeddings import Embedder
from core.encoders.remote_embeddings import RemoteEmbedder
from core.corroboration.corroborator import Corroborator, TrackedMessage
from storage.message_vectors import MessageVectors
from tests.conftest import isolated_settings
from tests.fakes.embeddings_api import FakeEmbeddings

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
PORT = ("Grain ship hit by a drone in the port of Odesa overnight, crew evacuated",
        "Drone struck a grain ship in Odessa port overnight; the crew was evacuated")


@pytest.fixture
async def server(model_dir: Path) -> AsyncIterator[FakeEmbeddings]:
    fake = await FakeEmbeddings(embedder=Embedder(model_dir=model_dir, workers=1)).start()
    yield fake
    await fake.stop()


async def test_tracked_messages_are_embedded_again_for_another_model(server: FakeEmbeddings, tmp_path: Path,
                                                                    model_dir: Path) -> None:
    async with build_app(isolated_settings(tmp_path / "data", model_dir), seed=False) as app:
        c = app.corroborator
        assert c is not None and c.multilingual is not None
        chats = []
        for k in range(3):
            cid = f"-100{k:06d}"
            await c.store.set_flag("telegram", cid, "tracking", True, by=1, kind="channel", handle=f"@chan{k}")
            chats.append(cid)

        def vectors() -> MessageVectors:
            return MessageVectors(app.vectors, "messages_models", multi_dim=c.multilingual.dim)

        first = Corroborator(c.store, vectors(), app.embedder, multilingual=c.multilingual)
        await first.open()
        for i, (chat, text) in enumerate(zip(chats, PORT)):
            await first.ingest(TrackedMessage("telegram", chat, str(i + 1), text, NOW - timedelta(hours=2 - i),
                                              author="@chan", permalink=f"https://t.me/chan/{i + 1}"))

        remote = await asyncio.to_thread(RemoteEmbedder.connect, server.base_url, "another-384d-model",
                                         backoff_s=0.01, timeout_s=10.0)
        try:
            seen = len(server.requests)
            second = Corroborator(c.store, vectors(), remote, multilingual=c.multilingual)
            await second.open()
            embedded = [t for r in server.requests[seen:] for t in r["input"]]
            assert sorted(embedded) == sorted(PORT)  # both stored messages, embedded again by the new model
            assert await second.vectors.count() == 2
            found = await second.lookup(PORT[1], exclude_chats=[("telegram", chats[2])], at=NOW)
            assert found is not None and {i.chat_id for i in found.items} >= {chats[0]}

            seen = len(server.requests)
            third = Corroborator(c.store, vectors(), remote, multilingual=c.multilingual)
            await third.open()
            assert len(server.requests) == seen  # the same models: nothing embedded again
        finally:
            await remote.aclose()
