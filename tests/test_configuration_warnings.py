"""Configuration that speaks up: a TIPLINE_* variable that is no setting (a typo) is a warning naming the
closest setting, in the environment and in the .env file; a refused value names its environment variable;
`tipline doctor` lists the warnings in its table. The CLI runs as a real process, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.settings import (Settings, closest_variable, configuration_warnings, setting_variables,
                          settings_error)

ROOT = Path(__file__).resolve().parent.parent
TYPO = "TIPLINE_TELEGRAM_BOT_TOKEN"
TYPO_WARNING = f"{TYPO} is not a tipline setting and is ignored; did you mean TIPLINE_TELEGRAM_TOKEN?"


def test_a_mistyped_variable_names_the_setting_it_likely_meant() -> None:
    env = {TYPO: "123:abc", "TIPLINE_HTTP_PORT": "9090", "PATH": "/usr/bin", "TIPLINE_LLM_MODLE": "llama3.1",
           "TIPLINE_SLACK_SIGNING_SECRETS": "s", "tipline_data_dir": "/data"}  # case does not matter to Settings
    assert configuration_warnings(env, env_file=None) == [
        "TIPLINE_LLM_MODLE is not a tipline setting and is ignored; did you mean TIPLINE_LLM_MODEL?",
        "TIPLINE_SLACK_SIGNING_SECRETS is not a tipline setting and is ignored; did you mean "
        "TIPLINE_SLACK_SIGNING_SECRET?",
        TYPO_WARNING]
    assert closest_variable("TIPLINE_TELEGRAM_WEBHOOK") == "TIPLINE_TELEGRAM_WEBHOOK_URL"
    far = configuration_warnings({"TIPLINE_XYZZY_PLUGH": "1"}, env_file=None)
    assert far == ["TIPLINE_XYZZY_PLUGH is not a tipline setting and is ignored (README.md, Configuration, "
                   "lists every setting)"]


def test_every_setting_and_the_test_runners_variable_pass_without_a_word() -> None:
    env = dict.fromkeys(setting_variables(), "x") | {"TIPLINE_TEST_WORKERS": "0"}
    assert configuration_warnings(env, env_file=None) == []
    assert "TIPLINE_TELEGRAM_TOKEN" in setting_variables() and len(setting_variables()) == len(Settings.model_fields)


def test_the_env_file_is_checked_too_when_there_is_one(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("# comments and compose's own variables are fine\nPUBLISH=127.0.0.1:8080\n"
                      f"export {TYPO}=123:abc\nTIPLINE_API_TOKEN=change-me\nTELEGRAM_TOKEN=123:abc\n", encoding="utf-8")
    assert configuration_warnings({}, env_file=dotenv) == [
        f"{TYPO} in {dotenv} is not a tipline setting and is ignored; did you mean TIPLINE_TELEGRAM_TOKEN?",
        f"TELEGRAM_TOKEN in {dotenv} is ignored: tipline reads TIPLINE_TELEGRAM_TOKEN"]
    assert configuration_warnings({}, env_file=tmp_path / "missing.env") == []


def test_a_refused_value_names_its_variable_and_never_echoes_a_secret(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("TIPLINE_")]:
        monkeypatch.delenv(key)
    dotenv = tmp_path / ".env"
    dotenv.write_text("TIPLINE_WORKERS=0\n", encoding="utf-8")
    monkeypatch.setenv("TIPLINE_HTTP_PORT", "eighty")
    monkeypatch.setenv("TIPLINE_TELEGRAM_TOKEN", "")
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=dotenv, llm_api_key=["sk-secret"])  # type: ignore[call-arg, arg-type]
    sentence = settings_error(caught.value, os.environ, dotenv)
    assert sentence.startswith("bad setting ")
    assert "TIPLINE_HTTP_PORT (it is 'eighty'): Input should be a valid integer" in sentence
    assert f"TIPLINE_WORKERS in {dotenv} (it is '0'): Input should be greater than or equal to 1" in sentence
    assert "TIPLINE_LLM_API_KEY: Input should be a valid string" in sentence and "sk-secret" not in sentence
    assert "http_port" not in sentence


def _tipline(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, in `tmp_path` (its .env, if the test wrote one), with no developer's
    TIPLINE_* variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    base |= {"TIPLINE_DATA_DIR": str(tmp_path / "data"), "TIPLINE_GDELT_URL": "", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "adapters.main", *argv], env=base | env, cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_the_cli_warns_at_start_and_names_the_variable_of_a_bad_value(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TIPLINE_LLM_MODLE=llama3.1\n", encoding="utf-8")
    # An empty message ends before any model loads: what is left on stderr is the warnings and the refusal.
    proc = _tipline(tmp_path, "check", " ", **{TYPO: "123:abc"})
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert f"tipline: warning: {TYPO_WARNING}" in lines
    assert ("tipline: warning: TIPLINE_LLM_MODLE in .env is not a tipline setting and is ignored; did you mean "
            "TIPLINE_LLM_MODEL?") in lines

    proc = _tipline(tmp_path, "run", TIPLINE_HTTP_PORT="eighty")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "tipline: bad setting TIPLINE_HTTP_PORT (it is 'eighty'): Input should be a valid integer, unable to "
        "parse string as an integer")


def test_doctor_lists_the_warnings_in_its_table(tmp_path: Path) -> None:
    proc = _tipline(tmp_path, "doctor", "--timeout", "5", **{TYPO: "123:abc"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split(None, 2) for line in proc.stdout.splitlines()[1:]]
    assert ["settings", "warn", TYPO_WARNING] in rows
    assert "tipline: warning" not in proc.stderr  # said once, in the table
    assert "1 variable(s) are ignored" in proc.stdout.splitlines()[-1]
