"""Smoke test of tools/cyrillic_columns.py (docs/decisions/2026-11-24-matching-measurements.md, "Russian and English as equals": the columns
screened for the `cyrillic` re-ranker) on a CLEF-shaped set of eight claims (tests/test_calibrate_confidence.py's)
with Russian train and dev translations; the real MiniLM, e5 and USE models and the shipped lexicon."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

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
        for name in ("F (layer 10)", "e5 + F (layer 10)", "F (layer 12)", "e5 + F (layer 10, 64-d)"):
            m = re.search(rf"{split}/ru dense e5 top 40 by {re.escape(name)}: MAP@5 ([\d.]+) recall@40 ([\d.]+)", out)
            assert m, out
            assert 0.0 <= float(m[1]) <= float(m[2]) <= 1.0
    for variant in ("base", "e5pass", "glosse5", "prf", "agree", "agree+e5pass", "tok10f", "tok10f64", "tok12r"):
        m = re.search(rf"\n{re.escape(variant)}: train CV MAP@5 ([\d.]+); dev MAP@5 ([\d.]+) recall@5 ([\d.]+); auto", out)
        assert m, out
        assert all(0.0 <= float(v) <= 1.0 for v in m.groups())


def test_token_alignment_scores_a_translation_above_an_unrelated_claim(tmp_path):
    """tools/token_alignment.py on the real e5 weights: a Russian message aligns with the English claim it
    retells more than with another claim, in R, P and F, and F lies between R and P."""
    sys.path.insert(0, str(TOOL.parent))
    import token_alignment as TA

    states = TA.TokenStates(tmp_path, layers=(10,))
    message = states(["прививки вызывают у детей аутизм"], "m", query=True)[10][0]
    claims = states(["Vaccines cause autism in children.", "The moon landing was filmed in a studio."], "c",
                    query=False)[10]
    assert message.dtype == np.float16 and np.allclose(np.linalg.norm(message.astype(np.float32), axis=1), 1, atol=1e-2)
    right, wrong = TA.alignment(message, claims[0]), TA.alignment(message, claims[1])
    assert all(a > b for a, b in zip(right, wrong)), (right, wrong)
    assert min(right[:2]) <= right[2] <= max(right[:2])
    again = TA.TokenStates(tmp_path, layers=(10,))(["прививки вызывают у детей аутизм"], "m", query=True)[10][0]
    assert np.array_equal(again, message)  # read back from the cache, the same states
    proj = TA.fit_projection(claims, 4)
    assert proj.shape == (384, 4) and TA.project(message, proj).shape == (len(message), 4)
