"""Smoke test of `tools/measure_reply_window.py` (the window figure in docs/reliability.md): a short run with
the fake Bot API on its own thread; with a delay no offline check reaches, every first reply is the card
itself (so a kill in its window would double it, not orphan a placeholder), and both rates are reported."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from tests.conftest import SeededDataDir, model_cache

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("measure_reply_window", ROOT / "tools" / "measure_reply_window.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.asyncio
async def test_measure_reply_window_runs_and_splits_by_first_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                      model_dir: Path, seeded: SeededDataDir):
    for key in [k for k in __import__("os").environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)  # the tool builds its Settings from the environment
    # On a copy of the worker's seeded data dir: 3.5 CPU-s, not 13.5 seeding a new one (the window does not need it).
    out = await _tool().main(messages=8, workers=2, fake_thread=True, progress_after=60.0,
                             data_dir=seeded.copy_to(tmp_path / "data"), model_dir=model_dir,
                             model_cache_dir=model_cache(model_dir))
    assert out["first_message_was_the_card"] == 8 and out["first_message_was_a_placeholder"] == 0
    assert out["applied_to_journal"]["n"] == 8
    assert out["orphan_rate_per_killed_check_placeholders"] == 0
    assert math.isfinite(out["double_rate_per_killed_check_cards"]) and out["double_rate_per_killed_check_cards"] > 0
