"""Smoke tests: every `tipline bench` and `tipline eval` command that README.md and docs/ show, run the way
a user runs it (the real `tipline` entry point, real SQLite, embedded Qdrant and model) on tiny data of our
own in tests/data/bench_*. They check that each command works and reports what it says it reports, never
how fast: a figure's size depends on the machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from adapters.main import main
from core.corroboration.corroborator import LOOKUP_CANDIDATES
from evals.bench_corroborate import filled_at
from tests.conftest import model_cache

ROOT = Path(__file__).resolve().parent.parent
CLEF = ROOT / "tests" / "data" / "bench_clef"
CLAIMS = CLEF / "verified_claims.docs.tsv"
CLIMATE_FEVER = ROOT / "tests" / "data" / "bench_climate_fever.jsonl"
TATOEBA = ROOT / "tests" / "data" / "bench_tatoeba"
CHECKABILITY = ROOT / "tests" / "data" / "bench_checkability.tsv"

# Each documented command and the test below that runs it.
COVERED = {
    "bench ingest": "test_bench_ingest",
    "bench match": "test_bench_match",
    "bench corroborate": "test_bench_corroborate",
    "bench digest": "test_bench_digest",
    "bench pipeline": "test_bench_pipeline",
    "bench report": "test_bench_report_quick",
    "bench ocr": "test_bench_ocr",
    "bench cold": "test_bench_cold",
    "bench burst": "test_bench_burst",
    "bench watch": "test_bench_watch",
    "eval claim-matching": "test_eval_claim_matching",
    "eval corroboration": "test_eval_corroboration",
    "eval evidence": "test_eval_evidence",
    "eval tatoeba": "test_eval_tatoeba",
    "eval checkability": "test_eval_checkability",
    "eval realistic": "test_eval_realistic",
}


@pytest.fixture
def tipline(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """`tipline ARGS…` in this process, in a scratch directory (so no developer's .env or TIPLINE_* variable
    is read) on a fresh data dir; returns standard output and fails the test on a non-zero exit."""
    for key in list(os.environ):
        if key.startswith("TIPLINE_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TIPLINE_EMBED_MODEL_DIR", str(model_dir))
    # The worker's model cache (USE's 76 MB of arrays and its tokenizer), not a new one in every data dir.
    monkeypatch.setenv("TIPLINE_MODEL_CACHE_DIR", str(model_cache(model_dir)))
    monkeypatch.setenv("TIPLINE_GDELT_URL", "")  # never the public news API
    monkeypatch.chdir(tmp_path)

    def run(*args: object) -> str:
        code = main(["--data-dir", str(tmp_path / "data"), *map(str, args)])
        out = capsys.readouterr()
        assert code == 0, out.err
        return out.out

    return run


def test_documented_commands_have_smoke_tests() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    documented = {" ".join(m) for p in docs for m in re.findall(r"tipline (bench|eval) ([a-z][a-z-]*)", p.read_text())}
    assert documented, "no documented bench/eval command found: has the pattern changed?"
    assert documented <= set(COVERED), f"no smoke test for: {sorted(documented - set(COVERED))}"
    assert all(name in globals() for name in COVERED.values())


def test_bench_ingest(tipline) -> None:
    report = json.loads(tipline("bench", "ingest", "--claims", CLAIMS, "--limit", 6, "--repeats", 1, "--json"))
    assert report["claims_per_run"] == 6 and report["texts_embedded_per_run"] == 24  # claim, title, claim + title, claim as a query
    for key in ("embedding_alone_claims_per_s", "tipline_ingest_claims_per_s"):
        assert report[key]["median"] > 0 and len(report[key]["runs"]) == 1
    assert report["ingest_over_embedding_alone"] > 0


def test_bench_match(tipline) -> None:
    report = json.loads(tipline("bench", "match", "--claims", CLAIMS, "--queries", CLEF / "dev" / "tweets.queries.tsv",
                                "-n", 3, "--repeats", 2, "--json"))
    assert report["claims_indexed"] == 12
    for kind in ("long_queries", "short_queries"):
        r = report[kind]
        assert r["n"] == 3 and r["passes"] == 2
        assert len(r["cold_p50_ms"]["runs"]) == 2 and r["warm_p50_ms"]["median"] > 0
        # The breakdown adds up to the total (up to rounding).
        parts = r["embed_mean_ms"] + r["search_mean_ms"] + r["rest_mean_ms"]
        assert parts == pytest.approx(r["cold_mean_ms"], abs=0.02)


def test_bench_match_at_scale(tipline) -> None:
    """`--scale-to`: synthetic claims made from the file's fill the knowledge base to N (e.g. 100k)."""
    report = json.loads(tipline("bench", "match", "--claims", CLAIMS, "--queries", CLEF / "dev" / "tweets.queries.tsv",
                                "-n", 2, "--repeats", 1, "--scale-to", 40, "--json"))
    assert report["claims_indexed"] == 40 and report["claims_from_file"] == 12 and report["synthetic_claims"] == 28
    assert "ingest_claims_per_s" not in report  # not measured on precomputed vectors
    assert report["long_queries"]["n"] == 2 and report["short_queries"]["cold_p50_ms"]["median"] > 0


def test_bench_match_keeps_and_reuses_its_data_dir(tipline, tmp_path: Path, model_dir: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    """--keep DIR: the first run fills DIR, the next reuses it (no fill); a larger --scale-to is refused."""
    args = ("bench", "match", "--claims", CLAIMS, "--queries", CLEF / "dev" / "tweets.queries.tsv", "-n", 2,
            "--repeats", 1, "--keep", tmp_path / "kept", "--json")
    first = json.loads(tipline(*args, "--scale-to", 30))
    assert first["claims_indexed"] == 30 and "store_fill_s" in first and "reused_data_dir" not in first
    again = json.loads(tipline(*args, "--scale-to", 30))
    assert again["claims_indexed"] == 30 and again["reused_data_dir"] == str(tmp_path / "kept")
    assert "store_fill_s" not in again and again["short_queries"]["cold_p50_ms"]["median"] > 0
    code = main(["--data-dir", str(tmp_path / "data"), *map(str, args), "--scale-to", "100"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "holds 30 claims, fewer than 100" in err and len(err.splitlines()) == 1


def test_distractors_are_shaped_like_their_sources() -> None:
    import numpy as np

    from core.matching.knowledge_base import FactCheckVectors
    from evals.bench import factchecks
    from evals.bench_match import distractors

    fcs = factchecks(CLAIMS)
    rng = np.random.default_rng(0)

    def unit() -> np.ndarray:
        v = rng.normal(size=(len(fcs), 8)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    vectors = FactCheckVectors(**{f: unit() for f in FactCheckVectors.__dataclass_fields__})
    extra, ev = distractors(fcs, vectors, 30)
    assert len({fc.id for fc in [*fcs, *extra]}) == len(fcs) + 30  # all distinct fact-checks
    claims = {fc.claim for fc in fcs}
    for k, fc in enumerate(extra):
        assert fc.claim in claims
        src = next(i for i, f in enumerate(fcs) if f.claim == fc.claim)
        assert float(ev.claim[k] @ vectors.claim[src]) > 0.99  # near its source, not a random point
        assert abs(float(np.linalg.norm(ev.claim[k])) - 1) < 1e-5


def test_bench_corroborate(tipline) -> None:
    out = tipline("bench", "corroborate", "--messages", CLEF / "train" / "tweets.queries.tsv",
                  "--queries", CLEF / "dev" / "tweets.queries.tsv", "--stored", 40, "--ingest-n", 3, "-n", 2,
                  "--repeats", 1)
    assert "stored_messages: 43" in out  # 40 bulk-loaded + 3 ingested
    assert "cold_p50_ms" in out and "warm_after_check_p50_ms" in out and "embedding_alone_msgs_per_s" in out


def test_bench_corroborate_keeps_and_reuses_its_data_dir(tipline, tmp_path: Path, model_dir: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    """--keep DIR: the first run fills DIR, the next reuses it as it is (no fill, no index build)."""
    args = ("bench", "corroborate", "--messages", CLEF / "train" / "tweets.queries.tsv",
            "--queries", CLEF / "dev" / "tweets.queries.tsv", "--ingest-n", 2, "-n", 2, "--repeats", 1,
            "--keep", tmp_path / "kept", "--json")
    first = json.loads(tipline(*args, "--stored", 30))
    assert first["stored_messages"] == 32 and "bulk_fill_msgs_per_s" in first and first["vector_store_disk_mb"] >= 0
    again = json.loads(tipline(*args, "--stored", 30, "--candidates", "64,8"))
    assert again["reused_data_dir"] == str(tmp_path / "kept") and "bulk_fill_msgs_per_s" not in again
    by_k = again["lookup"]["warm_after_check_by_candidates"]  # both counts timed on the same lookups
    assert set(by_k) == {"64", "8"} and all(v["p50_ms"]["median"] > 0 for v in by_k.values())
    assert again["lookup"]["candidates"] == 64 and first["lookup"]["candidates"] == LOOKUP_CANDIDATES
    assert "warm_after_check_by_candidates" not in first["lookup"]
    assert again["index_build_on_reuse_s"] >= 0  # built by the first run: nothing left to build
    assert again["stored_messages"] == 34  # the 32 kept + 2 ingested now
    # Read at the fill's time, not the wall clock: the messages span the 29 days before the fill and a
    # lookup searches a week either side, so a dir read days later would be searched differently.
    assert again["data_time"] == first["data_time"]
    marker = tmp_path / "kept" / ".bench-corroborate-indexed"
    assert datetime.fromisoformat(marker.read_text()) == datetime.fromisoformat(first["data_time"])
    # evals/window_recall.py (docs/architecture.md) on the kept dir: 34 messages sit below Edge's
    # full-scan threshold, so the engine searches exactly and every way must agree with exact search.
    rows = json.loads(subprocess.run([sys.executable, "-m", "evals.window_recall", "--data-dir",
                                      str(tmp_path / "kept"), "--queries", str(CLEF / "dev" / "tweets.queries.tsv"),
                                      "-n", "3", "--sweep", "16:32", "--json"], capture_output=True, text=True,
                                     timeout=300, check=True, cwd=ROOT).stdout)
    assert len(rows) == 12 and {r["way"] for r in rows} == {"exact", "hnsw", "hnsw+acorn", "hnsw k=16 ef=32"}
    assert next(r for r in rows if r["window"].startswith("lookup"))["passing"] > 0
    assert all(r["recall_ids"] == r["recall_stories"] == r["same_best"] == 1.0 for r in rows), rows
    # evals/lookup_inline_ab.py (core/corroboration/corroborator.py's INLINE_ROW_CHARS) on the same dir: both ways timed alike.
    ab = json.loads(subprocess.run([sys.executable, "-m", "evals.lookup_inline_ab", "--data-dir",
                                    str(tmp_path / "kept"), "--queries", str(CLEF / "dev" / "tweets.queries.tsv"),
                                    "-n", "3", "--rounds", "2"], capture_output=True, text=True,
                                   timeout=300, check=True, cwd=ROOT).stdout)
    assert set(ab) == {"loop", "thread"} and all(w["n"] == 6 and w["p50_ms"] > 0 for w in ab.values())
    code = main(["--data-dir", str(tmp_path / "data"), *map(str, args), "--stored", "100"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "holds 34 tracked messages, fewer than --stored 100" in err and len(err.splitlines()) == 1
    marker.write_text("")  # a marker from before the time was written: its mtime (the build's end) stands in
    os.utime(marker, (1.7e9, 1.7e9))
    assert filled_at(marker, datetime.now(timezone.utc)) == datetime.fromtimestamp(1.7e9, timezone.utc)


def test_bench_digest(tipline) -> None:
    report = json.loads(tipline("bench", "digest", "--stored", 300, "--chats", 20, "--stories", 30, "--top", 3,
                                "--repeats", 2, "--json"))
    assert report["stored_messages"] == 300 and report["top_k"] == 3 and report["items"] == 3
    assert 0 < report["stories_in_two_or_more_chats"] <= 30
    assert report["items_with_verdict"] >= 1  # the stories are seed claims: the matcher really ran
    assert len(report["build_s"]["runs"]) == 2 and report["build_s"]["median"] > 0
    assert report["goal_s"] == 2.0 and isinstance(report["goal_met"], bool)
    assert "build_s:" in tipline("bench", "digest", "--stored", 50, "--chats", 5, "--stories", 5, "--repeats", 1)


def test_bench_watch(tipline) -> None:
    report = json.loads(tipline("bench", "watch", "--channels", 3, "--posts", 4, "--new", 2, "--cycles", 1,
                                "--interval", 3, "--gap", 0.1, "--tick", 0.5, "--checks", 2, "--live-rate", 1.5,
                                "--json"))
    first, [steady], live = report["first_read"], report["steady"], report["live"]
    assert first["posts_stored"] == 12 and first["requests"] == 3 and first["statuses"] == ["ok"]
    assert steady["posts_stored"] == 6 and steady["requests"] == 3
    assert report["checks_alone"]["n"] == 2 and live["checks_beside"]["n"] >= 1
    assert live["posts_shown"] >= 1 and live["found_by_lookup"] == live["posts_shown"]  # every post found
    assert 0 <= live["lag_s"]["p50"] <= live["lag_s"]["max"]
    assert live["requests"] >= 3 and live["goal_s"] == 33.0


def test_bench_digest_refuses_sizes_below_one(tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--data-dir", str(tmp_path / "data"), "bench", "digest", "--stored", "0"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.endswith("bench digest needs --stored of at least 1") and len(err.splitlines()) == 1


def test_bench_pipeline(tipline) -> None:
    # The child processes (time and peak RSS) run in test_bench_report_quick; once is enough for a smoke test.
    report = json.loads(tipline("bench", "pipeline", "--concurrency", "1,2", "--llm-ms", 5, "--search-ms", 5,
                                "--no-processes", "--json"))
    assert set(report["levels"]) == {"1", "2"}
    assert report["critical_path_ms"] == 25
    assert report["levels"]["2"]["llm_calls_per_check"] >= 4  # the whole LLM path ran, not a shortcut


def test_eval_claim_matching(tipline, tmp_path: Path) -> None:
    out = tipline("eval", "claim-matching", "--claims", CLAIMS, "--queries", CLEF / "dev" / "tweets.queries.tsv",
                  "--qrels", CLEF / "dev" / "tweet-vclaim-pairs.qrels", "--out", tmp_path / "dev.run.tsv")
    assert "MAP@5=" in out
    assert {line.split("\t")[0] for line in (tmp_path / "dev.run.tsv").read_text().splitlines()} == \
        {f"d{i}" for i in range(1, 7)}


def test_eval_corroboration(tipline, tmp_path: Path) -> None:
    out = tipline("eval", "corroboration", "--messages", CLEF / "train" / "tweets.queries.tsv",
                  "--qrels", CLEF / "train" / "tweet-vclaim-pairs.qrels", "--out", tmp_path / "clusters.tsv")
    assert "pairwise P=" in out
    assert len((tmp_path / "clusters.tsv").read_text().splitlines()) == 10
    # Across languages: "translations" of the same tweets (here the texts themselves, as posts of other
    # accounts) are each tweet's own story.
    translations = tmp_path / "translations.tsv"
    translations.write_text((CLEF / "train" / "tweets.queries.tsv").read_text(encoding="utf-8"), encoding="utf-8")
    out = tipline("eval", "corroboration", "--messages", CLEF / "train" / "tweets.queries.tsv",
                  "--qrels", CLEF / "train" / "tweet-vclaim-pairs.qrels", "--out", tmp_path / "clusters.tsv",
                  "--translations", translations)
    assert "with the translations (20 messages)" in out and "linked to their own translation 1.0000" in out


def test_eval_evidence(tipline, tmp_path: Path) -> None:
    out = tipline("eval", "evidence", "--data", CLIMATE_FEVER, "--split", "dev", "--out", tmp_path / "cf.json")
    assert "Retrieval" in out
    report = json.loads((tmp_path / "cf.json").read_text())
    assert report["claims"] == {"train": 4, "dev": 2, "all": 6}
    assert {"dense", "bm25", "rrf"} <= set(report["retrieval"])


def test_eval_tatoeba(tipline) -> None:
    out = tipline("eval", "tatoeba", "--data", TATOEBA)
    rows = [line.split("\t") for line in out.splitlines()[1:]]
    assert {(r[0].split()[0], r[1]) for r in rows} == {
        ("intfloat/multilingual-e5-small", "rus"), ("intfloat/multilingual-e5-small", "ukr"),
        ("sentence-transformers/all-MiniLM-L6-v2", "rus"), ("sentence-transformers/all-MiniLM-L6-v2", "ukr")}
    multilingual = [r for r in rows if "e5" in r[0]]
    assert all(float(r[3]) == 1.0 and float(r[4]) == 1.0 for r in multilingual)  # 5 easy pairs, own sentences


def test_eval_checkability(tipline, tmp_path: Path) -> None:
    out = tmp_path / "run.tsv"
    printed = tipline("eval", "checkability", "--messages", CHECKABILITY, "--out", out)
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r[0] for r in rows] == ["101", "102", "103", "104", "105", "106"]  # CLEF Task 1 columns, read as they are
    assert all(0.0 <= float(p) <= 1.0 and label in ("0", "1") for _, p, label in rows)
    assert {r[0]: r[2] for r in rows} == {"101": "0", "102": "1", "103": "0", "104": "1", "105": "0", "106": "1"}
    assert "wrote" in printed and "macro-F1=1.0000" in printed  # six easy messages of our own


def test_eval_realistic(tipline, tmp_path: Path) -> None:
    """Whole offline checks of chat-like rows against the seed: a Russian forward of the 5G fact-check, a
    greeting; every row scored by language and kind, the wrong ones written out."""
    five_g = "https://www.logically.ai/factchecks/library/b1f4b613"
    data = tmp_path / "realistic"
    data.mkdir()
    rows = [{"text": "СРОЧНО! Вышки 5G распространяют коронавирус. Перешлите всем, пока не удалили", "lang": "ru",
             "kind": "restate", "kb": "seed", "target": five_g},
            {"text": "Привет всем, как дела?", "lang": "ru", "kind": "no_claim", "kb": "seed", "target": ""}]
    (data / "x.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    failures = tmp_path / "failures.jsonl"
    out = tmp_path / "figures.json"
    printed = tipline("eval", "realistic", "--data", data, "--split", "all", "--failures", failures, "--out", out)
    ru = next(line for line in printed.splitlines() if line.startswith("ru "))
    assert ru.split()[1:] == ["1/1", "1/1", "2/2"], printed  # restate, no_claim, all
    assert "precision 1.000 (1/1)" in printed and failures.read_text(encoding="utf-8") == "\n"
    figures = json.loads(out.read_text(encoding="utf-8"))  # what `bench report` renders
    assert figures["split"] == "all" and figures["right"]["ru"] == {"restate": [1, 1], "no_claim": [1, 1], "*": [2, 2]}


def test_eval_realistic_screenshots(tipline, tmp_path: Path) -> None:
    """The same rows drawn as channel posts and read by Tesseract: the forward still finds its fact-check."""
    data = tmp_path / "realistic"
    data.mkdir()
    row = {"text": "СРОЧНО! Вышки 5G распространяют коронавирус. Перешлите всем, пока не удалили", "lang": "ru",
           "kind": "restate", "kb": "seed", "target": "https://www.logically.ai/factchecks/library/b1f4b613"}
    (data / "x.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    printed = tipline("eval", "realistic", "--data", data, "--split", "all", "--screenshots")
    ru = next(line for line in printed.splitlines() if line.startswith("ru "))
    assert ru.split()[1:] == ["1/1", "1/1"], printed


def test_bench_ocr(tipline) -> None:
    """Real Tesseract on real renders: the figures are there and the clean ones are read well (the goal is a
    CER of 5% at most; two easy renders per sentence leave a wide margin)."""
    report = json.loads(tipline("bench", "ocr", "--quick", "--json"))
    assert report["images"] == 2 * 6 and set(report["cer_by_language"]) == {"en", "ru", "uk"}
    assert 0 <= report["cer_clean"] <= 0.05
    assert 0 < report["seconds_per_image"]["median"] <= report["seconds_per_image"]["max"]
    # The text form from the same run's figures: a second `bench ocr --quick` only to read its text was
    # another 12 renders through Tesseract (33 s of this test in a loaded full run).
    from evals.bench_ocr import format_ocr

    assert "CER on clean renders" in format_ocr(report)


def test_bench_cold(tipline) -> None:
    """Fresh `tipline check` processes: each input has its figures, the emoji-only message is refused (exit 1)
    in far less memory than a check that loads the models."""
    report = json.loads(tipline("bench", "cold", "--repeats", "1", "--json"))
    rows = {f["input"]: f for f in report["figures"]}
    assert set(rows) == {"english claim", "russian claim", "emoji only (refused)"}
    assert rows["english claim"]["exit_code"] == 0 and rows["emoji only (refused)"]["exit_code"] == 1
    assert all(0 < f["cpu_s_median"] <= f["cpu_s_max"] and f["wall_s_median"] > 0 for f in rows.values())
    assert rows["emoji only (refused)"]["peak_rss_mib_median"] < rows["english claim"]["peak_rss_mib_median"] / 2
    # The text form from the same run's figures: a second `bench cold` only to read its text was four more
    # cold processes, one of them seeding a new data dir (78 s of this test in a loaded full run).
    from evals.bench_cold import format_cold

    assert "goal ≤ 1.5 s CPU" in format_cold(report)


def test_bench_burst(tipline) -> None:
    """A real `tipline run` child takes a few REST checks at once: every client gets its Result, /healthz is
    polled meanwhile, and the figures are where the report reads them."""
    report = json.loads(tipline("bench", "burst", "-n", "4", "--json"))
    assert report["n"] == 4 and sum(report["statuses"].values()) == 4
    assert set(report["statuses"]) <= {"201", "202"}
    assert report["result_s"]["n"] == 4 and report["healthz_s"]["n"] >= 1
    assert 0 < report["first_answer_s"]["p50"] <= report["first_answer_s"]["max"] <= report["result_s"]["max"]
    assert report["peak_rss_mib"] > 50
    # /healthz against its goal and bar, and the server's own event-loop stalls (read from its /metrics).
    assert {"over_goal", "over_bar"} <= set(report["healthz_s"])
    assert report["loop_stalls"]["samples"] >= 1 and report["loop_stalls"]["over_bar"] >= 0


def test_bench_report_quick(tipline, tmp_path: Path) -> None:
    from evals.bench_markdown import BLOCKS

    out = tmp_path / "benchmarks.md"  # does not exist: the report starts from docs/benchmarks.md
    tipline("bench", "report", "--quick", "--out", out, "--clef", CLEF, "--climate-fever", CLIMATE_FEVER,
            "--figures-json", tmp_path / "figures.json")
    doc, template = out.read_text(), (ROOT / "docs" / "benchmarks.md").read_text()
    for name in BLOCKS:
        body = doc.split(f"<!-- bench:{name} -->", 1)[1].split(f"<!-- /bench:{name} -->", 1)[0]
        assert "Not generated yet" not in body and "|---|" in body, name
    assert doc.count("Quick smoke run") == len(BLOCKS)
    assert _prose(doc) == _prose(template)  # only the generated blocks changed
    figures = json.loads((tmp_path / "figures.json").read_text())
    processes = figures["pipeline"]["processes"]
    assert [p["command"].split()[1] for p in processes] == ["ingest", "check", "run"]
    assert all(p["peak_rss_mib"] > 50 and p["wall_s"] > 0 for p in processes)  # a real process's memory
    assert figures["digest"]["stored_messages"] == 300 and figures["digest"]["items"] >= 1
    assert "a digest over 100,000 stored messages ≤ 2 s" in doc and "s over 300 messages" in doc
    # The realistic dev set: whole checks over the seed, a fixed sample of two messages per kind.
    realistic = figures["realistic"]
    assert realistic["per_kind"] == 2 and 0 < realistic["rows"] <= 12 and realistic["right"]["*"]["*"][1] == realistic["rows"]
    assert "eval realistic --split dev" in doc


def _prose(text: str) -> str:
    return re.sub(r"<!-- bench:([\w-]+) -->.*?<!-- /bench:\1 -->", "", text, flags=re.S)
