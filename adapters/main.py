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
    tipline eval claim-matching ...      CLEF-2020 Task 2 run file + MAP@5
    tipline eval corroboration ...       same-story detection over CLEF tweets as a message stream
    tipline eval evidence --data PATH    CLIMATE-FEVER: evidence retrieval and the verdict policy
    tipline bench ingest|match|corroborate|digest|pipeline ...   speed figures
    tipline bench watch [--channels N]   watched channels at scale: ingest, poll cost, lag, requests/min
    tipline bench burst [-n N]           N concurrent REST checks: time to 201/202, /healthz meanwhile
    tipline bench cold [--repeats N]     CPU, wall and peak RSS of a cold `tipline check` (fresh processes)
    tipline bench ocr [--quick]          screenshots: OCR character error rate and time per image
    tipline bench report [--quick]       every documented figure, written into docs/benchmarks.md
    tipline watch add|list|remove @NAME|URL  public Telegram channels (web preview) and news feeds (docs/watch.md)
    tipline watch login|logout           the account reader's Telegram account (channels without a preview)
    tipline feeds add|list|remove|refresh  fact-checkers' feeds that fill the knowledge base (docs/feeds.md)
    tipline schema [PATH]                write the Result JSON schema
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
from adapters.cli import render_card, render_json
from bot.app import SetupError, build_app
from bot.check_service import CheckService
from core.language import use_cache_dir as use_language_cache
from bot.render import to_reply
from bot.settings import Settings, configuration_warnings, settings_error
from core.embeddings import EmbeddingError
from core.evaluation import EvalDataError
from core.ingest import IngestFormatError
from core.intake import EmptyInput, intake
from core.model_files import ModelFilesMissing
from schema.models import Result
from storage.sqlite import StorageError
from storage.vectors import DataDirInUse, VectorStoreError

gc_pause.resume()

EXIT_USAGE = 2
EXIT_FAILED = 1
USER_ERRORS = (SetupError, StorageError, VectorStoreError, EmbeddingError, ModelFilesMissing, EmptyInput,
               IngestFormatError, EvalDataError)


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


def _settings(args: argparse.Namespace) -> Settings:
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
    await run(_settings(args), wait_unconfigured=not sys.stdin.isatty(),
              announce=_log_lines if args.log_json else _print_lines)
    return 0


async def cmd_doctor(args: argparse.Namespace) -> int:
    from adapters.doctor import diagnose, format_table

    settings = _settings(args)
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
    from core.image_limits import ImageRefused

    if not args.text and args.image is None:
        print("tipline: check needs the TEXT to check, or --image PATH", file=sys.stderr)
        return EXIT_USAGE
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    settings = _settings(args)
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
    settings = _settings(args)
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


async def cmd_ingest(args: argparse.Namespace) -> int:
    from bot.ingest_files import ingest_source

    mapping = {}
    for item in args.map or []:
        field, sep, column = item.partition("=")
        if not sep or not field or not column:
            print(f"tipline: --map takes FIELD=COLUMN, not {item!r}", file=sys.stderr)
            return EXIT_USAGE
        mapping[field.strip()] = column.strip()
    settings = _settings(args)
    token = args.token or (settings.api_token.get_secret_value() if settings.api_token else None)
    if args.server:
        return await _ingest_remote(args.server, token, args.sources, mapping)
    failed = 0
    try:
        async with build_app(settings) as app:
            for source in args.sources:
                report = await ingest_source(app.kb, source, mapping or None, progress=ProgressBar(f"ingest {source}"),
                                             on_row_error=lambda m: print(f"  skipped {m}", file=sys.stderr),
                                             on_row_warning=lambda m: print(f"  note {m}", file=sys.stderr))
                failed += _print_report(source, report)
            print(f"Knowledge base: {await app.kb.count()} fact-checks.")
    except DataDirInUse as exc:
        # A running bot holds the data dir: hand the files to it when its REST API answers here.
        from adapters.ingest_client import answers, local_server

        server = local_server(settings)
        if not token or not await answers(server):
            raise SetupError(f"the data dir {settings.data_dir} is in use by another tipline process (a running "
                             "`tipline run`?): send the files to it with `tipline ingest --server URL` (the bot "
                             "needs TIPLINE_API_TOKEN), or stop it first, or use a Qdrant server "
                             "(TIPLINE_QDRANT_URL)") from exc
        print(f"tipline: the data dir is in use by a running tipline; sending the files to it at {server}",
              file=sys.stderr)
        return await _ingest_remote(server, token, args.sources, mapping)
    return EXIT_FAILED if failed else 0


async def cmd_forget(args: argparse.Namespace) -> int:
    """`tipline forget --user telegram:4242`: what `/forget me` does for that person, from the command line (a
    right-to-erasure request that came by mail). A running bot holding the data dir does it through its REST
    API (`POST /v1/forget`), as `tipline ingest` hands files over."""
    platform, sep, user = args.user.partition(":")
    if not sep or not platform.strip() or not user.strip():
        print(f"tipline: --user takes PLATFORM:ID (telegram:4242, slack:U0123ABC), not {args.user!r}", file=sys.stderr)
        return EXIT_USAGE
    platform, user = platform.strip().lower(), user.strip()
    settings = _settings(args)
    token = args.token or (settings.api_token.get_secret_value() if settings.api_token else None)
    from bot.app import check_data_dir, edge_dir
    from bot.personal import Privacy
    from storage.message_vectors import MessageVectors
    from storage.sqlite import Database
    from storage.vector_backends import open_vector_store

    check_data_dir(settings.data_dir)
    try:
        # The dimensions only shape new collections; forgetting deletes from the ones there are.
        vectors = await open_vector_store(
            dim=1, path=edge_dir(settings), legacy_path=settings.qdrant_path, url=settings.qdrant_url,
            api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None, load_all=False)
    except DataDirInUse as exc:
        from adapters.ingest_client import answers, forget_remote, local_server

        server = local_server(settings)
        if not token or not await answers(server):
            raise SetupError(f"the data dir {settings.data_dir} is in use by another tipline process (a running "
                             "`tipline run`?): give it TIPLINE_API_TOKEN so this command can ask it, ask the person "
                             "to send /forget me, or stop it first") from exc
        print(f"tipline: the data dir is in use by a running tipline; asking it at {server}", file=sys.stderr)
        done = await forget_remote(server, token, f"{platform}:{user}")
        print(_forgotten_line(args.user, done))
        return 0
    try:
        db = await Database.open(settings.sqlite_path)
        try:
            names = await vectors.collection_names() + list(await vectors.aliases())
            messages = MessageVectors(vectors, settings.messages_collection) \
                if settings.messages_collection in names else None
            forgotten = await Privacy(db, messages=messages, running_wait_s=0).forget(platform, user)
        finally:
            await db.close()
    finally:
        await vectors.aclose()
    print(_forgotten_line(args.user, {"checks": forgotten.checks, "votes": forgotten.votes, "jobs": forgotten.jobs,
                                      "messages": len(forgotten.messages)}))
    return 0


def _forgotten_line(who: str, done: dict[str, int]) -> str:
    return (f"Deleted everything stored of {who} (checks: {done['checks']}, votes: {done['votes']}, queued requests: "
            f"{done['jobs']}, tracked messages: {done['messages']}); no copy is left in the data dir.")


def _print_report(source: str, report: Any) -> int:
    """The report's line (or its one-sentence failure); 1 when nothing was ingested."""
    if report.failed:
        print(f"tipline: nothing ingested from {source}: {report.failed}", file=sys.stderr)
        return 1
    print(f"{source}: {report.summary()}")
    return 0


async def _ingest_remote(server: str, token: str | None, sources: list[str], mapping: dict[str, str]) -> int:
    from adapters.ingest_client import IngestClient

    client = IngestClient(server, token)
    failed, total = 0, None
    for source in sources:
        report, count = await client.send(source, mapping or None)
        for message in report.errors:
            print(f"  skipped {message}", file=sys.stderr)
        for message in report.warnings:
            print(f"  note {message}", file=sys.stderr)
        failed += _print_report(source, report)
        total = count if count is not None else total
    if total is not None:
        print(f"Knowledge base at {server}: {total} fact-checks.")
    return EXIT_FAILED if failed else 0


async def cmd_eval(args: argparse.Namespace) -> int:
    if args.task == "tatoeba":
        return await cmd_eval_tatoeba(args)
    if args.task == "corroboration":
        return await cmd_eval_corroboration(args)
    if args.task == "evidence":
        return await cmd_eval_evidence(args)
    if args.task == "checkability":
        return await cmd_eval_checkability(args)
    if args.task == "realistic":
        return await cmd_eval_realistic(args)
    from evals.claim_eval import run_claim_matching

    bar = ProgressBar("index claims")

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "index":
            bar(done, total)
        elif done == total or done % 200 == 0:
            print(f"matched {done}/{total}", file=sys.stderr)

    outcome = await run_claim_matching(_settings(args), args.claims, args.queries, args.out, args.qrels, args.tag,
                                       progress=progress)
    print(f"wrote {args.out}: {outcome.queries} queries x top 20 over {outcome.claims} claims")
    if outcome.scores:
        s = outcome.scores
        print(f"queries={s.queries} MAP@5={s.map5:.4f} MRR={s.mrr:.4f} recall@5={s.recall5:.4f}")
    return 0


async def cmd_eval_corroboration(args: argparse.Namespace) -> int:
    from bot.app import check_data_dir, load_embedder, load_multilingual
    from evals.corroboration_eval import run_corroboration_eval

    settings = _settings(args)
    check_data_dir(settings.data_dir)
    embedder, multilingual = await asyncio.gather(asyncio.to_thread(load_embedder, settings),
                                                  asyncio.to_thread(load_multilingual, settings))
    result = await asyncio.to_thread(run_corroboration_eval, args.messages, args.out, args.qrels,
                                     embedder=embedder, quiet=True, multilingual=multilingual)
    print(f"wrote {args.out}: {result['messages']} messages in {result['clusters']} stories")
    if args.qrels:
        print(f"pairwise P={result['precision']:.4f} R={result['recall']:.4f} F1={result['f1']:.4f}")
    if args.translations:
        if not args.qrels:
            raise EvalDataError("--translations needs --qrels")
        from evals.corroboration_eval import run_translated_eval

        both = await asyncio.to_thread(run_translated_eval, args.messages, args.translations, args.qrels,
                                       embedder, multilingual)
        print(f"with the translations ({both['messages']} messages): pairwise P={both['precision']:.4f} "
              f"R={both['recall']:.4f} F1={both['f1']:.4f}; linked to their own translation "
              f"{both['linked_to_own_translation']:.4f}")
    return 0


async def cmd_eval_realistic(args: argparse.Namespace) -> int:
    from evals.realistic_eval import evaluate

    def progress(done: int, total: int) -> None:
        if done == total or done % 100 == 0:
            print(f"checked {done}/{total}", file=sys.stderr)

    outcome = await evaluate(_settings(args), args.data, split=args.split, progress=progress)
    print(outcome.table())
    if args.failures:
        args.failures.write_text("\n".join(json.dumps(f, ensure_ascii=False) for f in outcome.failures) + "\n",
                                 encoding="utf-8")
        print(f"wrote {args.failures}: {len(outcome.failures)} wrong answers")
    if args.out:
        args.out.write_text(json.dumps({"split": args.split, **outcome.figures()}, indent=1) + "\n",
                            encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


async def cmd_eval_checkability(args: argparse.Namespace) -> int:
    from bot.app import check_data_dir, load_multilingual
    from evals.checkability_eval import read_messages, run_checkability_eval
    from core.checkability import CheckabilityModel, ClaimGate

    settings = _settings(args)
    read_messages(args.messages)  # a bad file fails in one sentence before the model loads
    check_data_dir(settings.data_dir)
    gate = ClaimGate(CheckabilityModel.load(), await asyncio.to_thread(load_multilingual, settings))
    outcome = await asyncio.to_thread(run_checkability_eval, gate, args.messages, args.out)
    print(f"wrote {args.out}: {outcome.messages} messages, {outcome.claims} with a claim")
    if outcome.scores:
        for name, s in outcome.scores.items():
            print(f"{name}: P={s.precision:.4f} R={s.recall:.4f} F1={s.f1:.4f} (n={s.support})")
        print(f"macro-F1={outcome.macro_f1:.4f}")
    return 0


async def cmd_eval_tatoeba(args: argparse.Namespace) -> int:
    from bot.app import check_data_dir, load_embedder, load_multilingual
    from evals.tatoeba_eval import evaluate, read_pairs

    settings = _settings(args)
    for lang in args.languages:
        read_pairs(args.data, lang, 1)  # a missing file fails in one sentence before the models load
    check_data_dir(settings.data_dir)
    multilingual, english = await asyncio.gather(asyncio.to_thread(load_multilingual, settings),
                                                 asyncio.to_thread(load_embedder, settings))
    rows = await asyncio.to_thread(evaluate, args.data, multilingual, english, args.languages, args.limit)
    print("model\tlanguage\tpairs\tto English\tfrom English")
    for r in rows:
        print(f"{r.model}\t{r.language}\t{r.pairs}\t{r.to_english:.4f}\t{r.from_english:.4f}")
    return 0


async def cmd_eval_evidence(args: argparse.Namespace) -> int:
    from bot.app import check_data_dir, load_embedder
    from evals.evidence_eval import format_report, read_climate_fever, run_evidence_eval

    settings = _settings(args)
    read_climate_fever(args.data)  # a bad file fails in one sentence before the model loads
    check_data_dir(settings.data_dir)
    embedder = await asyncio.to_thread(load_embedder, settings)
    bar = ProgressBar("embed claims and sentences")
    report = await asyncio.to_thread(run_evidence_eval, args.data, embedder, split=args.split,
                                     cache_dir=args.cache_dir, progress=lambda _s, d, t: bar(d, t))
    print(format_report(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


async def cmd_bench(args: argparse.Namespace) -> int:
    from evals.bench import format_report, plain

    settings = _settings(args)
    if args.what == "report":
        from evals.bench_report import ReportConfig, run_report

        from evals.vector_cache import default_cache_dir

        # The quick run is a smoke test: it computes everything and keeps nothing.
        cache = None if args.no_vector_cache or args.quick else (args.vector_cache or default_cache_dir())
        config = ReportConfig.for_mode(quick=args.quick, clef=args.clef, climate_fever=args.climate_fever,
                                       vector_cache=cache)
        outcome = await run_report(settings, config, out=args.out, figures_json=args.figures_json,
                                   progress=lambda m: print(f"bench report: {m}", file=sys.stderr))
        print(f"wrote {outcome.path}: {len(outcome.blocks)} generated blocks in {outcome.seconds / 60:.1f} min")
        return 0
    if args.what == "burst":
        from evals.bench_burst import bench_burst, format_burst

        burst = await bench_burst(settings, n=args.n, sequential=args.sequential)
        print(json.dumps(burst, indent=2, ensure_ascii=False) if args.json else format_burst(burst))
        return 0
    if args.what == "cold":
        from evals.bench_cold import bench_cold, format_cold

        cold = await bench_cold(settings, repeats=args.repeats)
        print(json.dumps(cold, indent=2, ensure_ascii=False) if args.json else format_cold(cold))
        return 0
    if args.what == "ocr":
        from evals.bench_ocr import bench_ocr, format_ocr

        try:
            ocr = await bench_ocr(settings, quick=args.quick)
        except RuntimeError as exc:
            print(f"tipline: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print(json.dumps(ocr, indent=2, ensure_ascii=False) if args.json else format_ocr(ocr))
        return 0
    if args.what == "watch":
        from evals.bench_watch import bench_watch, format_watch

        watched = await bench_watch(settings, channels=args.channels, posts=args.posts, new=args.new,
                                    cycles=args.cycles, interval_s=args.interval, gap_s=args.gap, tick_s=args.tick,
                                    checks=args.checks, live_rate=args.live_rate, check_every_s=args.check_every,
                                    progress=lambda m: print(f"bench watch: {m}", file=sys.stderr))
        print(json.dumps(watched, indent=2, ensure_ascii=False) if args.json else format_watch(watched))
        return 0
    if args.what == "pipeline":
        from evals.bench_pipeline import bench_pipeline, format_pipeline

        report = await bench_pipeline(settings, levels=args.concurrency, llm_ms=args.llm_ms, search_ms=args.search_ms,
                                      repeats=args.repeats, processes=not args.no_processes)
        print(json.dumps(plain(report), indent=2) if args.json else format_pipeline(report))
        return 0
    if args.what == "ingest":
        from evals.bench_ingest import bench_ingest

        report = await bench_ingest(settings, args.claims, limit=args.limit, repeats=args.repeats)
    elif args.what == "digest":
        from evals.bench_digest import bench_digest

        report = await bench_digest(settings, stored=args.stored, chats=args.chats, stories=args.stories,
                                    top_k=args.top, repeats=args.repeats)
    elif args.what == "corroborate":
        from evals.bench_corroborate import bench_corroborate

        report = await bench_corroborate(settings, args.messages, args.queries, stored=args.stored,
                                         ingest_n=args.ingest_n, lookups=args.n, repeats=args.repeats,
                                         keep=args.keep, candidates=args.candidates)
    else:
        from evals.bench_match import bench_match

        report = await bench_match(settings, args.claims, args.queries, n_queries=args.n, repeats=args.repeats,
                                   scale_to=args.scale_to, keep=args.keep)
    print(json.dumps(plain(report), indent=2) if args.json else format_report(report))
    return 0


async def cmd_vectors(args: argparse.Namespace) -> int:
    """`tipline vectors push --url URL`: the data dir's collections onto a Qdrant server (storage/vector_backends.py)."""
    from bot.app import edge_dir
    from storage.vector_backends import push_to_server

    settings = _settings(args)
    url = args.url or settings.qdrant_url
    if not url:
        print("tipline: say which Qdrant server with --url (or TIPLINE_QDRANT_URL)", file=sys.stderr)
        return EXIT_USAGE
    key = args.api_key or (settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None)
    copied = await push_to_server(edge_dir(settings), url, api_key=key, legacy_path=settings.qdrant_path,
                                  replace=args.replace)
    for name, n in copied.items():
        print(f"{name}: {n} points")
    print(f"Done; the data dir is unchanged. Set TIPLINE_QDRANT_URL={url} to use the server.")
    return 0


async def cmd_feeds(args: argparse.Namespace) -> int:
    from adapters.feeds_cli import feeds_command

    return await feeds_command(args.action, getattr(args, "feeds", []), _settings(args),
                               recommended=getattr(args, "recommended", False))


async def cmd_watch(args: argparse.Namespace) -> int:
    from adapters.watch_cli import watch_command

    return await watch_command(args.action, getattr(args, "channels", []), _settings(args))


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


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        levels = ()
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"want positive whole numbers separated by commas, not {text!r}")
    return levels


def _bench_parsers(sub, common: argparse.ArgumentParser) -> None:
    b = sub.add_parser("bench", parents=[common], help="speed benchmarks (figures for docs/benchmarks.md)")
    bsub = b.add_subparsers(dest="what", required=True)
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--json", action="store_true", help="print the report as JSON")

    bc = bsub.add_parser("cold", parents=[common, out], help="CPU, wall time and peak RSS of a cold "
                         "`tipline check`, each repeat a fresh process")
    bc.add_argument("--repeats", type=int, default=5, help="processes per input (median reported)")

    bb = bsub.add_parser("burst", parents=[common, out], help="N concurrent REST checks against a tipline run "
                         "process: time to 201/202, time to the Result, /healthz latency meanwhile")
    bb.add_argument("-n", type=int, default=300, help="checks sent at once")
    bb.add_argument("--sequential", action="store_true", help="one check after another (each when the last "
                    "Result is in hand): the latency a user sees with nothing else running")

    bi = bsub.add_parser("ingest", parents=[common, out], help="ingest speed against embedding alone")
    bi.add_argument("--claims", type=Path, required=True, help="a claims TSV (vclaim_id, vclaim, title)")
    bi.add_argument("--limit", type=int, default=2000, help="claims per run")
    bi.add_argument("--repeats", type=int, default=3, help="runs, each in a fresh data dir")

    bm = bsub.add_parser("match", parents=[common, out], help="match latency of a message never seen before")
    bm.add_argument("--claims", type=Path, required=True, help="a claims TSV (vclaim_id, vclaim, title)")
    bm.add_argument("--queries", type=Path, required=True, help="queries TSV (id, text): the long messages")
    bm.add_argument("-n", type=int, default=200, help="messages of each kind")
    bm.add_argument("--repeats", type=int, default=3, help="timed passes over the messages")
    bm.add_argument("--scale-to", type=int, default=0, metavar="N",
                    help="a knowledge base of N claims: the file's plus synthetic ones made from them (untimed)")
    bm.add_argument("--keep", type=Path, metavar="DIR", help="fill this data dir and keep it; a kept one is "
                    "reused without filling again (100k claims take a long fill and index build)")

    bc = bsub.add_parser("corroborate", parents=[common, out], help='"also reported by" ingest and lookup speed')
    bc.add_argument("--messages", type=Path, required=True, help="tweets TSV used as stored channel messages")
    bc.add_argument("--queries", type=Path, required=True, help="tweets TSV of checked texts")
    bc.add_argument("--stored", type=int, default=100_000, help="messages stored before timing")
    bc.add_argument("--ingest-n", type=int, default=600, help="new messages ingested per repeat")
    bc.add_argument("-n", type=int, default=200, help="lookups per repeat")
    bc.add_argument("--repeats", type=int, default=3)
    bc.add_argument("--keep", type=Path, metavar="DIR", help="fill this data dir and keep it; a kept one is "
                    "reused without filling or indexing again (1M messages take a long index build)")
    bc.add_argument("--candidates", type=lambda v: [int(x) for x in v.split(",")], default=[], metavar="K[,K...]",
                    help="nearest rows a lookup reads and scores; several are timed side by side")

    bd = bsub.add_parser("digest", parents=[common, out], help="a digest built over stored tracked messages")
    bd.add_argument("--stored", type=int, default=100_000, help="messages stored in the window before timing")
    bd.add_argument("--chats", type=int, default=500, help="tracked channels posting them")
    bd.add_argument("--stories", type=int, default=5_000, help="stories they belong to (Zipf-sized)")
    bd.add_argument("--top", type=int, default=5, help="stories shown (each matched against the fact-checks)")
    bd.add_argument("--repeats", type=int, default=3)

    bp = bsub.add_parser("pipeline", parents=[common, out], help="whole checks on the LLM path, fake providers")
    bp.add_argument("--concurrency", type=_levels, default=(1, 10, 50), help="concurrent checks per level, "
                    "comma-separated (default 1,10,50)")
    bp.add_argument("--llm-ms", type=float, default=800, help="fake LLM latency")
    bp.add_argument("--search-ms", type=float, default=400, help="fake search latency")
    bp.add_argument("--repeats", type=int, default=1, help="runs, each in a fresh data dir")
    bp.add_argument("--no-processes", action="store_true",
                    help="skip timing tipline ingest/check/run as processes (time and peak RSS)")

    bw = bsub.add_parser("watch", parents=[common, out], help="watched public channels at scale: first-read ingest, "
                         "a poll cycle's cost, the lag to 'also reported by', requests per minute, checks beside it")
    bw.add_argument("--channels", type=int, default=200, help="channels on the local t.me")
    bw.add_argument("--posts", type=int, default=20, help="posts each channel has at first")
    bw.add_argument("--new", type=int, default=3, help="posts each channel adds per 10-minute cycle")
    bw.add_argument("--cycles", type=int, default=2, help="steady-state cycles timed")
    bw.add_argument("--interval", type=float, default=120.0, help="the live phase's poll interval, seconds "
                    "(TIPLINE_WATCH_INTERVAL_S is 600; the phase lasts two intervals)")
    bw.add_argument("--gap", type=float, default=0.2, help="the live phase's pause between requests, seconds "
                    "(tipline run: 1)")
    bw.add_argument("--tick", type=float, default=30.0, help="how often the live poller looks for channels due")
    bw.add_argument("--checks", type=int, default=20, help="checks timed with nothing else running")
    bw.add_argument("--check-every", type=float, default=1.0, help="seconds between the starts of two checks "
                    "beside the live poller")
    bw.add_argument("--live-rate", type=float, help="posts per second in the live phase (default: the rate of "
                    "--channels channels adding --new posts per 10 minutes)")

    bo = bsub.add_parser("ocr", parents=[common, out], help="screenshots: character error rate and time per image "
                         "on images rendered from our own English, Russian and Ukrainian sentences")
    bo.add_argument("--quick", action="store_true", help="two renders of two sentences per language (a smoke test)")

    br = bsub.add_parser("report", parents=[common],
                         help="run every documented benchmark and evaluation, write docs/benchmarks.md")
    br.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test (needs --out)")
    br.add_argument("--out", type=Path, help="the document to (re)write (default docs/benchmarks.md)")
    br.add_argument("--clef", type=Path, default=Path("../shared/eval/clef2020-task2"),
                    help="CLEF-2020 Task 2 directory (verified_claims.docs.tsv, dev/, train/)")
    br.add_argument("--climate-fever", type=Path, default=Path("../shared/eval/climate-fever/climate-fever.jsonl"),
                    help="CLIMATE-FEVER JSON lines")
    br.add_argument("--figures-json", type=Path, help="also write every figure of the run as JSON")
    br.add_argument("--vector-cache", type=Path,
                    help="keep untimed vectors of the evaluation data here between runs "
                         "(default ~/.cache/tipline/eval-vectors)")
    br.add_argument("--no-vector-cache", action="store_true",
                    help="embed all evaluation data again (what a first run on a new machine does)")


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

    e = sub.add_parser("eval", parents=[common], help="evaluate against public data sets")
    esub = e.add_subparsers(dest="task", required=True)
    cm = esub.add_parser("claim-matching", parents=[common], help="CLEF-2020 CheckThat! Task 2: TREC run file "
                         "and MAP@5")
    cm.add_argument("--claims", type=Path, required=True, help="verified_claims.docs.tsv")
    cm.add_argument("--queries", type=Path, required=True, help="tweets.queries.tsv")
    cm.add_argument("--out", type=Path, required=True, help="run file to write")
    cm.add_argument("--qrels", type=Path, help="tweet-vclaim-pairs.qrels: print MAP@5, MRR, recall@5")
    cm.add_argument("--tag", default="tipline", help="run tag (last column)")

    co = esub.add_parser("corroboration", parents=[common], help="same-story detection over tweets as a message "
                         "stream")
    co.add_argument("--messages", type=Path, required=True, help="tweets.queries.tsv")
    co.add_argument("--out", type=Path, required=True, help="message_id<TAB>cluster_id file to write")
    co.add_argument("--qrels", type=Path, help="tweet-vclaim-pairs.qrels: print pairwise precision, recall, F1")
    co.add_argument("--translations", type=Path, help="translations of the same tweets (same ids, e.g. "
                    "eval/clef2020-ru/dev/tweets.queries.tsv), posted by other accounts: same-story detection "
                    "across languages")

    ev = esub.add_parser("evidence", parents=[common], help="CLIMATE-FEVER: evidence retrieval (dense, BM25, "
                         "hybrid) and the verdict policy with oracle stances")
    ev.add_argument("--data", type=Path, required=True, help="climate-fever.jsonl")
    ev.add_argument("--split", choices=["dev", "train", "all"], default="dev",
                    help="claims to report (hash of claim_id: 70%% train, 30%% dev); train is always shown too")
    ev.add_argument("--out", type=Path, help="write the full report as JSON")
    ev.add_argument("--cache-dir", type=Path, help="keep the sentence vectors here as .npy for reruns")

    ck = esub.add_parser("checkability", parents=[common], help="is there a checkable claim? the offline gate "
                         "over a TSV (tweet_id, tweet_text; CLEF-2020 Task 1 files as they are)")
    ck.add_argument("--messages", type=Path, required=True, help="TSV with a header: tweet_id, tweet_text "
                    "(a claim column, when present, is scored)")
    ck.add_argument("--out", type=Path, required=True, help="tweet_id<TAB>p_claim<TAB>label file to write")

    re_ = esub.add_parser("realistic", parents=[common], help="chat-like forwards (eval/realistic): whole offline "
                          "checks, right answers by language and kind")
    re_.add_argument("--data", type=Path, default=Path("eval/realistic"), help="directory of *.jsonl rows")
    re_.add_argument("--split", choices=["dev", "train", "all"], default="dev",
                     help="rows by fact-check (one in three is dev)")
    re_.add_argument("--failures", type=Path, help="write each wrong answer as a JSON line")
    re_.add_argument("--out", type=Path, help="write the figures as JSON (what `tipline bench report` renders)")

    ta = esub.add_parser("tatoeba", parents=[common], help="Tatoeba RU/UK-EN: does each model find a sentence's "
                         "translation among 1,000 (nearest-neighbour accuracy, both directions)")
    ta.add_argument("--data", type=Path, default=Path("../shared/eval/tatoeba"),
                    help="directory with tatoeba.<lang>-eng.<lang> and tatoeba.<lang>-eng.eng")
    ta.add_argument("--languages", type=lambda v: [x for x in v.split(",") if x], default=["rus", "ukr"],
                    help="comma-separated (default rus,ukr)")
    ta.add_argument("--limit", type=int, help="first N pairs only")

    _bench_parsers(sub, common)

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
    handlers = {"run": cmd_run, "doctor": cmd_doctor, "check": cmd_check, "chat": cmd_chat, "ingest": cmd_ingest, "forget": cmd_forget, "eval": cmd_eval, "bench": cmd_bench,
                "vectors": cmd_vectors, "watch": cmd_watch, "feeds": cmd_feeds}
    return await handlers[args.command](args)


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
    if args.command == "bench" and args.what == "report" and args.quick and not args.out:
        parser.error("bench report --quick needs --out: its figures are a smoke test, not for docs/benchmarks.md")
    try:
        if args.command == "schema":
            return cmd_schema(args)
        if args.command == "openapi":
            return cmd_openapi(args)
        code = asyncio.run(_dispatch(args))
        if args.command == "check" and argv is None:  # the program itself, not a caller in this process
            # Everything is closed and written by now; what is left is the interpreter freeing ~500 MB of
            # models object by object, ~0.1 s of CPU a one-shot check does not need (issue 14).
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
        if args.debug:
            raise
        print(f"tipline: unexpected error ({exc.__class__.__name__}: {exc}); run the same command again with "
              "--debug for the details", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
