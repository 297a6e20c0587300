"""The TTL cache on the real SQLite `cache` table, and its keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evidence.resilience import FakeClock
from storage.cache import TTLCache, cache_key, normalise_query
from storage.sqlite import Database


@pytest.fixture
async def db(tmp_path: Path):
    d = await Database.open(tmp_path / "cache.sqlite3")
    yield d
    await d.close()


def test_keys_normalise_the_query():
    assert normalise_query("  Vaccines\tCAUSE\n\nautism ") == "vaccines cause autism"
    assert normalise_query("ﬁve Ｘ") == "five x"  # NFKC: ligature and full-width letters
    assert cache_key("gdelt", "Vaccines  cause X") == cache_key("gdelt", "vaccines cause x")
    assert cache_key("gdelt", "a", limit=5, lang="en") == cache_key("gdelt", "a", lang="en", limit=5)
    assert cache_key("gdelt", "a") != cache_key("brave", "a")
    assert cache_key("gdelt", "a", limit=5) != cache_key("gdelt", "a", limit=6)
    assert cache_key("gdelt", ["a", "b"]) != cache_key("gdelt", ["b", "a"])
    assert cache_key("gdelt", "a b") != cache_key("gdelt", ["a", "b"])
    assert cache_key("gdelt", "a").startswith("gdelt:")


async def test_get_set_expire_purge(db: Database):
    clock = FakeClock(start=1_700_000_000.0)
    cache = TTLCache(db, clock=clock)
    assert await cache.get("k") is None
    await cache.set("k", '{"x": 1}', ttl_s=60)
    await cache.set("short", "v", ttl_s=5)
    assert await cache.get("k") == '{"x": 1}'
    assert await cache.count() == 2
    clock.advance(5)
    assert await cache.get("short") is None  # expired rows are never served, even before a purge
    assert await cache.get("k") == '{"x": 1}'
    await cache.set("k", "new", ttl_s=60)  # overwrite refreshes value and expiry
    clock.advance(58)
    assert await cache.get("k") == "new"
    assert await cache.purge_expired() == 1
    assert await cache.count() == 1
    await cache.set("zero", "v", ttl_s=0)
    assert await cache.get("zero") is None
    await cache.delete("k")
    assert await cache.get("k") is None


async def test_entries_survive_a_reopen(tmp_path: Path):
    path = tmp_path / "persist.sqlite3"
    clock = FakeClock(start=1_700_000_000.0)
    first = await Database.open(path)
    await TTLCache(first, clock=clock).set("k", "v", ttl_s=100)
    await first.close()
    second = await Database.open(path)
    try:
        assert await TTLCache(second, clock=clock).get("k") == "v"
    finally:
        await second.close()
