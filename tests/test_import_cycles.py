"""No import circle among the product's modules.

The graph has one node per module of the product packages and an edge for every import of another
product module, absolute or relative, at any depth of the file: an import inside a function still ties
the two modules together when it runs, and one under `if TYPE_CHECKING:` still ties them for the reader
and the type checker, so those count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("adapters", "bot", "core", "storage", "schema")
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The product modules an import statement loads (the package's own `__init__` is not counted: a
    package's modules importing their package's public surface is how a package works)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            up = here[:len(here) - (node.level - 1)]
            base = ".".join([*up, base] if base else up)
        # `from pkg import sub` loads the module pkg.sub; `from pkg import name` loads pkg itself.
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _import_nodes(tree):
            edges |= _targets(node, name, is_package, known)
        graph[name] = {e for e in edges if e != name and not name.startswith(e + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strong(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_the_graph_sees_absolute_and_relative_imports():
    graph = import_graph()
    assert "bot.admins" in graph["bot.domains"]  # `from bot.admins import …`
    assert all(m.split(".")[0] in PACKAGES for edges in graph.values() for m in edges)


def test_cycles_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package):
    circles = [c for c in cycles(import_graph()) if any(m.split(".")[0] == package for m in c)]
    assert not circles, circles
