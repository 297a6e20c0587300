"""The rules of ARCHITECTURE.md that code can break without a test noticing otherwise.

Floors, top to bottom: adapters/ (entry points, platforms, the composition root) -> bot/ (the chat
application) -> core/ (the engine) -> storage/ (SQLite, Qdrant) -> schema/ (the shared value types).
Beside them, evals/ (evaluation and benchmarks) uses the application; only the CLI imports it.
A floor imports only the floors below it; only adapters/ talks to a chat SDK; every SQL statement is in
storage/; adapters receive the built application instead of building its parts.

Inside core/, rooms by stage (ROOMS): each package imports only the rooms its row names, the table has no
circle, and core/'s top holds only the engine, its stages and the few text helpers every room shares.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ["adapters", "bot", "core", "storage", "schema"]  # top to bottom
SDKS = {"telegram", "slack_bolt", "slack_sdk"}
# What each floor must not import: every floor above it, and the chat SDKs below adapters/.
FORBIDDEN = {floor: set(FLOORS[:i]) | (SDKS if floor != "adapters" else set()) for i, floor in enumerate(FLOORS)}
FORBIDDEN["storage"] |= {"core"}  # spelled out: the rule issue 15 was about
for _floor in ("bot", "core", "storage", "schema"):
    FORBIDDEN[_floor].add("evals")  # measuring the application is not part of it
BELOW_STORAGE = [f for f in FLOORS if f != "storage"]
SQL = re.compile(r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|"
                 r"CREATE\s+(TABLE|INDEX|UNIQUE\s+INDEX)\s|ALTER\s+TABLE\s|DROP\s+(TABLE|INDEX)\s|PRAGMA\s)",
                 re.DOTALL)
# The parts of the chat application that only bot/chat_app.py builds, once (adapters receive them).
APP_PARTS = {"CheckService", "DomainCommands", "ChatCommands", "CheckExtras", "ReviewCommands", "JobQueue"}


# core/'s rooms: which other rooms each may import (the shared top-level helpers are open to all).
ROOMS: dict[str, set[str]] = {
    "llm": set(),                                                   # the LLM client and its budget
    "encoders": set(),                                              # text -> vectors, and their files
    "ingest": set(),                                                # files and feeds -> fact-checks, rating words
    "intake": {"encoders", "llm"},                                  # message -> clean text, claims, checkable?
    "matching": {"encoders", "ingest", "intake"},                   # message -> matching fact-checks
    "evidence": {"encoders", "ingest", "llm", "matching"},          # claim -> evidence from every source
    "verdict": {"encoders", "evidence", "llm", "matching"},         # evidence -> stances -> verdict
    "corroboration": {"encoders", "intake", "matching"},            # same story in other chats, trends
    "watch": {"corroboration", "evidence", "ingest", "intake"},     # public channels and feeds, read on schedule
}
CORE_TOP = {"engine", "stages"}  # the pipeline: may import every room; no room imports it
CORE_SHARED = {"i18n", "i18n_uk", "textclean", "textscript", "numeric", "logistic"}  # below every room


def _core_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "core" and len(parts) > 1 else None


def _sources(*floors: str) -> list[Path]:
    return sorted(p for floor in floors for p in (ROOT / floor).rglob("*.py"))


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


@pytest.mark.parametrize("floor", FLOORS)
def test_a_floor_imports_only_the_floors_below_it(floor):
    bad = []
    for path in _sources(floor):
        for name in _imports(_tree(path)):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[floor]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, bad


def test_no_sql_and_no_private_connection_outside_storage():
    bad = []
    for path in _sources(*BELOW_STORAGE):
        tree = _tree(path)
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "_conn":
                bad.append(f"{where}:{node.lineno} uses the database's private connection")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                bad.append(f"{where}:{node.lineno} holds SQL: {node.value[:60]!r}")
        for call in _calls(tree):
            if _name(call.func) in ("execute", "executemany", "executescript", "transaction"):
                bad.append(f"{where}:{call.lineno} runs SQL ({_name(call.func)})")
    assert not bad, bad


def test_adapters_receive_the_app_instead_of_building_its_parts():
    """Only the entry points (adapters/main.py: the CLI; adapters/run.py: the composition root) build;
    the platform adapters get the one `ChatApp` and never reach into the engine."""
    bad = []
    for path in _sources("adapters"):
        if path.name in ("main.py", "run.py"):
            continue
        tree = _tree(path)
        for call in _calls(tree):
            if _name(call.func) in APP_PARTS:
                bad.append(f"{path.name}:{call.lineno} builds {_name(call.func)}")
            if _name(call.func) == "getattr" and any(
                    isinstance(a, ast.Constant) and a.value in ("matcher", "kb", "engine") for a in call.args):
                bad.append(f"{path.name}:{call.lineno} reaches into the engine with getattr")
        if "bot_username=\"tipline\"" in path.read_text(encoding="utf-8").replace(" ", ""):
            bad.append(f"{path.name} hard-codes the bot's name")
    assert not bad, bad


def test_the_engine_does_not_probe_what_its_protocols_declare():
    bad = [f"core/{name}:{c.lineno} calls {_name(c.func)}" for name in ("engine.py", "stages.py")
           for c in _calls(_tree(ROOT / "core" / name)) if _name(c.func) in ("getattr", "hasattr")]
    assert not bad, bad


def test_the_card_layout_and_its_limits_are_written_once():
    """One card (bot/card.py), one MAX_CITATIONS (the engine's, which the card shows), one Slack markup
    stripper."""
    defined: dict[str, list[str]] = {}
    for path in _sources("adapters", "bot", "core"):
        for node in ast.walk(_tree(path)):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id == "MAX_CITATIONS":
                    defined.setdefault("MAX_CITATIONS", []).append(str(path.relative_to(ROOT)))
            if isinstance(node, ast.FunctionDef) and node.name in ("render_html", "render_blocks", "render_card"):
                called = {_name(c.func) for c in _calls(node)}
                assert "card" in called, f"{path.name}:{node.name} lays out its own card"
    assert defined["MAX_CITATIONS"] == ["core/verdict/adjudicate.py"], defined
    slack = (ROOT / "adapters" / "slack.py").read_text(encoding="utf-8")
    assert slack.count("_SLACK_TOKEN.sub(") == 1


def test_no_torch_anywhere():
    import importlib.util
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [d for ds in project["optional-dependencies"].values() for d in ds]
    assert not [d for d in declared if "torch" in d.lower() or "sentence-transformers" in d.lower()]
    assert importlib.util.find_spec("torch") is None, "torch got into the environment"


def test_core_top_holds_the_engine_and_the_shared_helpers_only():
    top = {p.stem for p in (ROOT / "core").glob("*.py")} - {"__init__"}
    rooms = {p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").is_file()}
    assert top == CORE_TOP | CORE_SHARED, f"a module at core/'s top that is not in the room map: {top ^ (CORE_TOP | CORE_SHARED)}"
    assert len(top) <= 12
    assert rooms == set(ROOMS), f"core/'s packages and the room map differ: {rooms ^ set(ROOMS)}"


def test_a_core_room_imports_only_the_rooms_its_row_names():
    bad = []
    for path in _sources("core"):
        rel = path.relative_to(ROOT / "core").with_suffix("").parts
        here = rel[0]
        if here == "__init__":
            continue
        allowed = (set(ROOMS) | CORE_SHARED | CORE_TOP if here in CORE_TOP else
                   CORE_SHARED if here in CORE_SHARED else ROOMS[here] | CORE_SHARED)
        for name in _imports(_tree(path)):
            there = _core_room(name)
            if there is not None and there != here and there not in allowed:
                bad.append(f"core/{'/'.join(rel)}.py imports {name} ({here} -> {there})")
    assert not bad, bad


def test_the_room_map_has_no_circle():
    done: set[str] = set()
    while len(done) < len(ROOMS):
        ready = {room for room, needs in ROOMS.items() if room not in done and needs <= done}
        assert ready, f"a circle among {sorted(set(ROOMS) - done)}"
        done |= ready
