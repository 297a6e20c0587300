"""training/story_common_terms.py (writes core/data/story_common_terms.npz): with wordfreq installed it
rebuilds the shipped ids; without (wordfreq is no dependency of tipline) it says so in one sentence."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

from core.corroboration.story_model import COMMON_TERMS_FILE

ROOT = Path(__file__).resolve().parents[1]


def test_the_tool_rebuilds_the_shipped_ids_or_names_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "common.npz"
    run = subprocess.run([sys.executable, "-m", "training.story_common_terms", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    if importlib.util.find_spec("wordfreq") is None:
        assert run.returncode != 0 and not out.exists()
        assert run.stderr.strip() == "wordfreq is not installed: pip install wordfreq (needed only by this tool)"
    else:
        assert run.returncode == 0, run.stderr
        with np.load(out) as new, np.load(COMMON_TERMS_FILE) as shipped:
            assert np.array_equal(new["ids"], shipped["ids"]) and int(new["top"]) == 40_000
