"""Smoke test of tools/lookup_quality.py (docs/architecture.md): on tests/data/bench_clef's signed tweets,
the shark and bicycle stories are each told by two accounts a day apart, and the lookup from either account
must show the other; tweets whose claim no other account tweeted must show nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[1]


def test_lookup_quality_tool_on_the_small_clef_set(model_dir: Path) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "lookup_quality.py"), "--data",
                          str(ROOT / "tests" / "data" / "bench_clef")], capture_output=True, text=True, timeout=300,
                         check=True, env=subprocess_env(model_dir), cwd=ROOT).stdout
    m = re.search(r"(\d+) tweets stored; (\d+) with another account's tweet of the same claim within 7 days: "
                  r"([\d.]+) show a right chat, precision of the (\d+) chats shown ([\d.]+); (\d+) without: ([\d.]+) "
                  r"show a chat; lookup p50 [\d.]+ ms", out)
    assert m, out
    stored, partnered, hit, shown, precision, alone, false = m.groups()
    assert int(stored) == 16 and int(partnered) == 6 and int(alone) == 6
    assert float(hit) == 1.0 and float(precision) == 1.0 and int(shown) == 6
    assert float(false) == 0.0
