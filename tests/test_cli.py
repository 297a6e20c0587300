"""The `tipline` command as a user runs it: real processes, one sentence on error, never a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_cache

ROOT = Path(__file__).resolve().parent.parent
TIPLINE = [sys.executable, "-m", "adapters.main"]


def run(args, env_extra, stdin=None, timeout=180):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update(env_extra)
    return subprocess.run([*TIPLINE, *args], input=stdin, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout)


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_dir, seeded):
    # The CLI runs as a subprocess, outside the network guard: keep it off the public news API.
    return {"TIPLINE_DATA_DIR": str(seeded.copy_to(tmp_path_factory.mktemp("cli") / "data")),
            "TIPLINE_EMBED_MODEL_DIR": str(model_dir), "TIPLINE_GDELT_URL": "",
            "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir))}


def assert_clean_failure(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("tipline:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_check_prints_a_verdict_card(env):
    proc = run(["check", "The 5G rollout caused the coronavirus outbreak"], env)
    assert proc.returncode == 0, proc.stderr
    assert "False" in proc.stdout and "[1]" in proc.stdout and "Check id:" in proc.stdout


def test_check_json_has_the_result_fields(env):
    proc = run(["check", "--json", "Vaccines cause autism"], env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in ("id", "verdict", "label", "confidence", "reasoning", "citations", "matches", "mode", "steps"):
        assert key in data
    assert data["verdict"] in {"SUPPORTED", "REFUTED", "MISLEADING", "MIXED", "NOT_ENOUGH_EVIDENCE", "NOT_CHECKABLE"}
    assert data["mode"] == "offline"
    for c in data["citations"]:
        assert set(c) >= {"n", "url", "title", "publisher", "published_at", "snippet", "rating"}


def test_check_with_nothing_to_check_fails_cleanly(env):
    assert "no text to check" in assert_clean_failure(run(["check", "   "], env))
    # NUL bytes cannot travel in argv; binary junk arrives on standard input instead.
    assert "no text to check" in assert_clean_failure(run(["check", "-"], env, stdin="\x00\x00\x01 \n"))


def test_check_reads_stdin(env):
    proc = run(["check", "-"], env, stdin="Forwarded from Family chat\nThe Earth is flat and NASA hides it\n")
    assert proc.returncode == 0, proc.stderr
    assert "Check id:" in proc.stdout


def test_chat_answers_each_line_and_exits_on_eof(env):
    proc = run(["chat"], env, stdin="Drinking bleach cures covid\n\nThe moon landing was staged\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Check id:") == 2


def test_unwritable_data_dir_fails_cleanly(tmp_path, model_dir):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "data").write_text("a file where a directory should be")
    line = assert_clean_failure(run(["check", "x y z"], {"TIPLINE_DATA_DIR": str(locked / "data"),
                                                       "TIPLINE_EMBED_MODEL_DIR": str(model_dir)}))
    assert "not writable" in line


def test_ingest_reports_bad_rows_and_a_bad_file_changes_nothing(env, tmp_path):
    good = tmp_path / "checks.csv"
    good.write_text("claim,url,rating,publisher,date\n"
                    "Eating carrots lets you see in total darkness,https://fc.example/carrots,False,FC Example,2021-02-03\n"
                    ",https://fc.example/empty,False,FC Example,2021-02-03\n"
                    "A second claim about tides and the moon,https://fc.example/tides,True,FC Example,2022-01-01\n")
    proc = run(["ingest", str(good)], env)
    assert proc.returncode == 0, proc.stderr
    assert "2 new" in proc.stdout and "1 skipped" in proc.stdout
    assert ":3:" in proc.stderr  # the bad row's line number
    count_line = [x for x in proc.stdout.splitlines() if x.startswith("Knowledge base:")][0]

    bad = tmp_path / "broken.json"
    bad.write_text('{"@type": "ClaimReview", "claimReviewed": "x"')  # truncated JSON
    proc = run(["ingest", str(bad)], env)
    line = assert_clean_failure(proc)
    assert "nothing ingested" in line
    assert count_line in proc.stdout

    proc = run(["check", "--json", "You can see in total darkness if you eat carrots"], env)
    data = json.loads(proc.stdout)
    assert data["matches"][0]["url"] == "https://fc.example/carrots"


def test_missing_file_and_bad_mapping(env, tmp_path):
    assert "no such file" in assert_clean_failure(run(["ingest", str(tmp_path / "nope.csv")], env))
    proc = run(["ingest", "--map", "claim", str(tmp_path / "nope.csv")], env)
    assert proc.returncode == 2 and "FIELD=COLUMN" in proc.stderr


def test_second_process_on_the_same_data_dir_is_told_why(env):
    holder = subprocess.Popen([*TIPLINE, "chat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**{k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}, **env})
    try:
        ready = holder.stderr.readline() + holder.stderr.readline()
        assert "Ready" in ready, ready
        line = assert_clean_failure(run(["check", "anything at all"], env))
        assert "another tipline process" in line
    finally:
        holder.communicate("", timeout=60)


def test_schema_file_is_current():
    proc = subprocess.run([*TIPLINE, "schema", "-"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == json.loads((ROOT / "docs" / "result.schema.json").read_text())


def test_eval_claim_matching_writes_a_trec_run_and_scores(env, tmp_path):
    claims = tmp_path / "claims.tsv"
    claims.write_text("vclaim_id\tvclaim\ttitle\n"
                      "0\tA shark was photographed swimming on a flooded highway after a hurricane.\tShark on a highway?\n"
                      "1\tThe city council voted to ban all bicycles from downtown streets.\tBicycle ban vote\n"
                      "2\tA comet will hit the Earth next Tuesday according to NASA.\tComet impact warning\n")
    queries = tmp_path / "q.tsv"
    queries.write_text("\ttweet_content\n"
                       "10\tOMG a shark swimming down the flooded highway after the hurricane!!\n"
                       "11\tNASA says a comet hits Earth next Tuesday — Someone (@someone) May 1, 2020\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("10\t0\t0\t1\n11\t0\t2\t1\n")
    out = tmp_path / "run.tsv"
    proc = run(["eval", "claim-matching", "--claims", str(claims), "--queries", str(queries),
                "--out", str(out), "--qrels", str(qrels)], env)
    assert proc.returncode == 0, proc.stderr
    assert "MAP@5=1.0000" in proc.stdout
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert {r[0] for r in rows} == {"10", "11"}
    assert all(len(r) == 6 and r[1] == "Q0" for r in rows)
    top = {r[0]: r[2] for r in rows if r[3] == "1"}
    assert top == {"10": "0", "11": "2"}


def test_logs_are_json_lines_and_at_the_level_the_environment_asks(env):
    proc = run(["check", "Vaccines cause autism"], {**env, "TIPLINE_LOG_JSON": "1", "TIPLINE_LOG_LEVEL": "debug"})
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines, "debug level logs something"
    records = [json.loads(line) for line in lines]  # every line one JSON object
    assert any(r.get("level", r.get("levelname", "")).upper() == "DEBUG" for r in records)
    quiet = run(["check", "Vaccines cause autism"], {**env, "TIPLINE_LOG_LEVEL": "error"})
    assert quiet.returncode == 0 and not [x for x in quiet.stderr.splitlines() if " INFO " in x or " DEBUG " in x]
