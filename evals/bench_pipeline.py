"""`tipline bench pipeline`: end-to-end check latency on the LLM path under concurrency.

Local stand-ins for the providers run in this process on 127.0.0.1 with fixed latencies (LLM 800 ms,
search 400 ms by default): an OpenAI-compatible chat-completions server that answers every structured
output the engine asks for (claims, query plan, stance, adjudication) with valid content, and a SearxNG
JSON server returning a handful of results per query. The real engine does everything else: the
model, SQLite, embedded Qdrant, the seed knowledge base, ranking and judging.

Reported next to each other: p50/p95 of whole checks at 1, 10 and 50 concurrent checks (median and range
over repeats), the critical path (the sequential round-trips no design can avoid: claims -> query plan ->
search -> stance -> adjudication), and what seed 000's sequential design (every query and every stance call
one after the other) would take for the same inputs. Then time and peak RSS of `tipline ingest`, `tipline
check` and `tipline run` as processes (bench_processes.py).
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.app import build_app
from evals.bench import Spread, pct
from bot.settings import Settings

# A stable, unrelated corpus of claims: each check gets its own text so caches never answer.
_SUBJECTS = ["The city council", "A new study", "The national bank", "The football club", "The health ministry",
             "A tech company", "The weather service", "The space agency", "A local school", "The railway operator"]
_PREDICATES = ["raised prices by {n} percent", "hired {n} new workers", "opened {n} new offices",
               "reported {n} cases last week", "planted {n} trees in the park", "cancelled {n} flights"]


def bench_texts(n: int) -> list[str]:
    out = []
    for i in range(n):
        subject = _SUBJECTS[i % len(_SUBJECTS)]
        predicate = _PREDICATES[(i // len(_SUBJECTS)) % len(_PREDICATES)].format(n=17 + i * 7)
        out.append(f"{subject} {predicate} in {2001 + i % 23}.")
    return out


@dataclass
class FakeProviders:
    llm_latency_s: float
    search_latency_s: float
    runner: web.AppRunner | None = None
    port: int = 0
    llm_calls: int = 0
    search_calls: int = 0

    async def start(self) -> FakeProviders:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/searxng/search", self._search)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.llm_calls += 1
        await asyncio.sleep(self.llm_latency_s)
        name = body["response_format"]["json_schema"]["name"]
        user = body["messages"][-1]["content"]
        claim = user.split("<message>\n", 1)[-1].split("\n</message>", 1)[0].strip()
        if name == "claim_extraction":
            content: dict[str, Any] = {"kind": "FACTUAL", "reason": "a statement of fact", "claims": [
                {"text": claim[:300], "entities": [], "when": None, "where": None}]}
        elif name == "query_plan":
            content = {"queries": [claim[:120], claim[:60] + " fact check"], "english_claim": None}
        elif name == "stance":
            ids = [int(x) for x in __import__("re").findall(r"<passage id=(\d+)", user)]
            content = {"items": [{"id": i, "label": "refutes" if i % 2 else "neutral", "supports": 0.05,
                                  "refutes": 0.8 if i % 2 else 0.1, "neutral": 0.15 if i % 2 else 0.85}
                                 for i in ids]}
        else:  # adjudication
            content = {"verdict": "REFUTED", "confidence": 0.8, "reasoning": "Two sources contradict it [1][2]."}
        return web.json_response({
            "id": f"chatcmpl-{self.llm_calls}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "bench"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(content), "refusal": None}}],
            "usage": {"prompt_tokens": 400, "completion_tokens": 80, "total_tokens": 480}})

    async def _search(self, request: web.Request) -> web.Response:
        self.search_calls += 1
        await asyncio.sleep(self.search_latency_s)
        q = request.query.get("q", "")
        topic = q.removesuffix(" fact check")[:150]
        # Each outlet reports in its own words, as real results do: identical snippets on four sites would
        # be one syndicated source to ranking, and the check would widen its search for want of evidence.
        # Every report also has details of its own story (words drawn by the query), so reports about
        # different claims are not reprints of each other either: the evidence index, which keeps what
        # earlier checks found, must not make later checks cheaper by collapsing them as duplicates.
        results = []
        for k, (site, title, content) in enumerate(_OUTLETS):
            rng = random.Random(f"{q}|{k}")
            details = " ".join(rng.sample(_DETAILS, 12))
            results.append({"url": f"https://{site}/news/{rng.randrange(10**8)}", "title": title.format(t=topic[:70]),
                            "content": content.format(t=topic) + f" Also in the report: {details}.",
                            "engine": "bench", "publishedDate": "2024-05-01T00:00:00"})
        return web.json_response({"query": q, "number_of_results": len(results), "results": results})


_OUTLETS = [
    ("www.reuters.com", "Fact check: posts misstate the record on {t}",
     "Posts claim that {t}. Budget papers reviewed by Reuters give a different figure."),
    ("apnews.com", "Officials dispute viral report",
     "Officials said a widely shared report ({t}) was wrong and released last year's statement."),
    ("www.bbc.com", "What we know so far",
     "Social media users say {t}. The numbers in the screenshot match no published document."),
    ("example-news.net", "Readers ask: is it true?",
     "A reader asked us whether {t}; we are still looking into it."),
]
_DETAILS = ("audit committee mayor treasury spokesperson minutes archive invoice contract tender deputy "
            "governor survey census ledger inspector pension tariff subsidy grant district province "
            "parliament hearing lawsuit court appeal regulator auditor memo email spreadsheet chart "
            "interview witness resident union strike shipment warehouse harbour airport bridge tunnel "
            "hospital clinic vaccine school teacher student library museum stadium festival harvest "
            "drought flood storm wildfire earthquake satellite rocket laboratory engineer pilot").split()


def _provider_settings(fake: FakeProviders) -> dict[str, Any]:
    """Settings that point the engine at the fakes, with nothing cached or rate-limited between checks."""
    return {"llm_base_url": f"{fake.base}/v1", "llm_api_key": None, "searxng_url": f"{fake.base}/searxng",
            "gdelt_url": None, "brave_api_key": None, "factcheck_api_key": None, "cache_ttl_s": 0.001,
            "provider_rate_per_minute": 100_000, "source_timeout_s": 10.0, "check_deadline_s": 120.0}


async def _one_level(app, fake: FakeProviders, texts: list[str]) -> dict:
    calls0 = (fake.llm_calls, fake.search_calls)
    stages: dict[str, list[float]] = {}
    app.clear_embedding_caches()  # cold: nothing a previous level embedded can answer for these checks

    async def one(text: str) -> float:
        t0 = time.perf_counter()
        result = await app.engine.check(text)
        for st in result.steps:
            stages.setdefault(st.name, []).append(st.ms)
        return (time.perf_counter() - t0) * 1000

    t0 = time.perf_counter()
    lat = await asyncio.gather(*(one(t) for t in texts))
    n = len(texts)
    return {"p50_ms": statistics.median(lat), "p95_ms": pct(lat, 95), "wall_ms": (time.perf_counter() - t0) * 1000,
            "llm_calls_per_check": (fake.llm_calls - calls0[0]) / n,
            "search_calls_per_check": (fake.search_calls - calls0[1]) / n, "stages": stages}


async def bench_pipeline(settings: Settings, *, levels: tuple[int, ...] = (1, 10, 50), llm_ms: float = 800,
                         search_ms: float = 400, repeats: int = 1, processes: bool = True,
                         ingest_rows: int = 500, api_checks: int = 10) -> dict:
    """Whole checks at each concurrency level, `repeats` times, each repeat in a fresh data dir (seed
    knowledge base, empty evidence index) with texts no earlier check used; then, in the last repeat's data
    dir, `tipline ingest`, `tipline check` and `tipline run` as child processes (time and peak RSS)."""
    fake = await FakeProviders(llm_ms / 1000, search_ms / 1000).start()
    runs: dict[int, list[dict]] = {n: [] for n in levels}
    report: dict[str, Any] = {"llm_ms": llm_ms, "search_ms": search_ms, "repeats": repeats, "levels": {}}
    offset = 0

    def fresh(n: int) -> list[str]:
        nonlocal offset
        texts = bench_texts(offset + n)[offset:]
        offset += n
        return texts

    try:
        for r in range(repeats):
            with tempfile.TemporaryDirectory(prefix="tipline-bench-") as tmp:
                s = settings.model_copy(update={"data_dir": Path(tmp) / "data", "qdrant_url": None,
                                                "embed_model_dir": settings.model_dir, **_provider_settings(fake)})
                async with build_app(s) as app:
                    await app.engine.check("Warm-up: the museum opened 3 new halls in 1999.")
                    for n in levels:
                        runs[n].append(await _one_level(app, fake, fresh(n)))
                if processes and r == repeats - 1:
                    from evals.bench_processes import measure_processes

                    env = {k: v for k, v in _provider_settings(fake).items() if v is not None}
                    figures = await measure_processes(s, env, check_text=fresh(1)[0], api_texts=fresh(api_checks),
                                                      ingest_rows=ingest_rows, scratch=Path(tmp))
                    report["processes"] = [asdict(f) for f in figures]
    finally:
        await fake.stop()
    # The unavoidable sequence for one claim: extract claims, plan queries, search (all queries and
    # sources in parallel), judge stances (batched), adjudicate.
    critical = 4 * llm_ms + search_ms
    # Seed 000's flow: one search per query in turn (our plans make 2 queries), then one stance call per
    # evidence item in turn (8 ranked items), then the verdict call, after extraction and planning.
    queries, items = 2, 8
    report["critical_path_ms"] = critical
    report["seed000_sequential_ms"] = 2 * llm_ms + queries * search_ms + items * llm_ms + llm_ms
    for n, rs in runs.items():
        stages: dict[str, list[float]] = {}
        for row in rs:
            for k, v in row["stages"].items():
                stages.setdefault(k, []).extend(v)
        report["levels"][n] = {
            "p50_ms": Spread.of([x["p50_ms"] for x in rs]), "p95_ms": Spread.of([x["p95_ms"] for x in rs]),
            "p95_over_critical": Spread.of([x["p95_ms"] / critical for x in rs], 2),
            "wall_ms": Spread.of([x["wall_ms"] for x in rs]),
            "llm_calls_per_check": round(statistics.median(x["llm_calls_per_check"] for x in rs), 2),
            "search_calls_per_check": round(statistics.median(x["search_calls_per_check"] for x in rs), 2),
            "stage_p50_ms": {k: round(statistics.median(v), 1) for k, v in stages.items()}}
    report["p50_1_over_critical"] = round(report["levels"][levels[0]]["p50_ms"].median / critical, 2)
    return report


def format_pipeline(report: dict) -> str:
    lines = [f"LLM {report['llm_ms']:.0f} ms, search {report['search_ms']:.0f} ms per call; critical path "
             f"{report['critical_path_ms']:.0f} ms; seed-000 sequential design "
             f"{report['seed000_sequential_ms']:.0f} ms; "
             f"{report['repeats']} repeat(s), median (min-max)",
             f"{'concurrent':>10} {'p50 ms':>22} {'p95 ms':>22} {'p95/critical':>18} {'LLM calls':>10} {'searches':>9}"]
    for n, r in report["levels"].items():
        lines.append(f"{n:>10} {r['p50_ms'].text(',.0f'):>22} {r['p95_ms'].text(',.0f'):>22} "
                     f"{r['p95_over_critical'].text('.2f'):>18} {r['llm_calls_per_check']:>10.2f} "
                     f"{r['search_calls_per_check']:>9.2f}"
                     "   stages p50: " + ", ".join(f"{k} {v:.0f}" for k, v in r["stage_p50_ms"].items()))
    for p in report.get("processes", []):
        lines.append(f"{p['command']}: {p['wall_s']:.2f} s, peak RSS {p['peak_rss_mib']:.0f} MiB ({p['includes']})")
    return "\n".join(lines)
