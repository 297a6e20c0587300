"""Every metric /metrics exposes is listed in docs/deploy.md's table, and the table lists no other."""

from __future__ import annotations

import re
from pathlib import Path

from bot.metrics import Metrics

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"


def _exposed() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        kind = family.type
        names.add(f"{family.name}_total" if kind == "counter" else family.name)
    return names


def test_the_metrics_table_is_the_metrics():
    listed = set(re.findall(r"^\| `(tipline_[a-z_]+)` \|", DOC.read_text(encoding="utf-8"), re.M))
    assert listed == _exposed()
