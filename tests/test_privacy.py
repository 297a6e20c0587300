"""Privacy: TIPLINE_OFFLINE turns every outbound provider off, and the card says "offline mode" only when
nothing left the machine, naming GDELT (on by default) and the other outside services otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.terminal_card import render_card
from bot.app import build_app
from bot.render import to_reply
from bot.settings import OUTBOUND, Settings
from schema.models import Result, SourceTrace, Verdict
from tests.conftest import SeededDataDir, isolated_settings, model_cache
from tests.fakes.search_api import FakeSearchAPI, gdelt_article

CLAIM = "The Eiffel Tower was sold for scrap metal in 2023 by the city of Paris"


def _result(*sources: str, mode: str = "offline", language: str = "en") -> Result:
    return Result(id="abc123", text=CLAIM, language=language, verdict=Verdict.NOT_ENOUGH_EVIDENCE, label="Not enough evidence",
                  confidence=0.0, reasoning="", mode=mode,  # type: ignore[arg-type]
                  sources=[SourceTrace(source=s, ok=True, ms=1.0, found=1) for s in sources])


def _footer(result: Result) -> str:
    return render_card(to_reply(result)).splitlines()[-1]


def test_offline_switches_off_every_outbound_setting_whatever_else_is_set(tmp_path: Path, model_dir: Path) -> None:
    s = isolated_settings(tmp_path, model_dir, offline=True, llm_base_url="http://llm.example/v1",
                          llm_api_key="sk-x", searxng_url="http://searx.example", brave_api_key="b",
                          gdelt_url="https://api.gdeltproject.org/api/v2/doc/doc", factcheck_api_key="f",
                          max_links=3, feeds=["https://example.org/feed.json"],
                          qdrant_url="http://qdrant:6333", embed_url="http://tei:80/v1")
    for name, off in OUTBOUND.items():
        assert getattr(s, name) == off, name
    # your own servers are part of the deployment, not outside services
    assert s.qdrant_url == "http://qdrant:6333" and s.embed_url == "http://tei:80/v1"


def test_offline_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIPLINE_OFFLINE", "true")
    monkeypatch.setenv("TIPLINE_GDELT_URL", "https://api.gdeltproject.org/api/v2/doc/doc")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.offline and s.gdelt_url is None and s.max_links == 0


def test_the_card_says_offline_mode_only_when_nothing_left_the_machine() -> None:
    assert _footer(_result("knowledge", "evidence_index")).endswith("· offline mode")
    assert _footer(_result("knowledge", "gdelt")).endswith("· no language model · sent to GDELT")
    assert _footer(_result("gdelt", "searxng", "links")).endswith(
        "· sent to GDELT, SearxNG, the linked sites")
    assert _footer(_result("brave", mode="llm")).endswith("· LLM mode · sent to Brave Search")
    assert _footer(_result("gdelt", language="ru")).endswith("· без языковой модели · отправлено в GDELT")
    assert _footer(_result("some_new_provider")).endswith("· sent to some_new_provider")  # unknown = outside
    no_links = _result("knowledge")
    no_links.sources.append(SourceTrace(source="links", ok=True, ms=0.1, found=0))  # the message had none
    assert _footer(no_links).endswith("· offline mode")


async def test_without_an_llm_a_configured_gdelt_is_not_asked_and_offline_nothing_is(tmp_path: Path,
                                                                                      model_dir: Path) -> None:
    """Without an LLM web results would be listed, never judged: GDELT, though configured, gets nothing
    and the check does not wait on it; the linked page is not fetched either."""
    search = await FakeSearchAPI().start()
    search.gdelt_articles.append(gdelt_article("https://news.example.org/eiffel", "Eiffel Tower sold for scrap"))
    gdelt = search.url("/gdelt/api/v2/doc/doc")
    try:
        configured = isolated_settings(tmp_path / "a", model_dir, gdelt_url=gdelt, provider_retries=0,
                                       seed_on_start=False, fetch_allow_hosts=["127.0.0.1"])
        async with build_app(configured) as app:
            assert app.sources is not None and "gdelt" in app.sources.names
            asked = await app.engine.check(CLAIM + " " + search.url("/page"))
        assert search.requests == []
        assert _footer(asked).endswith("· offline mode")

        offline = isolated_settings(tmp_path / "b", model_dir, offline=True, gdelt_url=gdelt,
                                    seed_on_start=False)
        async with build_app(offline) as app:
            assert app.sources is not None and app.sources.names == ["knowledge", "evidence_index"]
            private = await app.engine.check(CLAIM + " https://news.example.org/eiffel")
        assert search.requests == []
        assert _footer(private).endswith("· offline mode")
    finally:
        await search.stop()


def test_tipline_chat_says_offline_mode_only_when_no_provider_is_on(tmp_path: Path, model_dir: Path,
                                                                    seeded: SeededDataDir) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    base = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    base.update({"TIPLINE_DATA_DIR": str(seeded.copy_to(tmp_path / "data")), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                 "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)), "PYTHONPATH": str(root)})

    def ready(**env: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "adapters.main", "chat"], input="", capture_output=True,
                              text=True, cwd=tmp_path, env={**base, **env}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return next(line for line in proc.stderr.splitlines() if line.startswith("Ready:"))

    # No search provider is on by default; one configured without an LLM is never asked
    assert ", offline mode. Type" in ready()
    assert ", offline mode. Type" in ready(TIPLINE_GDELT_URL="http://127.0.0.1:9/gdelt")
    assert ", offline mode. Type" in ready(TIPLINE_OFFLINE="true")
