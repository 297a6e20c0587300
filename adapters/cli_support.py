"""What the `tipline` commands share: exit codes, the progress bar, and the settings of one run (the
product's commands in adapters/ and the evaluation commands in evals/cli.py alike)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from pydantic import ValidationError

from bot.settings import Settings, configuration_warnings, settings_error
from core.intake.language import use_cache_dir as use_language_cache

EXIT_USAGE = 2
EXIT_FAILED = 1


class ProgressBar:
    """A one-line progress bar on a terminal; occasional plain lines when stderr is a file."""

    def __init__(self, label: str):
        self.label = label
        self.tty = sys.stderr.isatty()
        self._last_pct = -1

    def __call__(self, done: int, total: int) -> None:
        pct = int(100 * done / total) if total else 100
        if self.tty:
            filled = pct * 30 // 100
            sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
            if done >= total:
                sys.stderr.write("\n")
        elif pct // 10 != self._last_pct // 10 or done >= total:
            sys.stderr.write(f"{self.label}: {done}/{total}\n")
        self._last_pct = pct
        sys.stderr.flush()


class BadSetting(Exception):
    """A setting's value is refused; the message names its TIPLINE_* variable (bot/settings.py settings_error)."""


def settings_for(args: argparse.Namespace) -> Settings:
    """The settings of this run. A TIPLINE_* variable that is no setting (a typo) is a warning on stderr
    naming the closest setting, before anything starts; `tipline doctor` lists them in its table instead."""
    overrides = {"data_dir": args.data_dir} if args.data_dir else {}
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        raise BadSetting(settings_error(exc, os.environ)) from exc
    use_language_cache(settings.models_dir)  # before the first message's language is read
    if args.command != "doctor":
        for line in configuration_warnings(os.environ):
            if getattr(args, "log_json", False):  # stderr stays one JSON object per line
                logging.getLogger("tipline.settings").warning("%s", line)
            else:
                print(f"tipline: warning: {line}", file=sys.stderr, flush=True)
    return settings

