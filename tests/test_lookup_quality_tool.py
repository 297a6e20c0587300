"""Smoke test of tools/lookup_quality.py (docs/architecture.md): on tests/data/bench_clef's signed tweets,
the shark and bicycle stories are each told by two accounts a day apart, and the lookup from either account
must show the other; tweets whose claim no other account tweeted must show nothing. With forwards crowding the
window, reading 4 candidates instead of 64 must show the same cards on this small set."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from core.tracking import LOOKUP_CANDIDATES
from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[1]


def test_lookup_quality_tool_on_the_small_clef_set(model_dir: Path) -> None:
    def run(*extra: str) -> list[tuple[str, ...]]:
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "lookup_quality.py"), "--data",
                              str(ROOT / "tests" / "data" / "bench_clef"), *extra], capture_output=True, text=True,
                             timeout=300, check=True, env=subprocess_env(model_dir), cwd=ROOT).stdout
        rows = re.findall(r"(\d+) messages stored; (\d+) tweets with another account's tweet of the same claim within "
                          r"7 days: ([\d.]+) show a right chat, precision of the (\d+) chats shown ([\d.]+); (\d+) "
                          r"without: ([\d.]+) show a wrong chat; lookup p50 [\d.]+ ms; (\d+) candidates, same card "
                          r"as \d+: ([\d.]+)", out)
        assert rows, out
        return rows

    (row,) = run()
    stored, partnered, hit, shown, precision, alone, false, k, same = row
    assert int(stored) == 16 and int(partnered) == 6 and int(alone) == 6 and int(k) == LOOKUP_CANDIDATES
    assert float(hit) == 1.0 and float(precision) == 1.0 and int(shown) == 6
    assert float(false) == 0.0 and float(same) == 1.0
    crowded = run("--crowd", "5", "--candidates", "64,4")
    assert [r[7] for r in crowded] == ["64", "4"]
    for stored, partnered, hit, shown, precision, alone, false, k, same in crowded:
        assert int(stored) == 16 * 6 and int(partnered) == 6  # each tweet and its 5 forwards
        assert float(hit) == 1.0 and float(precision) == 1.0 and int(shown) == 18  # three chats per card
        assert float(false) == 0.0 and float(same) == 1.0
