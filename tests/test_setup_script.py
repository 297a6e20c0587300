"""scripts/setup shows its stages as one line each and hides pip's output unless a stage fails.

The install stage runs in a copy of the script beside a stand-in `.venv/bin/python` that prints pip-like
noise and then fails or succeeds (a real pip install takes minutes and needs the network); the model and
knowledge-base stages run for real against a fresh data dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOISE = "\n".join(f"Collecting package-{i}" for i in range(200))


def _fake_repo(tmp_path: Path, *, pip_fails: bool) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup", repo / "scripts" / "setup")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    failing = 'case "$*" in *"install -e"*) echo "ERROR: No matching distribution found for onnxruntime" >&2; exit 1;; esac' \
        if pip_fails else ""
    # Stands in for the venv's python: pip prints noise; the Python stages fail with one sentence
    # (no tipline in this copy), which is enough to see where the script stops.
    (venv_bin / "python").write_text(f"""#!/usr/bin/env bash
if [ "$2" = "pip" ]; then
cat <<'EOF'
{NOISE}
EOF
{failing}
exit 0
fi
echo "tipline: stand-in python" >&2
exit 3
""")
    (venv_bin / "python").chmod(0o755)
    return repo


def _run(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(repo / "scripts" / "setup")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env}, cwd=repo)


def test_a_failing_install_shows_the_stage_and_the_log_tail_only(tmp_path: Path) -> None:
    proc = _run(_fake_repo(tmp_path, pip_fails=True))
    assert proc.returncode == 1
    assert "setup: installing tipline" in proc.stderr and "failed" in proc.stderr
    assert "No matching distribution found for onnxruntime" in proc.stderr  # the tail says why
    assert "Collecting package-10\n" not in proc.stderr + proc.stdout  # not the whole log
    assert "Collecting" not in proc.stdout


def test_a_good_install_prints_one_line_per_stage_and_no_pip_output(tmp_path: Path) -> None:
    proc = _run(_fake_repo(tmp_path, pip_fails=False))
    out = proc.stdout + proc.stderr
    assert "Collecting" not in out
    assert "setup: installing tipline and its dependencies (a few minutes the first time)… done" in proc.stderr
    # The stand-in python cannot prepare a model: that stage fails in its own line with its sentence.
    assert "setup: preparing the model… failed" in proc.stderr
    assert "tipline: stand-in python" in proc.stderr
    assert proc.returncode == 3


def test_the_model_and_knowledge_base_stages_run_against_a_new_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = _run(ROOT, TIPLINE_DATA_DIR=str(data))
    assert proc.returncode == 0, proc.stderr
    assert "setup: preparing the model… done" in proc.stderr
    assert f"setup: loading the knowledge base into {data}… done" in proc.stderr
    assert (data / "tipline.sqlite3").exists()
    # A second run finds everything in place and says nothing.
    again = _run(ROOT, TIPLINE_DATA_DIR=str(data))
    assert again.returncode == 0 and again.stderr == "" and again.stdout == ""


def test_an_unwritable_data_dir_fails_in_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = _run(ROOT, TIPLINE_DATA_DIR=str(blocker / "data"))
    assert proc.returncode == 1
    assert "setup: preparing the model… failed" in proc.stderr
    assert "is not writable" in proc.stderr and "Traceback" not in proc.stderr


def test_without_tesseract_setup_says_image_checks_are_off_and_goes_on(tmp_path: Path) -> None:
    """A PATH with the tools the script uses but neither tesseract nor apt-get (a machine we cannot
    install system packages on): one clear sentence, and the later stages still run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "python3", "sha256sum", "cut", "cat", "mktemp", "rm", "tail", "grep", "id",
                 "dirname", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    proc = _run(_fake_repo(tmp_path, pip_fails=False), PATH=str(bin_dir), PYTHON=sys.executable)
    assert "image checks are off" in proc.stderr and "apt-get install tesseract-ocr" in proc.stderr
    assert "setup: preparing the model… failed" in proc.stderr  # the stages after it ran (the stand-in fails)
