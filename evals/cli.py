"""The `tipline eval` and `tipline bench` commands: their options and what each runs. adapters/dev_commands.py
lists both names in `tipline --help` and reads their options here only when one of them is run from a source
checkout; the installed program (the wheel, the image) has no evals/.

    tipline eval claim-matching ...      CLEF-2020 Task 2 run file + MAP@5
    tipline eval corroboration ...       same-story detection over CLEF tweets as a message stream
    tipline eval evidence --data PATH    CLIMATE-FEVER: evidence retrieval and the verdict policy
    tipline bench ingest|match|corroborate|digest|pipeline ...   speed figures
    tipline bench watch [--channels N]   watched channels at scale: ingest, poll cost, lag, requests/min
    tipline bench burst [-n N]           N concurrent REST checks: time to 201/202, /healthz meanwhile
    tipline bench cold [--repeats N]     CPU, wall and peak RSS of a cold `tipline check` (fresh processes)
    tipline bench ocr [--quick]          screenshots: OCR character error rate and time per image
    tipline bench report [--quick]       every documented figure, written into docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from adapters.cli_support import EXIT_FAILED, ProgressBar, settings_for
from evals.evaluation import EvalDataError


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

    outcome = await run_claim_matching(settings_for(args), args.claims, args.queries, args.out, args.qrels, args.tag,
                                       progress=progress)
    print(f"wrote {args.out}: {outcome.queries} queries x top 20 over {outcome.claims} claims")
    if outcome.scores:
        s = outcome.scores
        print(f"queries={s.queries} MAP@5={s.map5:.4f} MRR={s.mrr:.4f} recall@5={s.recall5:.4f}")
    return 0


async def cmd_eval_corroboration(args: argparse.Namespace) -> int:
    from bot.app import check_data_dir, load_embedder, load_multilingual
    from evals.corroboration_eval import run_corroboration_eval

    settings = settings_for(args)
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

    outcome = await evaluate(settings_for(args), args.data, split=args.split, progress=progress,
                             euvs_cases=args.euvs_cases, screenshots=args.screenshots)
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
    from core.intake.checkability import CheckabilityModel, ClaimGate

    settings = settings_for(args)
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

    settings = settings_for(args)
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

    settings = settings_for(args)
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

    settings = settings_for(args)
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


# --- parsers --------------------------------------------------------------------------------------

def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        levels = ()
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"want positive whole numbers separated by commas, not {text!r}")
    return levels


def _bench_parsers(b: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
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

def _eval_parsers(e: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
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
    re_.add_argument("--euvs-cases", type=Path, help="EUvsDisinfo's cases.tsv: check the rows written against "
                     "EUvsDisinfo instead, over --data-dir holding `tipline ingest` of those cases (no seed)")
    re_.add_argument("--screenshots", action="store_true", help="draw each row as a Telegram channel post and "
                     "check the picture (Tesseract reads it, as `tipline check --image`)")
    re_.add_argument("--failures", type=Path, help="write each wrong answer as a JSON line")
    re_.add_argument("--out", type=Path, help="write the figures as JSON (what `tipline bench report` renders)")

    ta = esub.add_parser("tatoeba", parents=[common], help="Tatoeba RU/UK-EN: does each model find a sentence's "
                         "translation among 1,000 (nearest-neighbour accuracy, both directions)")
    ta.add_argument("--data", type=Path, default=Path("../shared/eval/tatoeba"),
                    help="directory with tatoeba.<lang>-eng.<lang> and tatoeba.<lang>-eng.eng")
    ta.add_argument("--languages", type=lambda v: [x for x in v.split(",") if x], default=["rus", "ukr"],
                    help="comma-separated (default rus,ukr)")
    ta.add_argument("--limit", type=int, help="first N pairs only")


def build(command: str, prog: str, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser of `tipline eval` or `tipline bench` (prog: "tipline eval"), as the product CLI would add it."""
    parser = argparse.ArgumentParser(prog=prog, parents=[common])
    if command == "eval":
        _eval_parsers(parser, common)
        parser.set_defaults(dev_command=cmd_eval)
    else:
        _bench_parsers(parser, common)
        parser.set_defaults(dev_command=cmd_bench)
    return parser


def refusal(args: argparse.Namespace) -> str | None:
    """Options that parse but do not go together: the usage error to print."""
    if args.command == "bench" and args.what == "report" and args.quick and not args.out:
        return "bench report --quick needs --out: its figures are a smoke test, not for docs/benchmarks.md"
    return None
