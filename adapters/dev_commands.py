"""`tipline eval` and `tipline bench`: their options and code live in evals/cli.py, which is not part of the
installed program (the wheel and the image ship the product only). Both names are always listed, so
`tipline --help` reads the same everywhere; evals/ is imported only when one of them is run, so no other
command loads it, and without a source checkout each says so in one sentence."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from adapters.cli_support import EXIT_USAGE

HELP = {"eval": "evaluate against public data sets",
        "bench": "speed benchmarks (figures for docs/benchmarks.md)"}
NOT_INSTALLED = ("tipline: `tipline {command}` runs from a source checkout of tipline (the evals/ folder); "
                 "the installed program does not include it\n")


def evals_cli() -> ModuleType | None:
    """evals/cli.py, or None when this program has no evals/ beside it (an installed wheel)."""
    try:
        return importlib.import_module("evals.cli")
    except ModuleNotFoundError as exc:
        if exc.name not in ("evals", "evals.cli"):
            raise
    # The checkout's editable install maps only the shipped packages, so evals/ is found beside adapters/.
    source = Path(__file__).resolve().parent.parent / "evals"
    spec = importlib.util.spec_from_file_location("evals", source / "__init__.py",
                                                  submodule_search_locations=[str(source)])
    if spec is None or spec.loader is None or not (source / "cli.py").is_file():
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evals"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("evals.cli")


def _loaded(command: str, parser: argparse.ArgumentParser) -> ModuleType:
    cli = evals_cli()
    if cli is None:
        parser.exit(EXIT_USAGE, NOT_INSTALLED.format(command=command))
    return cli


class _Help(argparse.Action):
    """`tipline eval --help`: the help of evals/cli.py's parser."""

    def __init__(self, option_strings: list[str], dest: str, command: str = "", common: Any = None,
                 **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)
        self.command, self.common = command, common

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _loaded(self.command, parser).build(self.command, parser.prog, self.common).print_help()
        parser.exit()


class _Deferred(argparse.Action):
    """Takes every argument after `eval`/`bench` (and their global flags) and parses them with evals/cli.py's
    parser, as a subparser would: unknown arguments go back to the top level, which names them."""

    def __init__(self, option_strings: list[str], dest: str, command: str = "", common: Any = None,
                 top: Any = None, **kw: Any) -> None:
        super().__init__(option_strings, dest, **kw)
        self.command, self.common, self.top = command, common, top

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        cli = _loaded(self.command, parser)
        parsed, extra = cli.build(self.command, parser.prog, self.common).parse_known_args(values)
        for key, value in vars(parsed).items():
            setattr(namespace, key, value)
        if extra:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(extra)
        problem = cli.refusal(argparse.Namespace(**{**vars(namespace), "command": self.command}))
        if problem:
            self.top.error(problem)


def add_dev_commands(sub: Any, common: argparse.ArgumentParser, top: argparse.ArgumentParser) -> None:
    """`eval` and `bench` as two entries of the top-level subcommands (`sub`), where `tipline --help` lists them."""
    for command, text in HELP.items():
        stub = sub.add_parser(command, parents=[common], help=text, add_help=False)
        stub.add_argument("-h", "--help", action=_Help, command=command, common=common)
        stub.add_argument("arguments", nargs=argparse.REMAINDER, action=_Deferred, default=argparse.SUPPRESS,
                          command=command, common=common, top=top)
