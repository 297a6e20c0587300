"""Smoke test of tools/cyrillic_columns.py (docs/matching.md, "Russian and English as equals": the columns
screened for the `cyrillic` re-ranker) on a CLEF-shaped set of eight claims (tests/test_calibrate_confidence.py's)
with Russian train and dev translations; the real MiniLM, e5 and USE models and the shipped lexicon."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.test_calibrate_confidence import write_set

TOOL = Path(__file__).resolve().parents[1] / "tools" / "cyrillic_columns.py"
RU_TRAIN = [(10, "прививки вызывают у детей аутизм"), (11, "вышки 5G распространяют ковид"),
            (12, "горячая вода смывает вирус"), (13, "высадку на Луну сняли в студии")]


def test_the_screen_reports_every_variant_beside_the_baseline(tmp_path, model_dir):
    data, ru = write_set(tmp_path)
    (ru / "train").mkdir()
    (ru / "train" / "tweets.queries.tsv").write_text(
        "tweet_id\ttweet_content\n" + "".join(f"{q}\t{t}\n" for q, t in RU_TRAIN), encoding="utf-8")
    out = subprocess.run([sys.executable, str(TOOL), "--data", str(data), "--translations", str(ru), "--cache",
                          str(tmp_path / "cache"), "--model-dir", str(model_dir), "--k", "3", "--dense",
                          "--no-dev-calibration"],
                         capture_output=True, text=True, timeout=900, check=True).stdout
    for split in ("train", "dev"):
        for name in ("e5 query: (shipped)", "e5 passage:", "e5 gloss as passage", "e5 Rocchio (k 3, a 0.5)"):
            m = re.search(rf"{split}/ru dense {re.escape(name)}: MAP@5 ([\d.]+) recall@40 ([\d.]+)", out)
            assert m, out
            assert 0.0 <= float(m[1]) <= float(m[2]) <= 1.0
    for variant in ("base", "e5pass", "glosse5", "prf", "agree", "agree+e5pass"):
        m = re.search(rf"\n{re.escape(variant)}: train CV MAP@5 ([\d.]+); dev MAP@5 ([\d.]+) recall@5 ([\d.]+); auto", out)
        assert m, out
        assert all(0.0 <= float(v) <= 1.0 for v in m.groups())
