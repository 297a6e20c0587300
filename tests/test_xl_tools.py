"""Smoke tests of the cross-script term tools documented in docs/decisions/2026-11-24-matching-measurements.md: tools/xl_feature_cost.py and
tools/xl_candidate_recall.py on a CLEF-shaped set of eight claims (tests/test_calibrate_confidence.py's),
the real models and the shipped lexicon."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.test_calibrate_confidence import write_set

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def test_feature_cost_tool_reports_both_passes(tmp_path):
    data, ru = write_set(tmp_path)
    out = subprocess.run([sys.executable, str(TOOLS / "xl_feature_cost.py"), "--data", str(data), "--translations",
                          str(ru), "--queries", "2"], capture_output=True, text=True, timeout=300, check=True).stdout
    assert re.search(r"not cached: per match of 8 candidates, CPU without the xl columns [\d.]+ ms, with [\d.]+ ms", out), out
    assert "\ncached:" in out


def test_candidate_recall_tool_finds_the_russian_messages_claims(tmp_path, model_dir):
    data, ru = write_set(tmp_path)
    out = subprocess.run([sys.executable, str(TOOLS / "xl_candidate_recall.py"), "--data", str(data), "--translations",
                          str(ru), "--cache", str(tmp_path / "cache"), "--model-dir", str(model_dir), "--splits", "dev",
                          "--k", "3"], capture_output=True, text=True, timeout=900, check=True).stdout
    m = re.search(r"dev/ru: mapped-term sparse recall@3 ([\d.]+); union of the four lists ([\d.]+) -> with it ([\d.]+)", out)
    assert m, out
    xl, union, both = map(float, m.groups())
    assert 0.0 < xl <= 1.0 and union <= both <= 1.0
    m = re.search(r"dev/ru: gloss dense recall@3 ([\d.]+); union of the four lists -> with it ([\d.]+); "
                  r"with it and the mapped terms ([\d.]+)", out)
    assert m, out
    gl, with_gloss, with_all = map(float, m.groups())
    assert 0.0 < gl <= 1.0 and union <= with_gloss <= with_all <= 1.0 and both <= with_all
