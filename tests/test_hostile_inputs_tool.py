"""Smoke test of evals/hostile_inputs.py (the figures of docs/reliability.md's hostile-input table): every input
at small sizes through real `tipline` processes; each gets a sentence, none a traceback or a hang."""

from __future__ import annotations

import json
from pathlib import Path

from evals.hostile_inputs import cases, main
from tests.conftest import SeededDataDir, model_cache


def test_every_hostile_input_gets_a_sentence(model_dir: Path, seeded: SeededDataDir, capsys) -> None:
    # Each child on a copy of the worker's seeded data dir and the session's model cache: seeding a new data
    # dir in each of the 7 children made them 81 CPU-s instead of 17, and no input here is about a first start.
    assert main(["--quick", "--json", "--timeout", "120", "--model-dir", str(model_dir), "--seeded", str(seeded.path),
                 "--model-cache-dir", str(model_cache(model_dir))]) == 0
    outcomes = {o["case"]: o for o in json.loads(capsys.readouterr().out)}
    assert list(outcomes) == [c.name for c in cases(quick=True)]
    for name, o in outcomes.items():
        assert o["answer"] and not o["answer"].startswith("TRACEBACK"), (name, o)
        assert o["seconds"] < 120, (name, o)  # a hang is killed at the timeout
        assert o["peak_rss_mib"] > 0
    # A refusal exits non-zero with its reason; what is readable is read.
    assert outcomes["JSON nested 10,000 deep"]["exit_code"] != 0
    assert "nested deeper" in outcomes["JSON nested 10,000 deep"]["answer"]
    assert "binary" in outcomes["100 KB of random bytes to `check -`"]["answer"].lower()
    assert outcomes["invalid UTF-8 before a claim to `check -`"]["exit_code"] == 0
