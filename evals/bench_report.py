"""`tipline bench report`: every benchmark and evaluation that docs/benchmarks.md quotes, in one run,
written into the document's generated blocks (bench_markdown.py renders them).

The document is regenerated, never hand-edited: each figure sits between `<!-- bench:NAME -->` and
`<!-- /bench:NAME -->`, and only those blocks are replaced, so the prose around them stays. A block the
document has no place for is an error, not a silent drop.

One run measures, with fixed seeds and the sizes in `Sizes`:
  claim matching  CLEF-2020 Task 2 dev and train through `ClaimMatcher.by_text` (what `tipline eval
                  claim-matching` does), against BM25 alone over the same claims; the same index then gives
                  the match latency of `tipline bench match` (indexing every claim once saves minutes);
  realistic       `tipline eval realistic --split dev`: whole offline checks of our chat-like messages
                  over the seed knowledge base, by language and kind;
  ingest          `tipline bench ingest`;
  same story      `tipline eval corroboration` on train and dev, against a cosine-threshold baseline;
  corroborate     `tipline bench corroborate`;
  digest          `tipline bench digest` (its figure is a row of the goals table);
  pipeline        `tipline bench pipeline`, with `tipline ingest/check/run` as processes (time, peak RSS);
  evidence        `tipline eval evidence` (CLIMATE-FEVER);
  ocr             `tipline bench ocr`: character error rate and time per image on rendered screenshots.
  cold            `tipline bench cold`: CPU, wall time and peak RSS of a cold `tipline check` process.
  burst           `tipline bench burst`: N concurrent REST checks to `tipline run`, and /healthz meanwhile.
  watch           `tipline bench watch`: 200 watched channels on a local t.me: ingest, a poll cycle, the lag to
                  "also reported by", requests per minute, checks beside the poller.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import evals
from evals import bench_markdown as md
from evals.bench_machine import cpu_seconds, load_average, machine_facts
from bot.app import App, build_app
from evals.bench import factchecks, temp_settings
from evals.claim_eval import RUN_DEPTH
from evals.kept_queries import rank_kept
from evals.vector_cache import VectorCache
from bot.settings import Settings
from evals.evaluation import EvalDataError, read_qrels, read_queries, score_run
from core.encoders.sparse import bm25_scores

ROOT = Path(evals.__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Sizes:
    """How much of each benchmark one report runs. The full run took 31.4 min on 2 idle cores at 4f1d099
    (51.7 CPU-min), hence 200 new messages and 100 lookups per corroborate pass, 50 messages per
    match-latency pass, the translated stream on dev only, and untimed embeddings of evaluation data kept
    between runs (evals/vector_cache.py). At c16591f it took 26.3 min: claim matching 604 s (415 of them
    re-embedding the claims with all three models for a new USE; the quality eval's ~600 tweets through
    by_text ~0.26 CPU-s each, 80% embedding; the match latency ~90 s), `bench corroborate` 497 s (231 of
    them index builds: one every 20k points during the fill, copying and re-indexing everything so far,
    then settle's; each pass ~67 s: embedding 200 messages alone 17, ingesting them 22, 100 lookups 29),
    the same-story eval 99 s (173 CPU-s, all but 3 of them MiniLM and e5 over the 800 + 200 + 394 tweets).
    Since: each model's claim vectors kept apart, the quality eval's and the same-story eval's vectors
    kept (evals/kept_queries.py), the fill held to one index build at the end (ad8b98a), 128 new messages
    per corroborate pass (two full ingest micro-batches, core.corroboration.corroborator.BATCH = 64) and 200 claims per
    `bench ingest` run (was 300: 77 of its 84 s; 200 and 300 are both one KnowledgeBase.add batch of 512).
    Measured at 1e0828c with the vector cache filled: 14.2 min (claim matching 143 s, corroborate 307 s,
    pipeline 126 s, ingest 89 s, ocr 73 s, the rest ~2 min); a model changed since the cache was filled
    adds its own vectors once."""

    claims_limit: int | None = None  # claims indexed for claim matching (None: the whole file)
    queries_limit: int | None = None  # queries per split for claim matching and same-story detection
    # The train split is in-sample for the re-ranker (fitted on it), so its figure only shows the gap to
    # dev; a fixed seeded sample of 200 of its 800 tweets shows it as well (None: all of them).
    train_sample: int | None = 200
    match_n: int = 50
    match_repeats: int = 3
    ingest_limit: int = 200
    ingest_repeats: int = 3
    corroborate_stored: int = 100_000
    corroborate_ingest: int = 128
    corroborate_lookups: int = 100
    corroborate_repeats: int = 3
    digest_stored: int = 100_000
    digest_repeats: int = 3
    pipeline_levels: tuple[int, ...] = (1, 10, 50)
    pipeline_llm_ms: float = 800
    pipeline_search_ms: float = 400
    pipeline_repeats: int = 3
    process_ingest_rows: int = 500
    process_api_checks: int = 10
    evidence_claims: int | None = None  # CLIMATE-FEVER claims read (None: all)
    realistic_per_kind: int | None = None  # realistic dev rows checked per kind, the first in file order (None: all)


# Every code path of the full run, at the smallest sizes that still have a median and a range (two passes
# where a pass is cheap; one where a repeat means another model load).
QUICK = Sizes(claims_limit=300, queries_limit=20, match_n=5, match_repeats=2, ingest_limit=20, ingest_repeats=1,
              corroborate_stored=300, corroborate_ingest=5, corroborate_lookups=4, corroborate_repeats=2,
              digest_stored=300, digest_repeats=2,
              pipeline_levels=(1, 2), pipeline_llm_ms=10, pipeline_search_ms=10, pipeline_repeats=1,
              process_ingest_rows=5, process_api_checks=2, evidence_claims=30, realistic_per_kind=2)


@dataclass(frozen=True)
class ReportConfig:
    clef: Path
    climate_fever: Path
    sizes: Sizes = field(default_factory=Sizes)
    quick: bool = False
    seed: int = 7
    # Our own Russian translations of the CLEF dev tweets (eval/clef2020-ru), scored against the same qrels,
    # and the Tatoeba RU/UK-EN pairs; each is skipped when absent (the tiny smoke-test data has neither).
    translations: Path = Path("eval/clef2020-ru")
    # The same dev tweets in Ukrainian (eval/clef2020-uk): the first users read Ukrainian channels too.
    ukrainian: Path = Path("eval/clef2020-uk")
    tatoeba: Path = Path("../shared/eval/tatoeba")
    # Our chat-like messages (eval/realistic), shipped with the repository; skipped when absent.
    realistic: Path = ROOT / "eval" / "realistic"
    # Where untimed vectors of evaluation data are kept between runs (None: computed every run).
    vector_cache: Path | None = None

    @classmethod
    def for_mode(cls, *, quick: bool, clef: Path, climate_fever: Path,
                 vector_cache: Path | None = None) -> ReportConfig:
        return cls(clef=clef, climate_fever=climate_fever, sizes=QUICK if quick else Sizes(), quick=quick,
                   vector_cache=vector_cache)

    def check(self) -> None:
        """Every input present before minutes of work start."""
        for p in (self.claims, *(self.split(s)[k] for s in ("dev", "train") for k in (0, 1)), self.climate_fever):
            if not p.is_file():
                raise EvalDataError(f"bench report needs {p} (see --clef and --climate-fever)")

    @property
    def claims(self) -> Path:
        return self.clef / "verified_claims.docs.tsv"

    def split(self, name: str) -> tuple[Path, Path]:
        return self.clef / name / "tweets.queries.tsv", self.clef / name / "tweet-vclaim-pairs.qrels"


@dataclass(frozen=True)
class ReportOutcome:
    path: Path
    blocks: dict[str, str]
    seconds: float
    figures: dict


# --- claim matching: quality and latency over one index -----------------------------------------

async def _claim_matching(app: App, config: ReportConfig, cache: VectorCache) -> dict:
    from evals.bench_match import match_latency, short_messages

    s = config.sizes
    fcs = factchecks(config.claims, s.claims_limit)
    by_id = {fc.id: fc.source_id for fc in fcs}
    # The index's vectors are not a timed figure here (`bench ingest` times the ingest path): they come from
    # the cache when an earlier run computed them with the same models.
    app.clear_embedding_caches()
    t0 = time.perf_counter()
    vectors, from_cache = await cache.factchecks(app.kb, fcs)
    await app.kb.add(fcs, vectors=vectors)
    ingest_s = time.perf_counter() - t0
    docs = [f"{fc.claim} {fc.title}".strip() for fc in fcs]
    quality = {}
    splits = {name: config.split(name) for name in ("dev", "train")}
    for language, root in (("Russian", config.translations), ("Ukrainian", config.ukrainian)):
        if (translated := root / "dev" / "tweets.queries.tsv").is_file():
            splits[f"dev ({language})"] = (translated, config.split("dev")[1])
    for split, (queries_path, qrels_path) in splits.items():
        queries = read_queries(queries_path)[:s.queries_limit]
        if split == "train" and s.train_sample and len(queries) > s.train_sample:
            keep = set(random.Random(config.seed).sample(range(len(queries)), s.train_sample))
            queries = [q for i, q in enumerate(queries) if i in keep]
        gold = read_qrels(qrels_path)
        gold = {q: g for q, g in gold.items() if q in {qid for qid, _ in queries}}
        # The real matcher over this index; its query vectors kept between runs (evals/kept_queries.py).
        ranked, how = await rank_kept(app, queries, by_id, cache)
        ours = {q: [d for d, _ in r] for q, r in ranked.items()}
        scores = bm25_scores([t for _, t in queries], docs)
        bm25 = {qid: [fcs[j].source_id for j in (-scores[i]).argsort(kind="stable")[:RUN_DEPTH]]
                for i, (qid, _) in enumerate(queries)}
        quality[split] = {"queries": len(queries), "of": len(read_queries(queries_path)), "tipline": score_run(ours, gold),
                          "bm25": score_run(bm25, gold), "query_vectors": how}
    tweets = [t for _, t in read_queries(config.split("dev")[0]) if t.strip()][:s.match_n]
    latency = {"long": await match_latency(app, tweets, s.match_repeats),
               "short": await match_latency(app, short_messages(fcs, s.match_n), s.match_repeats)}
    tatoeba = []
    if config.tatoeba.is_dir():
        from evals.tatoeba_eval import evaluate

        tatoeba = [asdict(r) for r in await asyncio.to_thread(evaluate, config.tatoeba, app.kb.multilingual,
                                                              app.embedder, ("rus", "ukr"), cache=cache)]
    return {"claims": len(fcs), "run_depth": RUN_DEPTH, "index_vectors_from_cache": from_cache,
            "ingest_claims_per_s": round(len(fcs) / ingest_s, 1),
            "candidates": app.matcher.candidates, "quality": quality, "latency": latency, "tatoeba": tatoeba}


# --- the realistic set: whole offline checks over the seed ------------------------------------

async def _realistic(settings: Settings, config: ReportConfig, scratch: Path) -> dict:
    from evals.realistic_eval import evaluate

    if not config.realistic.is_dir():
        return {"skipped": f"no {config.realistic}"}
    per_kind = config.sizes.realistic_per_kind
    # A fresh data dir: the seed knowledge base and nothing a user ingested, as `tipline eval realistic` sees
    # a new install.
    with tempfile.TemporaryDirectory(prefix="tipline-realistic-", dir=scratch) as d:
        outcome = await evaluate(temp_settings(settings, Path(d), seed_on_start=True), config.realistic,
                                 split="dev", per_kind=per_kind)
    return {"split": "dev", "per_kind": per_kind, **outcome.figures()}


# --- same-story detection: tipline against a cosine threshold -----------------------------------

async def _corroboration_eval(app: App, config: ReportConfig, scratch: Path, cache: VectorCache) -> dict:
    return await asyncio.to_thread(_corroboration_eval_sync, app, config, scratch, cache)


def _corroboration_eval_sync(app: App, config: ReportConfig, scratch: Path, cache: VectorCache) -> dict:
    from evals.corroboration_eval import baseline_clusters, eval_vectors, load_messages, run_corroboration_eval
    from evals.story_detector import pairwise_scores

    out: dict = {}
    data = {}
    for split in ("train", "dev"):
        messages, qrels = config.split(split)
        if config.sizes.queries_limit:  # a prefix of the stream, written aside
            rows = messages.read_text(encoding="utf-8").splitlines()
            messages = scratch / f"{split}.messages.tsv"
            messages.write_text("\n".join(rows[:config.sizes.queries_limit + 1]) + "\n", encoding="utf-8")
        result = run_corroboration_eval(messages, scratch / f"{split}.clusters.tsv", qrels,
                                        embedder=app.embedder, quiet=True, multilingual=app.kb.multilingual,
                                        cache=cache)
        msgs = load_messages(messages)
        # The same vectors the stream was judged on (the cache's, or the model's memo when there is none).
        data[split] = (msgs, eval_vectors([m.text for m in msgs], app.embedder, None, cache)[0], read_qrels(qrels))
        out[split] = {"messages": result["messages"], "tipline": {k: result[k] for k in ("precision", "recall", "f1")}}
    # The baseline's one threshold, chosen on train (grid 0.50-0.99 by 0.01; ties go to the higher one).
    msgs, vecs, gold = data["train"]
    grid = [round(0.5 + 0.01 * i, 2) for i in range(50)]
    best = max(grid, key=lambda t: (pairwise_scores(baseline_clusters(msgs, vecs, t), gold).f1, t))
    for split, (msgs, vecs, gold) in data.items():
        s = pairwise_scores(baseline_clusters(msgs, vecs, best), gold)
        out[split]["baseline"] = {"precision": s.precision, "recall": s.recall, "f1": s.f1}
    out["baseline_threshold"] = best
    # Across languages: the tweets and our Russian translations of them as posts of other accounts.
    from evals.corroboration_eval import run_translated_eval

    for split in ("dev",):  # train + Russian is in-sample for the story models (1.5 min): not reported
        ru = config.translations / split / "tweets.queries.tsv"
        if ru.is_file() and not config.sizes.queries_limit:
            messages, qrels = config.split(split)
            out[f"{split} + Russian"] = run_translated_eval(messages, ru, qrels, app.embedder, app.kb.multilingual,
                                                            cache=cache)
    return out


# --- CLIMATE-FEVER -------------------------------------------------------------------------------

async def _evidence_eval(app: App, config: ReportConfig, scratch: Path, cache: VectorCache) -> dict:
    from evals.evidence_eval import run_evidence_eval

    path = config.climate_fever
    if config.sizes.evidence_claims:
        lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        path = scratch / "climate-fever.jsonl"
        path.write_text("\n".join(lines[:config.sizes.evidence_claims]) + "\n", encoding="utf-8")
    return await asyncio.to_thread(run_evidence_eval, path, app.embedder, split="dev", cache=cache)


# --- screenshots ---------------------------------------------------------------------------------

async def _ocr(settings: Settings, config: ReportConfig, progress: Progress) -> dict:
    from evals.bench_ocr import bench_ocr

    try:
        return await bench_ocr(settings, quick=config.quick, progress=progress)
    except RuntimeError as exc:  # no Tesseract here: the block says so instead of failing the whole report
        return {"skipped": str(exc)}


# --- a cold `tipline check` ----------------------------------------------------------------------

async def _cold(settings: Settings, config: ReportConfig) -> dict:
    from evals.bench_cold import bench_cold

    return await bench_cold(settings, repeats=2 if config.quick else 5)


async def _burst(settings: Settings, config: ReportConfig) -> dict:
    from evals.bench_burst import bench_burst

    return await bench_burst(settings, n=4 if config.quick else 300)


async def _watch(settings: Settings, config: ReportConfig) -> dict:
    from evals.bench_watch import bench_watch

    if config.quick:
        return await bench_watch(settings, channels=3, posts=4, new=2, cycles=1, interval_s=3, gap_s=0.1, tick_s=0.5,
                                 checks=2, live_rate=1.5)
    return await bench_watch(settings)


# --- the run -------------------------------------------------------------------------------------

async def collect(settings: Settings, config: ReportConfig, progress: Progress = lambda _m: None) -> dict:
    """Every figure of the report, as one JSON-able-after-`plain` dict, with the seconds each part took."""
    from evals.bench_corroborate import bench_corroborate
    from evals.bench_digest import bench_digest
    from evals.bench_ingest import bench_ingest
    from evals.bench_pipeline import bench_pipeline

    config.check()
    s = config.sizes
    figures: dict = {"machine": machine_facts(settings), "sizes": asdict(s), "quick": config.quick,
                     "seed": config.seed, "seconds": {}, "cpu_seconds_by_part": {}}
    t_all, cpu_all = time.perf_counter(), cpu_seconds()

    async def part(name: str, make) -> None:
        progress(f"{name}…")
        t0, cpu0 = time.perf_counter(), cpu_seconds()
        figures[name] = await make()
        figures["seconds"][name] = round(time.perf_counter() - t0, 1)
        # Beside the wall: on a busy machine a part's CPU is what says how long it takes on an idle one.
        figures["cpu_seconds_by_part"][name] = round(cpu_seconds() - cpu0, 1)
        progress(f"{name} done in {figures['seconds'][name]:.0f} s")

    with tempfile.TemporaryDirectory(prefix="tipline-report-") as tmp:
        scratch = Path(tmp)

        async def with_app(work):
            with tempfile.TemporaryDirectory(prefix="tipline-bench-", dir=scratch) as d:
                async with build_app(temp_settings(settings, Path(d)), seed=False) as app:
                    return await work(app)

        cache = VectorCache(config.vector_cache)
        await part("claim_matching", lambda: with_app(lambda app: _claim_matching(app, config, cache)))
        await part("realistic", lambda: _realistic(settings, config, scratch))
        await part("ingest", lambda: bench_ingest(settings, config.claims, limit=s.ingest_limit,
                                                  repeats=s.ingest_repeats))
        await part("corroboration_eval", lambda: with_app(lambda app: _corroboration_eval(app, config, scratch, cache)))
        await part("corroborate", lambda: bench_corroborate(
            settings, config.split("train")[0], config.split("dev")[0], stored=s.corroborate_stored,
            ingest_n=s.corroborate_ingest, lookups=s.corroborate_lookups, repeats=s.corroborate_repeats,
            seed=config.seed, cache=cache))
        await part("digest", lambda: bench_digest(settings, stored=s.digest_stored, repeats=s.digest_repeats,
                                                  chats=min(500, s.digest_stored), stories=min(5_000, s.digest_stored),
                                                  seed=config.seed))
        # The quick run answers every REST check with 202, so the smoke test walks the poll path a
        # real client follows (the full run keeps the default wait, as deployed).
        pipeline_settings = settings.model_copy(update={"api_wait_s": 0.0}) if config.quick else settings
        await part("pipeline", lambda: bench_pipeline(
            pipeline_settings, levels=s.pipeline_levels, llm_ms=s.pipeline_llm_ms, search_ms=s.pipeline_search_ms,
            repeats=s.pipeline_repeats, processes=True, ingest_rows=s.process_ingest_rows,
            api_checks=s.process_api_checks))
        await part("evidence", lambda: with_app(lambda app: _evidence_eval(app, config, scratch, cache)))
        await part("ocr", lambda: _ocr(settings, config, progress))
        await part("cold", lambda: _cold(settings, config))
        await part("burst", lambda: _burst(settings, config))
        await part("watch", lambda: _watch(settings, config))
        figures["vector_cache"] = {"directory": str(config.vector_cache) if config.vector_cache else None,
                                   "reused": cache.hits, "computed": cache.misses}
    figures["seconds"]["total"] = round(time.perf_counter() - t_all, 1)
    figures["cpu_seconds"] = round(cpu_seconds() - cpu_all, 1)
    figures["machine"]["load_average_end"] = load_average()
    return figures


def write_blocks(text: str, blocks: dict[str, str]) -> str:
    """`text` with each `<!-- bench:NAME -->…<!-- /bench:NAME -->` block's inside replaced by blocks[NAME]."""
    missing = [name for name in blocks if md.marker(name) not in text or md.end_marker(name) not in text]
    if missing:
        raise EvalDataError(f"the document has no place for the generated block(s) {', '.join(missing)}: "
                            f"add {md.marker(missing[0])} … {md.end_marker(missing[0])}")
    for name, body in blocks.items():
        head, rest = text.split(md.marker(name), 1)
        _, tail = rest.split(md.end_marker(name), 1)
        text = f"{head}{md.marker(name)}\n{body.rstrip()}\n{md.end_marker(name)}{tail}"
    return text


async def run_report(settings: Settings, config: ReportConfig, *, out: Path | None = None,
                     figures_json: Path | None = None, progress: Progress = lambda _m: None) -> ReportOutcome:
    """Run everything and (re)write `out` (default docs/benchmarks.md; a new file starts from it as its
    template); the raw figures go to `figures_json` when given, for comparing runs."""
    from evals.bench import plain

    out = Path(out) if out is not None else DOC
    template = out.read_text(encoding="utf-8") if out.exists() else DOC.read_text(encoding="utf-8")
    write_blocks(template, {name: "" for name in md.BLOCKS})  # a missing place fails now, not after the run
    figures = await collect(settings, config, progress)
    blocks = md.render(figures, config)
    out.write_text(write_blocks(template, blocks), encoding="utf-8")
    if figures_json is not None:
        figures_json.write_text(json.dumps(plain(figures), indent=1, default=str) + "\n", encoding="utf-8")
    return ReportOutcome(out, blocks, figures["seconds"]["total"], figures)
