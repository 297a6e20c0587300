"""The `tipline` command (the entry point; `tipline run` wires the bots in adapters/run.py). Every
failure a user can cause ends in one sentence and a non-zero exit.

    tipline chat                         interactive checks in the terminal (Ctrl-D exits)
    tipline run                          the chat bots and the REST API that are configured, with a banner
    tipline doctor                       check the settings and reach every configured service (a table)
    tipline --version
    tipline check [--json] TEXT          one check; '-' reads the text from standard input
    tipline check --image PATH [TEXT]    the text of a screenshot (OCR), with TEXT as its caption
    tipline ingest PATH_OR_URL...        load previously fact-checked claims (--server URL: into a running bot)
    tipline forget --user PLATFORM:ID    delete one person's checks, votes and tracked messages (bot/personal.py)
    tipline vectors push --url URL       copy the data dir's vector collections onto a Qdrant server
    tipline watch add|list|remove @NAME|URL  public Telegram channels (web preview) and news feeds (docs/watch.md)
    tipline watch login|logout           the account reader's Telegram account (channels without a preview)
    tipline feeds add|list|remove|refresh  fact-checkers' feeds that fill the knowledge base (docs/feeds.md)
    tipline schema [PATH]                write the Result JSON schema
    tipline eval|bench ...               evaluations and benchmarks, from a source checkout (evals/cli.py)
"""

from __future__ import annotations

from adapters import gc_pause  # first: no garbage collection while the modules below load (see there)
from adapters import blas_threads  # noqa: F401  # before numpy loads: OpenBLAS starts one thread (see there)

import argparse
import asyncio
import json
import logging
import os
import select
import sys
from typing import Any
from pathlib import Path

from pydantic import ValidationError

from adapters.banner import tipline_version
from adapters.cli_support import EXIT_FAILED, EXIT_USAGE, BadSetting, settings_for
from adapters.data_commands import cmd_forget, cmd_ingest, cmd_vectors
from adapters.dev_commands import add_dev_commands
from adapters.terminal_card import render_card, render_json
from bot.app import SetupError, build_app
from bot.check_service import CheckService
from bot.render import to_reply
from bot.settings import Settings, configuration_warnings
from core.encoders.embeddings import EmbeddingError
from core.ingest import IngestFormatError
from core.intake.message import EmptyInput, intake
from core.encoders.model_files import ModelFilesMissing
from schema.models import Result
from storage.sqlite import StorageError
from storage.vectors import VectorStoreError

gc_pause.resume()

USER_ERRORS = (SetupError, StorageError, VectorStoreError, EmbeddingError, ModelFilesMissing, EmptyInput,
               IngestFormatError)


def _eval_data_error(exc: Exception) -> bool:
    """An eval command's bad data file: a user error too, recognised without importing evals/ for every command."""
    evaluation = sys.modules.get("evals.evaluation")
    return evaluation is not None and isinstance(exc, evaluation.EvalDataError)


# --- commands -----------------------------------------------------------------------------------

def _print_lines(lines: list[str]) -> None:
    print("\n".join(lines), file=sys.stderr, flush=True)


def _log_lines(lines: list[str]) -> None:
    """With --log-json, stderr stays one JSON object per line: the banner goes through the log."""
    for line in lines:
        logging.getLogger("tipline.run").info("%s", line)


async def cmd_run(args: argparse.Namespace) -> int:
    from adapters.run import run

    # On a terminal, nothing configured ends with the sentence; as a service (no terminal: compose,
    # systemd) it waits saying so, instead of being restarted for ever (adapters/startup.py).
    await run(settings_for(args), wait_unconfigured=not sys.stdin.isatty(),
              announce=_log_lines if args.log_json else _print_lines)
    return 0


async def cmd_doctor(args: argparse.Namespace) -> int:
    from adapters.doctor import diagnose, format_table

    settings = settings_for(args)
    warnings = configuration_warnings(os.environ)
    rows = await diagnose(settings, timeout_s=args.timeout, warnings=warnings)
    print(format_table(rows))
    failed = [r for r in rows if r.status == "FAIL"]
    if settings.offline:
        print("Offline (TIPLINE_OFFLINE=true): no outside service is used, so none was reached.")
    elif failed:
        print(f"{len(failed)} of {len(rows)} checks failed; the detail column says what to fix.")
    else:
        print("Everything configured works." if not warnings else
              f"Everything configured works, but {len(warnings)} variable(s) are ignored: see the settings rows.")
    return EXIT_FAILED if failed else 0


async def cmd_check(args: argparse.Namespace) -> int:
    from bot.images import read_image_file, refusal_text
    from core.intake.image_limits import ImageRefused

    if not args.text and args.image is None:
        print("tipline: check needs the TEXT to check, or --image PATH", file=sys.stderr)
        return EXIT_USAGE
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    settings = settings_for(args)
    if args.image is None:
        # Nothing to check (empty, emoji only, binary) is refused before any model loads (EmptyInput).
        intake(text, settings.max_input_chars)
    try:
        image = None if args.image is None else await read_image_file(args.image, settings)
        async with build_app(settings, one_shot=True) as app:
            service = CheckService(app.engine, images=app.images)
            result = await (service.check(text) if image is None else service.check_image(image, text))
    except ImageRefused as exc:  # the sentence a chat user would get, in the caption's language
        print(f"tipline: {refusal_text(exc)}", file=sys.stderr)
        return EXIT_FAILED
    print(render_json(result) if args.json else render_card(to_reply(result)))
    return 0


def _read_message() -> str:
    """One message from the terminal. A pasted multi-line message arrives as several lines at once,
    so lines already waiting on a terminal join the first one instead of becoming separate checks."""
    lines = [input("\n> ")]
    while sys.stdin.isatty() and select.select([sys.stdin], [], [], 0.05)[0]:
        more = sys.stdin.readline()
        if not more:
            break
        lines.append(more.rstrip("\n"))
    return "\n".join(lines)


def chat_mode(settings: Settings, app: Any) -> str:
    """"offline mode" when nothing leaves the machine (no LLM: search providers are not asked, see
    core/engine.py); the banner's wording otherwise, e.g. "LLM … ; search queries go to GDELT"."""
    from adapters.banner import Started, mode_line

    sources = app.sources.names if app.sources else []
    if settings.offline or app.llm is None:
        return "offline mode"
    return mode_line(settings, Started(factchecks=0, evidence_sources=sources, llm=app.llm is not None,
                                       vectors="")).removeprefix("mode: ")


async def cmd_chat(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    print("tipline: loading the model and the knowledge base…", file=sys.stderr)
    async with build_app(settings) as app:
        checks = CheckService(app.engine)
        count = await app.kb.count()
        print(f"Ready: {count} fact-checks in the knowledge base, {chat_mode(settings, app)}. Type or paste a "
              "message and press Enter; Ctrl-D exits.", file=sys.stderr)
        while True:
            try:
                line = await asyncio.to_thread(_read_message)
            except EOFError:
                print(file=sys.stderr)
                return 0
            if not line.strip():
                continue
            try:
                result = await checks.check(line)
            except EmptyInput as exc:
                print(str(exc))
                continue
            print()
            print(render_card(to_reply(result)))


async def cmd_feeds(args: argparse.Namespace) -> int:
    from adapters.feeds_cli import feeds_command

    return await feeds_command(args.action, getattr(args, "feeds", []), settings_for(args),
                               recommended=getattr(args, "recommended", False))


async def cmd_watch(args: argparse.Namespace) -> int:
    from adapters.watch_cli import watch_command

    return await watch_command(args.action, getattr(args, "channels", []), settings_for(args))


def cmd_schema(args: argparse.Namespace) -> int:
    schema = json.dumps(Result.model_json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.path == "-":
        sys.stdout.write(schema)
    else:
        Path(args.path).write_text(schema, encoding="utf-8")
        print(f"wrote {args.path}")
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    from adapters.openapi import openapi_text

    text = openapi_text()
    if args.path == "-":
        sys.stdout.write(text)
    else:
        Path(args.path).write_text(text, encoding="utf-8")
        print(f"wrote {args.path}")
    return 0


# --- parser -------------------------------------------------------------------------------------

def _global_flags(defaults: bool) -> argparse.ArgumentParser:
    """--data-dir, --debug and --log-json, accepted before or after any subcommand. Below the top level
    they default to SUPPRESS, so a subcommand that was not given one leaves the top level's value alone."""
    g = argparse.ArgumentParser(add_help=False)
    kw: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    g.add_argument("--data-dir", type=Path, help="data directory (default: $TIPLINE_DATA_DIR or ./data)", **kw)
    g.add_argument("--debug", action="store_true", help="show tracebacks and debug logs", **kw)
    g.add_argument("--log-json", action="store_true", help="JSON log lines (info and up) with job and check ids", **kw)
    return g


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tipline", parents=[_global_flags(defaults=True)],
                                description="Fact-checking bot: check messages against previously fact-checked "
                                "claims and evidence.")
    p.add_argument("--version", action="version", version=f"tipline {tipline_version()}")
    common = _global_flags(defaults=False)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", parents=[common], help="check one message and print the verdict card")
    c.add_argument("--json", action="store_true", help="print the Result JSON instead of the card")
    c.add_argument("--image", metavar="PATH", type=Path,
                   help="a screenshot (PNG, JPEG, WebP): its text is read (Tesseract) and checked, with TEXT as its caption")
    c.add_argument("text", nargs="*", help="the text to check ('-' reads standard input)")

    sub.add_parser("chat", parents=[common], help="interactive checks in the terminal (Ctrl-D exits)")
    sub.add_parser("run", parents=[common], help="run the configured chat bots and the REST API (docs/deploy.md)")
    d = sub.add_parser("doctor", parents=[common], help="check the configuration and reach what is configured "
                       "(Telegram, Slack, the LLM, Qdrant, search providers, the embeddings server)")
    d.add_argument("--timeout", type=float, default=10.0, help="seconds per service (default 10)")

    i = sub.add_parser("ingest", parents=[common], help="load previously fact-checked claims (ClaimReview, "
                       "Fact Check API JSON, CSV/TSV/JSONL, RSS/Atom)")
    i.add_argument("sources", nargs="+", help="files or http(s) URLs")
    i.add_argument("--map", action="append", metavar="FIELD=COLUMN",
                   help="column mapping for CSV/TSV/JSONL, e.g. --map claim=statement --map url=link")
    i.add_argument("--server", metavar="URL", help="send the files to a running `tipline run` (its REST API, "
                   "e.g. http://127.0.0.1:8080) instead of the data dir; automatic when the data dir is in use")
    i.add_argument("--token", help="that server's TIPLINE_API_TOKEN (default: TIPLINE_API_TOKEN)")

    f = sub.add_parser("forget", parents=[common], help="delete one person's checks, votes, queued requests and "
                       "tracked messages, leaving no copy in the data dir (what /forget me does)")
    f.add_argument("--user", required=True, metavar="PLATFORM:ID", help="e.g. telegram:4242 or slack:U0123ABC")
    f.add_argument("--token", help="a running bot's TIPLINE_API_TOKEN, when it holds the data dir "
                   "(default: TIPLINE_API_TOKEN)")

    add_dev_commands(sub, common, p)

    v = sub.add_parser("vectors", parents=[common], help="move the data dir's vector collections")
    vsub = v.add_subparsers(dest="action", required=True)
    vp = vsub.add_parser("push", parents=[common], help="copy every collection onto a Qdrant server (re-upload)")
    vp.add_argument("--url", help="the server (default TIPLINE_QDRANT_URL)")
    vp.add_argument("--api-key", help="the server's API key (default TIPLINE_QDRANT_API_KEY)")
    vp.add_argument("--replace", action="store_true", help="overwrite collections the server already has")
    w = sub.add_parser("watch", parents=[common], help="public Telegram channels read from their web preview, "
                       "without admin rights, and news outlets' RSS/Atom feeds (docs/watch.md)")
    wsub = w.add_subparsers(dest="action", required=True)
    for action, what in (("add", "watch channels or feeds: each is read at once"),
                         ("remove", "stop watching; their stored posts are deleted")):
        wa = wsub.add_parser(action, parents=[common], help=what)
        wa.add_argument("channels", nargs="+", help="@name or a t.me link (a channel), or a feed's address")
    wsub.add_parser("list", parents=[common], help="the watched channels and feeds and how each was last read")
    wsub.add_parser("login", parents=[common], help="log the account reader's dedicated Telegram account in (for "
                    "channels without a public preview; asks for the phone, the code and the 2FA password)")
    wsub.add_parser("logout", parents=[common], help="end the account reader's session and delete its file")
    f = sub.add_parser("feeds", parents=[common], help="fact-checkers' feeds that fill the knowledge base: a "
                       "curated list and any other, read on `tipline run`'s schedule (docs/feeds.md)")
    fsub = f.add_subparsers(dest="action", required=True)
    fa = fsub.add_parser("add", parents=[common], help="read these feeds from now on; each is read at once")
    fa.add_argument("feeds", nargs="*", help="a recommended feed's name (stopfake-ru, snopes, …) or a feed's address")
    fa.add_argument("--recommended", action="store_true", help="every feed of the recommended list")
    fl = fsub.add_parser("list", parents=[common], help="the feeds read and how each was last read")
    fl.add_argument("--recommended", action="store_true", help="the recommended list instead (nothing is added)")
    fr = fsub.add_parser("remove", parents=[common], help="stop reading feeds (their fact-checks stay)")
    fr.add_argument("feeds", nargs="+", help="a feed's name or address")
    fsub.add_parser("refresh", parents=[common], help="read every feed now (not while tipline run holds the data dir)")
    s = sub.add_parser("schema", parents=[common], help="write the Result JSON schema")
    s.add_argument("path", nargs="?", default="docs/result.schema.json")
    o = sub.add_parser("openapi", parents=[common], help="write the REST API's OpenAPI document")
    o.add_argument("path", nargs="?", default="docs/openapi.json")
    return p


async def _dispatch(args: argparse.Namespace) -> int:
    handlers = {"run": cmd_run, "doctor": cmd_doctor, "check": cmd_check, "chat": cmd_chat, "ingest": cmd_ingest,
                "forget": cmd_forget, "vectors": cmd_vectors, "watch": cmd_watch, "feeds": cmd_feeds}
    # `tipline eval` and `tipline bench` bring their own (adapters/dev_commands.py)
    handler = handlers.get(args.command) or args.dev_command
    return await handler(args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from bot.logs import configure, from_environment

    env_level, env_json = from_environment(os.environ)
    args.log_json = args.log_json or env_json
    # In an interactive check a provider being down is already in the card's notes and the trace;
    # a warning line in the middle of the terminal output only gets in the way.
    quiet = logging.ERROR if args.command in ("check", "chat") else logging.WARNING
    default = logging.INFO if args.log_json else quiet
    configure(logging.DEBUG if args.debug else env_level if env_level is not None else default,
              json_lines=args.log_json)
    try:
        if args.command == "schema":
            return cmd_schema(args)
        if args.command == "openapi":
            return cmd_openapi(args)
        code = asyncio.run(_dispatch(args))
        if args.command == "check" and argv is None:  # the program itself, not a caller in this process
            # Everything is closed and written by now; what is left is the interpreter freeing ~500 MB of
            # models object by object, ~0.1 s of CPU a one-shot check does not need.
            sys.stdout.flush()
            sys.stderr.flush()
            logging.shutdown()
            os._exit(code)
        return code
    except USER_ERRORS as exc:
        print(f"tipline: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BadSetting as exc:
        print(f"tipline: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValidationError as exc:
        first = exc.errors()[0]
        print(f"tipline: invalid value {'.'.join(map(str, first['loc']))}: {first['msg']}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\ntipline: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one sentence, the traceback only with --debug
        if _eval_data_error(exc):
            print(f"tipline: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if args.debug:
            raise
        print(f"tipline: unexpected error ({exc.__class__.__name__}: {exc}); run the same command again with "
              "--debug for the details", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
