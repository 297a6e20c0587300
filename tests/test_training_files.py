"""training/README.md maps every file in core/data/ to the command that rebuilds it and the test that checks it is
current: a file added without a row, a command naming no module, or a test that is not there fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from core.matching.same_claim import FEATURES, SameClaim

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "training" / "README.md"


def _rows() -> dict[str, str]:
    """`file` -> the rest of its table row."""
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `([^`]+)`[^|]*\|(.*)", line)
        if m:
            rows[m[1]] = m[2]
    return rows


def test_every_shipped_data_file_has_a_row() -> None:
    shipped = sorted(p.name for p in (ROOT / "core" / "data").iterdir() if p.is_file())
    rows = _rows()
    assert "reranker.json" in rows and "seed_factchecks.jsonl" in rows  # the table still reads
    missing = [name for name in shipped if name not in rows]
    assert not missing, f"core/data files training/README.md does not map to a command and a test: {missing}"
    gone = [name for name in rows if name not in shipped]
    assert not gone, f"rows of training/README.md for files core/data/ no longer has: {gone}"


def test_the_commands_and_tests_named_exist() -> None:
    text = README.read_text(encoding="utf-8")
    modules = set(re.findall(r"python -m training\.(\w+)", text))
    assert "reranker" in modules
    assert not [m for m in modules if not (ROOT / "training" / f"{m}.py").is_file()], modules
    for path, name in set(re.findall(r"(tests/test_\w+\.py)(?:::(\w+))?", text)):
        assert (ROOT / path).is_file(), path
        if name:
            defined = {n.name for n in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8")))
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            assert name in defined, f"{path} has no {name}"


def test_the_same_claim_decision_reads_the_code_features() -> None:
    """Loading refuses a model trained on other features (python -m training.same_claim rebuilds it)."""
    model = SameClaim.load()
    assert model is not None and len(FEATURES) > 3


def test_nothing_patches_sys_path() -> None:
    """training/ and evals/ run as packages from the repository root (`python -m training.x`), so no module
    reaches for its own imports by editing sys.path."""
    bad = []
    for folder in ("adapters", "bot", "core", "storage", "schema", "evals", "training", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                target = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
                    node.target if isinstance(node, ast.AugAssign) else None
                if isinstance(target, ast.Attribute) and target.attr == "path" and \
                        isinstance(target.value, ast.Name) and target.value.id == "sys":
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, f"sys.path edited at {bad}"


def test_messages_the_gate_turns_away_get_their_own_surer_threshold() -> None:
    """`unclaimed` is chosen as `auto` is (the lowest probability with precision >= 0.95), among the messages whose
    top candidate's `p_claim` is under the gate's threshold: chat lines naming a fact-check's subjects there
    reach mid probabilities, and only sure matches of them are right."""
    from evals.realistic_eval import Row
    from core.intake.checkability import default_checkability
    from training.same_claim import thresholds

    gate, col = default_checkability().threshold, FEATURES.index("p_claim")
    items, probs = [], []

    def add(p: float, p_claim: float, right: bool) -> None:
        X = np.zeros((1, len(FEATURES)))
        X[0, col] = p_claim
        kind = "restate" if right else "no_claim"
        items.append({"row": Row(f"m{len(items)}", "ru", kind, "u" if right else "", "ru_seed.jsonl"), "X": X,
                      "is_target": np.array([right]), "is_twin": np.array([False])})
        probs.append(np.array([p]))

    for i in range(600):  # claims: right from 0.3 up
        add(0.3 + i * 0.001, 0.9, True)
    for i in range(40):  # turned away: wrong up to 0.7, right above
        add(0.3 + i * 0.015, gate / 2, 0.3 + i * 0.015 > 0.7)
    thr = thresholds(items, probs, quiet=True)
    assert thr["auto"] < 0.5 and thr["unclaimed"] > 0.69  # above the surest wrong one
    assert thr["cv"]["turned_away"]["precision_at_unclaimed"] >= 0.95 > thr["cv"]["turned_away"]["precision_at_auto"]
    assert SameClaim.load().unclaimed >= SameClaim.load().auto  # the shipped file has its own
