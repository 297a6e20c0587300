"""Moving collections between vector stores.

- `migrate_legacy_dir`: on the first start of this version, the collections that qdrant-client's local
  mode wrote under `<data>/qdrant` (the embedded store before Qdrant Edge) are copied into the Edge
  store, vectors and payloads as they are, then the old directory is renamed to `qdrant.pre-edge`
  (kept: delete it once satisfied). Each collection is copied whole before the catalog names it, and
  the old directory is renamed only after every collection and alias is in place, so a start that is
  interrupted anywhere finds the old directory as it was and starts over. What the collections' owners
  want beyond the copy happens after, as for any data dir: a fact-check collection from other models
  is re-embedded aside (core/matching/knowledge_base.py), tracked messages get their story fields from SQLite
  (core/corroboration/corroborator.py).
- `copy_store`: every collection and alias of one store into another (`tipline vectors push`: a data
  dir's collections onto a Qdrant server, for people who outgrow one machine).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from storage.vectors import CollectionSpec, Point, Terms, VectorStore, VectorStoreError

log = logging.getLogger(__name__)

BATCH = 512


async def copy_store(source: VectorStore, target: VectorStore, *, replace: bool = False,
                     progress: Any = None) -> dict[str, int]:
    """Copy every physical collection (specs, points, payload indexes) and then the aliases. A
    collection that already exists in `target` is refused unless `replace`. Returns points per
    collection."""
    names = await source.collection_names()
    existing = set(await target.collection_names())
    clash = [n for n in names if n in existing]
    if clash and not replace:
        raise VectorStoreError(f"the target already has {', '.join(clash)}; pass --replace to overwrite")
    copied: dict[str, int] = {}
    for name in names:
        spec = await source.spec_of(name)
        assert spec is not None
        if name in existing:
            await target.delete_collection(name)
        await target.create_collection(name, spec)
        n = 0
        async for records in source.scroll(name, payload=True, vectors=True, batch=BATCH):
            await target.upsert(name, [Point(r.id, r.dense, r.payload, r.sparse) for r in records])
            n += len(records)
            if progress:
                progress(name, n)
        copied[name] = n
    for alias, collection in (await source.aliases()).items():
        await target.point_alias(alias, collection)
    await target.settle()
    return copied


def _read_legacy(path: Path) -> tuple[dict[str, CollectionSpec], dict[str, str], Any]:
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(path=str(path))
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise VectorStoreError(f"another tipline process is using {path}; stop it before upgrading") from exc
        raise VectorStoreError(f"cannot read the old vector store at {path}: {exc}") from exc
    specs: dict[str, CollectionSpec] = {}
    for c in client.get_collections().collections:
        params = client.get_collection(c.name).config.params
        dense = {k: v.size for k, v in params.vectors.items()} if isinstance(params.vectors, dict) else {}
        specs[c.name] = CollectionSpec(dense=dense, sparse=tuple(params.sparse_vectors or {}))
    aliases = {a.alias_name: a.collection_name for a in client.get_aliases().aliases}
    return specs, aliases, client


def _legacy_page(client: Any, name: str, offset: Any) -> tuple[list[Point], Any]:
    import numpy as np
    from qdrant_client import models

    points, offset = client.scroll(name, limit=BATCH, offset=offset, with_payload=True, with_vectors=True)
    out = []
    for p in points:
        vec = p.vector if isinstance(p.vector, dict) else {}
        dense = {k: np.asarray(v, dtype=np.float32) for k, v in vec.items() if not isinstance(v, models.SparseVector)}
        sparse = {k: Terms(list(v.indices), list(v.values)) for k, v in vec.items()
                  if isinstance(v, models.SparseVector)}
        out.append(Point(str(p.id), dense, dict(p.payload or {}), sparse))
    return out, offset


async def migrate_legacy_dir(legacy: Path, store: VectorStore) -> dict[str, int]:
    """Copy a qdrant-client local-mode directory into `store` (see the module doc). A no-op when there
    is none. Returns points per collection copied."""
    if not (legacy / "meta.json").exists():
        return {}
    specs, aliases, client = await asyncio.to_thread(_read_legacy, legacy)
    copied: dict[str, int] = {}
    try:
        # Only what an alias points at or a plain collection: a half-built `name__…` is an orphan.
        live = set(aliases.values()) | {n for n in specs if "__" not in n}
        log.warning("moving %d collections from %s into the Qdrant Edge store", len(live), legacy)
        for name in sorted(live):
            if name in await store.collection_names():  # an interrupted earlier attempt
                await store.delete_collection(name)
            await store.create_collection(name, specs[name])
            n, offset = 0, None
            while True:
                points, offset = await asyncio.to_thread(_legacy_page, client, name, offset)
                await store.upsert(name, points)
                n += len(points)
                if offset is None:
                    break
            copied[name] = n
        for alias, target in aliases.items():
            if target in live:
                await store.point_alias(alias, target)
    finally:
        await asyncio.to_thread(client.close)
    done = legacy.with_name(legacy.name + ".pre-edge")
    if done.exists():
        done = legacy.with_name(f"{legacy.name}.pre-edge-{int(time.time())}")
    await asyncio.to_thread(legacy.rename, done)
    log.warning("moved %s into the Qdrant Edge store; the old files are kept in %s (delete them when satisfied)",
                copied, done)
    return copied
