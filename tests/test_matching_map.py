"""The matching map (core/matching/__init__.py) says what one match runs through; these tests fail when the
code and the map part: a feature column, a resource file or a scorer added or removed without the map."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

import core.matching as the_map
from core.matching import features, negation, reranker, same_claim
from core.matching.matcher import ClaimMatcher

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "core" / "data"
MATCHING = ROOT / "core" / "matching"
SCORER_TYPES = {"Reranker", "SameClaim", "Denial"}


def _string_constants(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _matching_sources() -> list[Path]:
    """Every module of core/matching/ and the encoder modules the map names."""
    encoders = [Path(importlib.util.find_spec(module).origin) for module, _, _ in the_map.ENCODERS]
    return sorted(p for p in MATCHING.glob("*.py") if p.name != "__init__.py") + encoders


def test_feature_columns_are_the_maps():
    mapped = tuple(name for _, names in the_map.FEATURES for name in names)
    assert mapped == features.FEATURE_NAMES, "a re-ranker feature column changed: update FEATURES in the map"


def test_decision_inputs_are_the_maps():
    assert the_map.DECISION_FEATURES == same_claim.FEATURES
    assert the_map.DENIAL_FEATURES == negation.POLARITY_FEATURES


def test_candidate_lists_are_the_maps():
    assert the_map.CANDIDATE_LISTS == (*features.LISTS, features.GLOSS_LIST)


def test_every_resource_file_the_matching_code_reads_is_in_the_map_and_ships():
    listed = {name for name, _, _ in the_map.RESOURCES}
    assert len(listed) == len(the_map.RESOURCES), "a resource is listed twice"
    missing = sorted(name for name in listed if not (DATA / name).is_file())
    assert not missing, f"the map lists files core/data/ lacks: {missing}"
    shipped = {p.name for p in DATA.iterdir() if p.is_file()}
    read = {name for path in _matching_sources() for name in _string_constants(path) & shipped}
    assert read == listed, f"read but not in the map: {sorted(read - listed)}; in the map but not read: " \
                           f"{sorted(listed - read)}"


def test_every_resource_names_the_module_that_reads_it():
    for name, module, _ in the_map.RESOURCES:
        path = MATCHING / module if "/" not in module else ROOT / module
        assert name in _string_constants(path), f"{module} does not read {name}"


def test_the_scorers_are_the_maps():
    """The matcher's model arguments are the map's scorers, and each re-ranker has a loader and a file."""
    params = inspect.signature(ClaimMatcher.__init__).parameters
    models = [name for name, p in params.items()
              if any(t in str(p.annotation) for t in SCORER_TYPES)]
    assert models == [name for name, _, _ in the_map.SCORERS]
    loaders = sorted(n for n, v in vars(reranker.Reranker).items() if n.startswith("load_") and n != "load")
    rerankers = [s for s in the_map.SCORERS if "Reranker" in str(params[s[0]].annotation)]
    assert len(loaders) == len(rerankers), f"re-ranker loaders {loaders} against the map's {rerankers}"
    tree = ast.parse((MATCHING / "matcher.py").read_text(encoding="utf-8"))
    made = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "_Scorer"]
    assert len(made) == len(rerankers), "the matcher scores with another number of re-rankers than the map"
    files = {name for name, _, _ in the_map.RESOURCES}
    assert {f for _, f, _ in the_map.SCORERS} <= files


def test_the_guards_exist():
    for dotted, _ in the_map.GUARDS:
        module, _, name = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), name), f"{dotted} is gone: update GUARDS in the map"


def test_importing_the_map_loads_no_model():
    """The map is data: reading it must not import the matcher or an encoder."""
    import subprocess
    import sys

    code = ("import sys, core.matching; print(sorted(m for m in sys.modules if m.startswith('core.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "['core.matching']"
