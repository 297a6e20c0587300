"""The deployment files, checked statically (no Docker engine here): Dockerfile, docker-compose.yml,
.env.example and the Slack app manifest against the code they deploy.

- the Dockerfile copies every package pyproject.toml installs, and the entry point imports from
  nothing but what it copies (the image could not import `schema` before);
- compose runs `tipline run` on 0.0.0.0 with a published port, an env file, a healthcheck on a route
  the server really has, a restart policy, the Qdrant server and SearxNG under a profile;
- every TIPLINE_* name in those files is a field of `bot.settings.Settings`, and .env.example lists
  every field, with the field's real default;
- the Slack manifest subscribes to what adapters/slack.py listens for, with the scopes those need;
- .dockerignore leaves out .venv, data/, .git, .env, caches, tests and eval data but nothing the Dockerfile
  copies; requirements.lock pins every declared dependency within pyproject.toml's bounds, and scripts/setup
  (so CI) and the image install with `-c requirements.lock`.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
import shlex
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PREFIX = str(Settings.model_config.get("env_prefix", ""))
FIELDS = {PREFIX + name.upper() for name in Settings.model_fields}
TIPLINE_NAME = re.compile(rf"\b{PREFIX}[A-Z0-9_]+\b")


# --- Dockerfile ----------------------------------------------------------------------------------

def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: continuation lines joined, comments dropped."""
    lines: list[tuple[str, str]] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        word, _, rest = text.partition(" ")
        lines.append((word.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return lines


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def docker_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, args in dockerfile():
        if word == "ENV":
            for pair in shlex.split(args):
                name, sep, value = pair.partition("=")
                assert sep, f"ENV {pair!r}: use NAME=value"
                env[name] = value
    return env


def installed_packages() -> list[str]:
    """The top-level packages pyproject.toml installs (its packages.find include patterns)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({p.rstrip("*").rstrip(".") for p in patterns})


def copied() -> dict[str, str]:
    """Dockerfile COPY: source -> destination (relative to WORKDIR)."""
    out: dict[str, str] = {}
    for word, args in dockerfile():
        if word == "COPY":
            parts = args.split()
            assert not any(p.startswith("--") for p in parts), "COPY flags are not expected here"
            *sources, dest = parts
            for src in sources:
                out[src.rstrip("/")] = dest if dest not in (".", "./") else src
    return out


def test_the_image_copies_every_package_pyproject_installs() -> None:
    packages = installed_packages()
    assert "schema" in packages  # the package the image used to miss
    sources = copied()
    for package in packages:
        assert (ROOT / package / "__init__.py").is_file(), package
        assert package in sources, f"the Dockerfile does not COPY {package}/, so the image cannot import it"
        assert sources[package].rstrip("/") in (package, f"./{package}"), f"{package} is copied elsewhere"
    for needed in ("pyproject.toml", "README.md"):  # pip install . reads both (readme = README.md)
        assert needed in sources or any(needed in args.split() for w, args in dockerfile() if w == "COPY")
    runs = " ".join(args for word, args in dockerfile() if word == "RUN")
    assert re.search(r"pip install (-c requirements\.lock )?\.(\s|$)", runs), runs


def test_the_copied_tree_imports_without_the_rest_of_the_repo(tmp_path: Path) -> None:
    """Only what the Dockerfile copies, plus the installed dependencies: every module of every package
    imports. This is what failed in the image when `schema/` was not copied."""
    for word, args in dockerfile():
        if word != "COPY":
            continue
        *sources, _ = args.split()
        for src in sources:
            path = ROOT / src
            if path.is_dir():
                shutil.copytree(path, tmp_path / src, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(path, tmp_path / src)
    site_dirs = [p for p in site.getsitepackages() if Path(p).is_dir()]
    # -S: no site processing, so the editable install's path hook (which points at the repo) is not
    # loaded; only the copy and the third-party packages are on the path.
    code = (
        "import importlib, pkgutil, sys\n"
        f"sys.path[:0] = [{str(tmp_path)!r}] + {site_dirs!r}\n"
        f"packages = {installed_packages()!r}\n"
        "failed = []\n"
        "for name in packages:\n"
        "    pkg = importlib.import_module(name)\n"
        "    assert pkg.__file__.startswith(sys.path[0]), pkg.__file__\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, name + '.'):\n"
        "        try:\n"
        "            importlib.import_module(info.name)\n"
        "        except Exception as exc:\n"
        "            failed.append(f'{info.name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The data the engine loads at run time is in the copy too (package data of core).
    assert (tmp_path / "core" / "data" / "seed_factchecks.jsonl").is_file()


def test_the_image_runs_tipline_run_on_every_interface() -> None:
    instructions = dockerfile()
    entry = [exec_form(a) for w, a in instructions if w == "ENTRYPOINT"]
    cmd = [exec_form(a) for w, a in instructions if w == "CMD"]
    assert entry[-1] == ["tipline"]
    assert cmd[-1] == ["run"]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "tipline" in config["project"]["scripts"]
    from adapters.main import build_parser

    assert build_parser().parse_args(["run"]).command == "run"  # a real subcommand
    env = docker_env()
    assert env["TIPLINE_HTTP_HOST"] == "0.0.0.0"
    exposed = [a for w, a in instructions if w == "EXPOSE"]
    assert exposed and exposed[-1].split("/")[0] == env["TIPLINE_HTTP_PORT"]
    users = [a for w, a in instructions if w == "USER"]
    assert users and users[-1] not in ("root", "0")


def test_dockerfile_env_names_are_settings() -> None:
    env = docker_env()
    names = [n for n in env if n.startswith(PREFIX)]
    assert names
    assert set(names) <= FIELDS, set(names) - FIELDS
    # and each value parses as that setting
    Settings(_env_file=None, **{n[len(PREFIX):].lower(): env[n] for n in names})  # type: ignore[call-arg]


# --- .dockerignore and requirements.lock ---------------------------------------------------------

def dockerignore(text: str | None = None) -> list[tuple[re.Pattern[str], bool]]:
    """(pattern, is an exception `!`), in order, compiled as Docker's patternmatcher does: relative to the
    context root, `*` and `?` within one path segment, `**` any number of segments. `text` defaults to the
    repo's .dockerignore."""
    if text is None:
        text = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        pattern = posixpath.normpath(line[1:].strip() if exception else line).lstrip("/")
        assert not set(pattern) & set("[]\\"), f"{line!r}: character classes and escapes are not read here"
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**", i):
                i += 2
                if pattern.startswith("/", i):
                    i += 1
                regex += ".*" if i >= len(pattern) else "(.*/)?"
                continue
            ch = pattern[i]
            regex += "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
            i += 1
        out.append((re.compile(f"^{regex}$"), exception))
    return out


def docker_ignores(path: str, patterns: list[tuple[re.Pattern[str], bool]] | None = None) -> bool:
    """Is `path` (relative to the repo root) left out of the build context? The last pattern matching the
    path or one of its parent directories decides."""
    patterns = dockerignore() if patterns is None else patterns
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for regex, exception in patterns:
        if any(regex.match(p) for p in prefixes):
            ignored = not exception
    return ignored


def test_dockerignore_keeps_what_the_dockerfile_copies_and_leaves_out_the_rest() -> None:
    patterns = dockerignore()
    checked = 0
    for source in copied():
        path = ROOT / source
        assert path.exists(), f"the Dockerfile copies {source}, which is not in the repo"
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for file in files:
            rel = file.relative_to(ROOT).as_posix()
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                assert docker_ignores(rel, patterns), rel  # bytecode stays out
                continue
            assert not docker_ignores(rel, patterns), f"the Dockerfile copies {rel}, but .dockerignore leaves it out"
            checked += 1
    assert checked > 100
    # `data` is the local data dir at the root, not core/data (the seed the image loads on first start)
    assert not docker_ignores("core/data/seed_factchecks.jsonl", patterns)
    assert "requirements.lock" in copied()
    for left_out in (".venv", ".venv/bin/python", ".venv/lib/python3.11/site-packages/numpy/__init__.py",
                 "data", "data/tipline.sqlite3", "data/qdrant-edge/catalog.json", ".git", ".git/HEAD", ".env",
                 "tests/test_cli.py", "eval/realistic/dev.jsonl", "training/lexicon.py", "evals/cli.py",
                 "core/__pycache__/engine.cpython-311.pyc", ".pytest_cache/v/cache/nodeids", ".ruff_cache/x",
                 ".mypy_cache/3.11/x.json", "tipline.egg-info/PKG-INFO", "build/lib/core/engine.py"):
        assert docker_ignores(left_out, patterns), f".dockerignore does not leave out {left_out}"
    # and whatever the local data dir holds right now
    for file in list((ROOT / "data").rglob("*"))[:200] if (ROOT / "data").is_dir() else []:
        assert docker_ignores(file.relative_to(ROOT).as_posix(), patterns), file


def test_the_dockerignore_matcher_reads_patterns_as_docker_does() -> None:
    """The matcher above on patterns whose meaning Docker documents (docs.docker.com, .dockerignore)."""
    def compiled(*lines: str) -> list[tuple[re.Pattern[str], bool]]:
        return dockerignore("\n".join(lines))

    assert docker_ignores("data/x", compiled("data")) and not docker_ignores("core/data/x", compiled("data"))
    assert docker_ignores("a/b/__pycache__/c.pyc", compiled("**/__pycache__"))
    assert docker_ignores("__pycache__/c.pyc", compiled("**/__pycache__"))
    assert docker_ignores("x/temp1", compiled("*/temp*")) and not docker_ignores("x/y/temp1", compiled("*/temp*"))
    assert docker_ignores("README.md", compiled("*.md")) and not docker_ignores("docs/a.md", compiled("*.md"))
    assert not docker_ignores("README.md", compiled("*.md", "!README.md"))
    assert docker_ignores("README-secret.md", compiled("*.md", "!README*.md", "README-secret.md"))


def lock_pins() -> dict[str, tuple[str, str]]:
    """requirements.lock: normalised name -> (version, environment marker or "")."""
    pins = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement, _, marker = line.partition(";")
        name, sep, version = requirement.strip().partition("==")
        assert sep and version, f"requirements.lock: {line!r} is not `name==version`"
        pins[re.sub(r"[-_.]+", "-", name).lower()] = (version.strip(), marker.strip())
    return pins


def test_the_lock_pins_every_declared_dependency_within_its_bounds() -> None:
    from packaging.requirements import Requirement

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = lock_pins()
    wanted = [*config["project"]["dependencies"], *config["project"]["optional-dependencies"]["test"]]
    stale = []
    for line in wanted:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name not in pins or not req.specifier.contains(pins[name][0], prereleases=True):
            stale.append(f"{line} (locked: {pins.get(name, ('nothing',))[0]})")
    assert not stale, ("requirements.lock is out of date with pyproject.toml; regenerate it with the command "
                       f"in README.md: {stale}")
    assert "tipline" not in pins  # the project itself is never pinned


def test_every_install_path_installs_with_the_lock() -> None:
    runs = " ".join(args for word, args in dockerfile() if word == "RUN")
    assert "pip install -c requirements.lock ." in runs, "the image installs without requirements.lock"
    setup = (ROOT / "scripts" / "setup").read_text(encoding="utf-8")
    installs = [line for line in setup.splitlines() if re.search(r"pip install .*-e ", line)]
    assert installs and all("-c requirements.lock" in line for line in installs), installs
    # CI runs scripts/test, which installs through scripts/setup
    assert "./scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./scripts/setup" in (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    # the lock says how it was made, and the README gives that command
    header = (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()[:2]
    command = header[1].lstrip("# ").strip()
    assert "uv pip compile pyproject.toml" in command and "-o requirements.lock" in command, header
    assert command in (ROOT / "README.md").read_text(encoding="utf-8"), f"README.md does not say {command!r}"


# --- docker-compose.yml --------------------------------------------------------------------------

def compose() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def test_compose_runs_tipline_run_with_a_published_port_and_a_healthcheck() -> None:
    services = compose()["services"]
    assert set(services) >= {"tipline", "qdrant", "searxng"}
    app = services["tipline"]
    assert app["build"] in (".", {"context": "."})
    assert app["command"] == ["run"]
    env = environment(app)
    assert env["TIPLINE_HTTP_HOST"] == "0.0.0.0"
    port = env["TIPLINE_HTTP_PORT"]
    # published: "[host:]hostport:containerport", the container side being the server's port
    published = [str(p) for p in app["ports"]]
    assert any(p.rsplit(":", 1)[-1] == port for p in published), published
    env_files = app["env_file"] if isinstance(app["env_file"], list) else [app["env_file"]]
    assert ".env" in [f if isinstance(f, str) else f["path"] for f in env_files]
    assert app["restart"] in ("always", "unless-stopped", "on-failure")
    check = app["healthcheck"]
    test = " ".join(check["test"]) if isinstance(check["test"], list) else check["test"]
    assert f"127.0.0.1:{port}/healthz" in test
    assert check.get("start_period")
    # the server really serves /healthz (adapters/http_api.py registers it on every deployment)
    tree = ast.parse((ROOT / "adapters" / "http_api.py").read_text(encoding="utf-8"))
    routes = {c.args[0].value for c in ast.walk(tree) if isinstance(c, ast.Call)
              and isinstance(c.func, ast.Attribute) and c.func.attr == "add_get"
              and c.args and isinstance(c.args[0], ast.Constant)}
    assert "/healthz" in routes
    # the graceful shutdown gives running checks 20 s; docker's default 10 s would cut them off
    assert app.get("stop_grace_period")


def test_compose_wires_the_qdrant_server_and_an_optional_searxng() -> None:
    services = compose()["services"]
    app, qdrant, searxng = services["tipline"], services["qdrant"], services["searxng"]
    assert qdrant["image"].startswith("qdrant/qdrant:") and not qdrant["image"].endswith(":latest")
    assert "http://qdrant:6333" in environment(app)["TIPLINE_QDRANT_URL"]
    assert app["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert "healthcheck" in qdrant and qdrant.get("restart")
    assert any(str(v).endswith(":/qdrant/storage") for v in qdrant["volumes"])
    assert any(str(v).endswith(":/data") for v in app["volumes"])
    assert searxng["profiles"] == ["searxng"]
    assert "ports" not in qdrant and "ports" not in searxng  # only tipline reaches them
    # the SearxNG settings it mounts turn on the JSON API tipline calls (else SearxNG answers 403)
    mount = next(str(v) for v in searxng["volumes"] if str(v).endswith("/etc/searxng/settings.yml:ro"))
    settings = yaml.safe_load((ROOT / mount.split(":")[0]).read_text(encoding="utf-8"))
    assert "json" in settings["search"]["formats"]
    assert settings["server"]["limiter"] is False
    assert settings["server"]["secret_key"] != "ultrasecretkey"  # SearxNG refuses to start with it


def test_compose_env_names_are_settings() -> None:
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    names = set(TIPLINE_NAME.findall(text))
    assert names
    assert names <= FIELDS, names - FIELDS


# --- .env.example -------------------------------------------------------------------------------

ASSIGNMENT = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")


def env_example() -> dict[str, tuple[str, bool, str]]:
    """NAME -> (value, commented out, the comment line above it)."""
    out: dict[str, tuple[str, bool, str]] = {}
    previous = ""
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        m = ASSIGNMENT.match(line.strip())
        if m:
            assert m[1] not in out, f"{m[1]} is listed twice"
            out[m[1]] = (m[2], line.startswith("#"), previous)
        previous = line.strip() if line.strip().startswith("#") and not m else previous if m else ""
    return out


def test_env_example_lists_every_setting_and_nothing_else() -> None:
    listed = env_example()
    names = set(listed)
    assert names <= FIELDS, f"not settings: {sorted(names - FIELDS)}"
    assert FIELDS <= names, f"settings missing from .env.example: {sorted(FIELDS - names)}"
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert set(TIPLINE_NAME.findall(text)) <= FIELDS


def test_env_example_gives_each_setting_a_comment_and_its_real_default() -> None:
    for name, (value, commented, comment) in env_example().items():
        field = Settings.model_fields[name[len(PREFIX):].lower()]
        assert commented, f"{name} is set in .env.example: leave it commented, its default applies"
        assert comment.startswith("# ") and len(comment) > 10, f"{name} has no comment line"
        default = field.get_default(call_default_factory=True)
        if default is None or default == []:
            assert value == "", f"{name}: the default is unset, the example shows {value!r}"
            continue
        parsed = getattr(Settings(_env_file=None, **{name[len(PREFIX):].lower(): value}),  # type: ignore[call-arg]
                         name[len(PREFIX):].lower())
        assert parsed == default, f"{name}: .env.example shows {value!r}, the default is {default!r}"


def test_env_example_parses_as_settings_when_every_line_is_uncommented(tmp_path: Path) -> None:
    """Uncommenting a line with a value gives a valid setting (and the defaults come back)."""
    lines = []
    for name, (value, _, _) in env_example().items():
        if value:
            lines.append(f"{name}={value}")
    env = tmp_path / ".env"
    env.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = Settings(_env_file=env)  # type: ignore[call-arg]
    assert loaded.gdelt_url == Settings.model_fields["gdelt_url"].default
    assert loaded.http_port == 8080


def test_gdelt_is_off_by_default_and_an_empty_url_keeps_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from a message leaves the machine by default: GDELT is built only when its URL is set;
    TIPLINE_GDELT_URL= (empty) in .env or the environment (what compose's env_file makes of it) is off."""
    import aiohttp

    from core.evidence.registry import build_sources

    async def names(settings: Settings) -> list[str]:
        async with aiohttp.ClientSession() as session:
            return [s.name for s in build_sources(settings, api_session=session)]

    import asyncio

    monkeypatch.delenv(f"{PREFIX}GDELT_URL", raising=False)
    default = asyncio.run(names(Settings(_env_file=None)))  # type: ignore[call-arg]
    env = tmp_path / ".env"
    env.write_text(f"{PREFIX}GDELT_URL=\n", encoding="utf-8")
    off_file = asyncio.run(names(Settings(_env_file=env)))  # type: ignore[call-arg]
    monkeypatch.setenv(f"{PREFIX}GDELT_URL", "")
    off_env = asyncio.run(names(Settings(_env_file=None)))  # type: ignore[call-arg]
    monkeypatch.setenv(f"{PREFIX}GDELT_URL", "https://api.gdeltproject.org/api/v2/doc/doc")
    on = asyncio.run(names(Settings(_env_file=None)))  # type: ignore[call-arg]
    assert default == off_file == off_env == [] and on == ["gdelt"]


def test_the_image_has_tesseract_with_every_default_language() -> None:
    """Screenshots are read by the `tesseract` the image installs, with each language TIPLINE_OCR_LANGS names
    by default (Debian: tesseract-ocr-<lang>); the default binary is that package's command."""
    runs = [args for word, args in dockerfile() if word == "RUN"]
    apt = next((r for r in runs if "apt-get install" in r), "")
    packages = set(re.findall(r"\btesseract-ocr(?:-[a-z]+)?\b", apt))
    assert "tesseract-ocr" in packages, "the Dockerfile does not install tesseract-ocr"
    wanted = Settings.model_fields["ocr_langs"].default.split("+")
    assert {f"tesseract-ocr-{lang}" for lang in wanted} <= packages
    assert Settings.model_fields["ocr_binary"].default == "tesseract"
    assert "rm -rf /var/lib/apt/lists" in apt  # the package lists stay out of the image
    assert runs.index(apt) < next(i for i, r in enumerate(runs) if "pip install" in r)


@pytest.mark.parametrize("path", ["Dockerfile", "docker-compose.yml", ".env.example"])
def test_deploy_files_point_to_the_guide(path: str) -> None:
    assert "docs/deploy.md" in (ROOT / path).read_text(encoding="utf-8")


# --- Slack app manifest ---------------------------------------------------------------------------

MANIFEST = ROOT / "deploy" / "slack-app-manifest.yml"
MANIFEST_SOCKET = ROOT / "deploy" / "slack-app-manifest-socket.yml"
# What each bot event needs (Slack's Events API reference).
EVENT_SCOPES = {"app_mention": "app_mentions:read", "message.channels": "channels:history",
                "message.groups": "groups:history", "message.im": "im:history", "message.mpim": "mpim:history"}
# What each Web API method the adapter calls needs (Slack's method reference).
METHOD_SCOPES = {"chat_postMessage": "chat:write", "chat_update": "chat:write", "chat_postEphemeral": "chat:write",
                 "files_info": "files:read", "reactions_add": "reactions:write",
                 "reactions_remove": "reactions:write",
                 # find_reply: a resumed job's earlier reply, by its metadata (each conversation type's
                 # *:history; the public-channel one stands for them)
                 "conversations_replies": "channels:history", "conversations_history": "channels:history"}
LISTENER_KINDS = {"event", "command", "shortcut", "action", "error"}


def manifest(path: Path = MANIFEST) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def slack_registrations() -> dict[str, set[str]]:
    """What `SlackBot.__init__` registers on its bolt app, read from the code: kind -> names. Names given
    as module constants (SHORTCUT_CHECK, ACTION_UP…) or built in a loop over one (CHAT_COMMANDS) are
    resolved through the module, so a new listener anywhere in that method shows up here."""
    import adapters.slack as slack

    tree = ast.parse(Path(slack.__file__).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SlackBot")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    loops: dict[str, list[str]] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Name):
            loops[node.target.id] = list(getattr(slack, node.iter.id))

    def values(arg: ast.expr) -> list[str]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.Name):
            return [str(getattr(slack, arg.id))]
        if isinstance(arg, ast.JoinedStr):
            names = [v.value.id for v in arg.values if isinstance(v, ast.FormattedValue)
                     and isinstance(v.value, ast.Name)]
            assert len(names) == 1 and names[0] in loops, ast.unparse(arg)
            out = []
            for item in loops[names[0]]:
                out.append("".join(v.value if isinstance(v, ast.Constant) else item for v in arg.values))
            return out
        raise AssertionError(f"cannot read a listener name from {ast.unparse(arg)}")

    found: dict[str, set[str]] = {kind: set() for kind in LISTENER_KINDS}
    for node in ast.walk(init):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr == "app" and isinstance(target.value, ast.Name) \
                and target.value.id == "self":
            kind = node.func.attr
            assert kind in LISTENER_KINDS, (f"SlackBot registers a `{kind}` listener: add what it needs to "
                                            "deploy/slack-app-manifest*.yml and to this test")
            if kind != "error":
                found[kind].update(*(values(a) for a in node.args[:1]))
    return found


def test_the_code_registers_what_the_readme_names() -> None:
    """The extraction itself reads the code right (it would otherwise compare two empty sets)."""
    found = slack_registrations()
    assert {"app_mention", "message"} <= found["event"]
    assert {"/check", "/evidence", "/domains", "/review", "/track", "/auto", "/forget", "/stats"} <= found["command"]
    assert found["shortcut"] == {"tipline_check_message"}
    assert found["action"] == {"tipline_sources", "tipline_fb_up", "tipline_fb_down", "tipline_digest_check"}


def test_manifest_has_every_command_shortcut_and_event_the_code_listens_for() -> None:
    found = slack_registrations()
    doc = manifest()
    features, settings = doc["features"], doc["settings"]
    assert {c["command"] for c in features["slash_commands"]} == found["command"]
    assert all(c.get("description") for c in features["slash_commands"])
    shortcuts = features["shortcuts"]
    assert {s["callback_id"] for s in shortcuts} == found["shortcut"]
    # the handler answers message shortcuts only (a global one has no message to check)
    assert all(s["type"] == "message" and s["name"] and s["description"] for s in shortcuts)
    events = set(settings["event_subscriptions"]["bot_events"])
    assert {e.split(".")[0] for e in events} == found["event"], "subscribed events nobody handles, or the reverse"
    # DMs are checked and tracked channels are read: the `message` listener needs both
    assert {"message.im", "message.channels", "app_mention"} <= events
    # buttons (actions) and shortcuts arrive as interactivity payloads
    assert settings["interactivity"]["is_enabled"] is True
    # DMs to the app: the Messages tab must accept messages
    home = features["app_home"]
    assert home["messages_tab_enabled"] is True and home["messages_tab_read_only_enabled"] is False
    assert features["bot_user"]["display_name"]


def test_manifest_scopes_are_what_the_code_needs() -> None:
    import adapters.slack as slack

    doc = manifest()
    scopes = set(doc["oauth_config"]["scopes"]["bot"])
    events = set(doc["settings"]["event_subscriptions"]["bot_events"])
    needed = {EVENT_SCOPES[e] for e in events}
    if doc["features"]["slash_commands"] or doc["features"]["shortcuts"]:
        needed.add("commands")
    code = "".join(Path(m.__file__).read_text(encoding="utf-8")  # type: ignore[arg-type]
                   for m in (slack, __import__("adapters.slack_socket", fromlist=["x"])))
    # A method is called (`client.chat_postMessage(`) or handed on (`self._react(self.client.reactions_add, …)`).
    methods = set(re.findall(r"client\.([a-z]+_[A-Za-z]+)[(,)]", code))
    assert methods, "no Web API calls found: the pattern no longer matches the code"
    unknown = methods - set(METHOD_SCOPES)
    assert not unknown, f"Web API methods without a known scope: {unknown}; add them to METHOD_SCOPES and the manifest"
    needed |= {METHOD_SCOPES[m] for m in methods}
    assert scopes == needed, f"missing {needed - scopes}, unused {scopes - needed}"
    assert "user" not in doc["oauth_config"]["scopes"]  # a bot, never a user's token


def test_http_manifest_points_every_url_at_the_slack_route() -> None:
    from urllib.parse import urlsplit

    from adapters.slack import SlackConfig

    doc = manifest()
    assert doc["settings"]["socket_mode_enabled"] is False
    urls = [c["url"] for c in doc["features"]["slash_commands"]]
    urls += [doc["settings"]["event_subscriptions"]["request_url"], doc["settings"]["interactivity"]["request_url"]]
    path = SlackConfig(bot_token="x", signing_secret="x").path
    for url in urls:
        parts = urlsplit(url)
        assert parts.scheme == "https" and parts.path == path, url
    assert len({urlsplit(u).netloc for u in urls}) == 1


def test_socket_manifest_is_the_same_app_without_urls() -> None:
    http, socket = manifest(), manifest(MANIFEST_SOCKET)
    assert socket["settings"]["socket_mode_enabled"] is True

    def strip(doc: dict[str, Any]) -> dict[str, Any]:
        doc = json.loads(json.dumps(doc))
        for command in doc["features"]["slash_commands"]:
            command.pop("url", None)
        doc["settings"]["event_subscriptions"].pop("request_url", None)
        doc["settings"]["interactivity"].pop("request_url", None)
        doc["settings"].pop("socket_mode_enabled")
        return doc

    assert "https://" not in MANIFEST_SOCKET.read_text(encoding="utf-8").split("_metadata:", 1)[1]
    assert strip(socket) == strip(http)


# --- docs/deploy.md -------------------------------------------------------------------------------

GUIDE = ROOT / "docs" / "deploy.md"


def test_the_guide_names_only_real_settings_files_and_commands() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    names = set(TIPLINE_NAME.findall(text))
    assert names <= FIELDS, f"not settings: {sorted(names - FIELDS)}"
    for path in set(re.findall(r"`((?:deploy|docs|tests|adapters|bot|core|storage|scripts)/[\w./-]+)`", text)):
        assert (ROOT / path).exists(), path
    for path in ("Dockerfile", "docker-compose.yml", ".env.example"):
        assert path in text
    from adapters.main import build_parser

    commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    # `tipline X`, .venv/bin/tipline X, docker compose run --rm tipline X
    used = set(re.findall(r"(?:`|bin/|--rm )tipline (?:--[\w-]+ )*([a-z]+)\b", text))
    assert used and used <= commands, used - commands
    assert "[docs/deploy.md](docs/deploy.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_guide_says_what_the_manifest_and_the_webhook_code_do() -> None:
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    doc = manifest()
    for event in doc["settings"]["event_subscriptions"]["bot_events"]:
        assert f"`{event}`" in text, event
    for scope in doc["oauth_config"]["scopes"]["bot"]:
        assert f"`{scope}`" in text, scope
    for command in doc["features"]["slash_commands"]:
        assert f"`{command['command']}`" in text
    import inspect

    from adapters.telegram import WEBHOOK_SECRET_HEADER, TelegramBot

    assert WEBHOOK_SECRET_HEADER in text
    # "the URL's path … `/telegram/webhook` too if the URL has none": the code's fallback
    fallback = inspect.getsource(TelegramBot.webhook_path.fget)  # type: ignore[attr-defined]
    assert 'or "/telegram/webhook"' in fallback and "`/telegram/webhook` too if the URL has none" in text
