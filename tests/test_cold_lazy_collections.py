"""The embedded vector store loads a collection's shard on first use (storage/edge_store.py): a one-shot
`tipline check` loads the fact-checks and the evidence, not the tracked messages (~0.04 s of CPU for an
empty one, more with every tracked message), while a long-running app loads them all at start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from bot.app import build_app
from bot.check_service import CheckService
from storage.edge_store import EdgeVectorStore
from storage.vectors import CollectionSpec, Point
from tests.conftest import isolated_settings

SPEC = CollectionSpec(dense={"text": 8}, sparse=(), indexes={"chat": "keyword"})


def _points(n: int) -> list[Point]:
    rng = np.random.default_rng(3)
    return [Point(f"00000000-0000-0000-0000-{i:012d}", {"text": v}, {"chat": str(i % 3)})
            for i, v in enumerate(rng.normal(size=(n, 8)).astype(np.float32))]


async def test_a_check_loads_the_collections_it_reads_and_a_bot_loads_all(tmp_path: Path, model_dir: Path,
                                                                         seeded) -> None:
    settings = isolated_settings(seeded.copy_to(tmp_path / "data"), model_dir)
    async with build_app(settings, one_shot=True) as app:
        assert isinstance(app.vectors, EdgeVectorStore)
        assert settings.messages_collection in await app.vectors.collection_names()  # tracked by an earlier bot
        result = await CheckService(app.engine).check("5G towers spread the coronavirus")
        assert result.matches and result.matches[0].tier == "auto"
        assert app.vectors.loaded() == sorted([settings.factchecks_collection, settings.evidence_collection])
    async with build_app(settings) as app:  # `tipline run`: everything at start, so no first message waits
        assert isinstance(app.vectors, EdgeVectorStore)
        assert app.vectors.loaded() == await app.vectors.collection_names()
        assert settings.messages_collection in app.vectors.loaded()


async def test_first_uses_at_once_load_a_shard_once_and_see_the_same_points(tmp_path: Path) -> None:
    store = await EdgeVectorStore.open(tmp_path / "edge", dim=8)
    await store.create_collection("messages", SPEC)
    await store.create_collection("other", SPEC)
    await store.upsert("messages", _points(40))
    await store.point_alias("tracked", "messages")
    await store.aclose()

    store = await EdgeVectorStore.open(tmp_path / "edge", dim=8)
    try:
        assert store.loaded() == []
        # Edge refuses a second load of an open shard (its WAL is locked): without the per-collection lock
        # these first uses would fail, not just load it twice.
        counts = await asyncio.gather(*(store.count(n) for n in ["messages", "tracked"] * 4))
        assert counts == [40] * 8 and store.loaded() == ["messages"]
        await store.delete_collection("other")  # never loaded: its files go all the same
        assert await store.collection_names() == ["messages"]
        assert not (tmp_path / "edge" / "collections" / "other").exists()
    finally:
        await store.aclose()
    store = await EdgeVectorStore.open(tmp_path / "edge", dim=8)
    try:
        await store.maintain()  # a long-running app's start
        assert store.loaded() == ["messages"]
        assert len([r async for batch in store.scroll("tracked") for r in batch]) == 40
    finally:
        await store.aclose()
