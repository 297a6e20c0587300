"""The composition root's one choice of vector backend (bot/app.py calls this once).

A Qdrant server when a URL is configured, else Qdrant Edge in the data dir; a data dir written by
qdrant-client's local mode (the embedded store before Edge) is moved over on the first start.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from storage.edge_store import EdgeVectorStore
from storage.vector_migration import copy_store, migrate_legacy_dir
from storage.vectors import VectorStore, VectorStoreError

# storage.qdrant_remote is imported only when a server is configured: qdrant_client costs ~1.1 s of
# CPU to import (its pydantic models), which every cold `tipline check` on Qdrant Edge paid for
# nothing.


async def open_vector_store(*, dim: int, multi_dim: int | None = None, use_dim: int | None = None,
                            path: Path | None = None,
                            url: str | None = None, api_key: str | None = None,
                            legacy_path: Path | None = None, load_all: bool = True) -> VectorStore:
    """`load_all=False` (a one-shot check): the embedded store loads each collection on its first use and
    starts no index build, instead of loading every collection now (storage/edge_store.py)."""
    if url:
        from storage.qdrant_remote import RemoteVectorStore

        return await RemoteVectorStore.connect(url, api_key=api_key, dim=dim, multi_dim=multi_dim, use_dim=use_dim)
    if path is None:
        raise VectorStoreError("no vector store configured: set TIPLINE_DATA_DIR or TIPLINE_QDRANT_URL")
    store = await EdgeVectorStore.open(path, dim=dim, multi_dim=multi_dim, use_dim=use_dim)
    try:
        if legacy_path is not None:
            await migrate_legacy_dir(legacy_path, store)
        if load_all:
            await store.maintain()
    except BaseException:
        await store.aclose()
        raise
    return store


async def push_to_server(path: Path, url: str, *, api_key: str | None = None, legacy_path: Path | None = None,
                         replace: bool = False, progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Copy a data dir's collections (and aliases) onto a Qdrant server: `tipline vectors push`, for
    people who outgrow one machine. Then set TIPLINE_QDRANT_URL to use the server. The data dir is
    left as it was. Returns points per collection."""
    # The dimensions only shape new fact-check collections; copying takes each collection's own.
    source = await open_vector_store(dim=1, path=path, legacy_path=legacy_path)
    from storage.qdrant_remote import RemoteVectorStore

    try:
        target = await RemoteVectorStore.connect(url, api_key=api_key, dim=1)
        try:
            return await copy_store(source, target, replace=replace, progress=progress)
        finally:
            await target.aclose()
    finally:
        await source.aclose()
