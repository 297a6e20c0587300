"""The import rules of ARCHITECTURE.md: core/ and storage/ never import a chat SDK or the bot layer."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "core": {"telegram", "slack_bolt", "slack_sdk", "bot", "adapters"},
    "storage": {"telegram", "slack_bolt", "slack_sdk", "bot", "adapters", "core.engine", "core.matching"},
    "bot": {"telegram", "slack_bolt", "slack_sdk"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_import_rules(package):
    bad = []
    for path in (ROOT / package).rglob("*.py"):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, bad


def test_no_torch_anywhere():
    import importlib.util
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [d for ds in project["optional-dependencies"].values() for d in ds]
    assert not [d for d in declared if "torch" in d.lower() or "sentence-transformers" in d.lower()]
    assert importlib.util.find_spec("torch") is None, "torch got into the environment"
