"""docs/benchmarks.md is generated: its blocks are replaced in place, nothing else changes, and no figure
lives outside them. Plus the global flags every bench/eval command shares. No model is loaded here."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from evals.bench import Spread
from evals.bench_markdown import BLOCKS, realistic_block
from evals.realistic_eval import Row, euvs_rows, read_rows, read_twins, run_realistic
from evals.bench_report import write_blocks
from adapters.main import build_parser, main
from evals.evaluation import EvalDataError
from schema.models import Result, Verdict

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"


def test_blocks_are_replaced_in_place_and_the_rest_is_kept() -> None:
    text = "intro\n<!-- bench:a -->\nold\n<!-- /bench:a -->\nmiddle\n<!-- bench:b -->\n<!-- /bench:b -->\nend\n"
    out = write_blocks(text, {"a": "new A", "b": "new B\n"})
    assert out == ("intro\n<!-- bench:a -->\nnew A\n<!-- /bench:a -->\n"
                   "middle\n<!-- bench:b -->\nnew B\n<!-- /bench:b -->\nend\n")
    assert write_blocks(out, {"a": "new A", "b": "new B"}) == out  # regenerating is stable
    with pytest.raises(EvalDataError, match="bench:c"):
        write_blocks(text, {"c": "anything"})


def test_the_document_has_a_place_for_every_block() -> None:
    text = DOC.read_text()
    for name in BLOCKS:
        assert text.count(f"<!-- bench:{name} -->") == 1 and text.count(f"<!-- /bench:{name} -->") == 1, name


def test_no_figure_outside_the_generated_blocks() -> None:
    """Every number in docs/benchmarks.md comes from `tipline bench report`: outside its blocks, only names
    that contain digits are allowed (and code, which shows commands and paths)."""
    text = re.sub(r"<!-- bench:([\w-]+) -->.*?<!-- /bench:\1 -->", "", DOC.read_text(), flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    for name in ("CLEF-2020", "Task 2", "Diggelmann et al., 2020", "127.0.0.1", "Seed 000", "BM25", "F1"):
        text = text.replace(name, "")
    assert not re.findall(r".{0,30}\d.{0,30}", text)


def test_the_realistic_block_follows_claim_matching() -> None:
    text = DOC.read_text()
    assert BLOCKS.index("realistic") == BLOCKS.index("claim-matching") + 1
    assert text.index("<!-- bench:realistic -->") > text.index("<!-- /bench:claim-matching -->")
    assert text.index("<!-- bench:realistic -->") < text.index("<!-- bench:match -->")


def _result(verdict: Verdict, url: str | None = None) -> Result:
    return Result(id="-", text="t", verdict=verdict, label="", confidence=1.0, reasoning="", inherited_from=url)


def test_realistic_figures_are_what_the_cli_prints_and_the_block_renders() -> None:
    """A fixed sample (the first rows of each kind), scored by language and kind; the CLI's table and the
    report's block come from the same figures. No model: `check` is a stand-in."""
    rows = [Row("a", "ru", "restate", "u1", "x:1"), Row("b", "ru", "restate", "u1", "x:2"),
            Row("c", "ru", "restate", "u1", "x:3"), Row("d", "uk", "deny", "u1", "x:4"),
            Row("e", "en", "no_claim", "", "x:5")]
    answers = {"a": _result(Verdict.REFUTED, "u1"), "b": _result(Verdict.NOT_CHECKABLE),
               "d": _result(Verdict.REFUTED, "u1"), "e": _result(Verdict.NOT_CHECKABLE)}

    async def check(text: str) -> Result:
        return answers[text]

    outcome = asyncio.run(run_realistic(check, rows, {"u1": Verdict.REFUTED}, split="all", per_kind=2))
    f = outcome.figures()
    assert f["rows"] == 4  # the third restatement is past the sample
    assert f["right"]["ru"] == {"restate": [1, 2], "*": [1, 2]} and f["right"]["*"]["*"] == [2, 4]
    assert f["inherited"] == [1, 2] and f["restatements"] == [1, 2] and f["asserting_turned_away"] == 1
    assert "precision 0.500 (1/2)" in outcome.table()
    block = realistic_block({"quick": False, "realistic": {"split": "dev", "per_kind": None, **f}}, None)
    assert "eval realistic --split dev" in block and "4 messages of the dev split" in block
    assert "| ru | 1/2 | – | – | – | – | – | **1/2** (0.500) |" in block
    assert "| **all** | 1/2 | – | – | 0/1 | – | 1/1 | **2/4** (0.500) |" in block
    assert "precision **0.500** (1/2" in block and "turned away as not checkable: **1**" in block
    assert "Not measured: no eval" in realistic_block({"quick": False, "realistic": {"skipped": "no eval"}}, None)


def test_a_twin_fact_check_answers_a_restatement_and_counts_against_a_denial(tmp_path: Path) -> None:
    """twins.tsv names fact-checks of the same claim: inheriting from the target's twin is a right answer to a
    restatement and a wrong one to a denial; any other fact-check stays wrong."""
    (tmp_path / "twins.tsv").write_text("# comment\nu1\tu2\tthe same claim\n", encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(
        '{"text": "a", "lang": "ru", "kind": "restate", "target": "u1"}\n'
        '{"text": "b", "lang": "ru", "kind": "restate", "target": "u1"}\n'
        '{"text": "d", "lang": "ru", "kind": "deny", "target": "u2"}\n', encoding="utf-8")
    assert read_twins(tmp_path / "twins.tsv") == {"u1": frozenset({"u2"}), "u2": frozenset({"u1"})}
    rows = read_rows([tmp_path / "rows.jsonl"])
    assert rows[0].is_target("u2") and not rows[0].is_target("u3") and not rows[0].is_target(None)
    answers = {"a": _result(Verdict.REFUTED, "u2"), "b": _result(Verdict.REFUTED, "u3"),
               "d": _result(Verdict.REFUTED, "u1")}

    async def check(text: str) -> Result:
        return answers[text]

    verdicts = {"u1": Verdict.REFUTED, "u2": Verdict.REFUTED, "u3": Verdict.REFUTED}
    f = asyncio.run(run_realistic(check, rows, verdicts, split="all")).figures()
    assert f["right"]["ru"] == {"restate": [1, 2], "deny": [0, 1], "*": [1, 3]}
    assert f["inherited"] == [1, 3]


def test_spread_is_the_median_and_the_range() -> None:
    s = Spread.of([3.0, 1.0, 2.0])
    assert (s.median, s.lo, s.hi, s.runs) == (2.0, 1.0, 3.0, (3.0, 1.0, 2.0))
    assert s.text(".1f") == "2.0 (1.0–3.0)"
    assert Spread.of([5.0]).text(".1f") == "5.0"


@pytest.mark.parametrize("argv", [
    ["--debug", "--log-json", "--data-dir", "/d", "bench", "match", "--claims", "c", "--queries", "q"],
    ["bench", "--debug", "match", "--log-json", "--claims", "c", "--queries", "q", "--data-dir", "/d"],
    ["bench", "match", "--claims", "c", "--queries", "q", "--data-dir", "/d", "--debug", "--log-json"],
])
def test_global_flags_work_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.debug, args.log_json, args.data_dir) == (True, True, Path("/d"))


@pytest.mark.parametrize("argv", [["check", "some text"], ["eval", "evidence", "--data", "x"], ["run"],
                                  ["bench", "report"]])
def test_global_flags_default_when_not_given(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.debug, args.log_json, args.data_dir) == (False, False, None)
    assert build_parser().parse_args([*argv, "--debug"]).debug  # and are taken after any subcommand


def test_unexpected_error_names_a_flag_that_works(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    target = tmp_path / "no such dir" / "schema.json"  # writing there fails in a way no handler expects
    assert main(["schema", str(target)]) == 1
    err = capsys.readouterr().err
    assert "unexpected error" in err and "--debug" in err
    with pytest.raises(FileNotFoundError):  # the flag, given where a user would add it, shows the traceback
        main(["schema", str(target), "--debug"])


def test_bench_usage_errors_are_one_line(capsys: pytest.CaptureFixture) -> None:
    for argv in (["bench", "pipeline", "--concurrency", "1,x"], ["bench", "match", "--claims", "c"],
                 ["bench", "report", "--quick"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_euvsdisinfo_rows_point_at_the_ingested_case_and_its_word_for_word_twins(tmp_path: Path) -> None:
    """EUvsDisinfo rows name a vclaim_id; the eval checks them against the case's url (as `tipline ingest` of
    cases.tsv stores it), takes cases stating the same narrative word for word as twins, and keeps each row in
    the split its vclaim_id gives (the split the trainers used)."""
    (tmp_path / "cases.tsv").write_text(
        "vclaim_id\tvclaim\ttitle\tdate\turl\n"
        "a\tNATO creates threats\tt\t2020-01-01\thttps://e.eu/a\n"
        "b\tNATO  creates threats\tt\t2021-01-01\thttps://e.eu/b\n"
        "c\tSomething else\tt\t2021-01-01\thttps://e.eu/c\n", encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(
        '{"text": "x", "lang": "ru", "kind": "restate", "kb": "euvsdisinfo", "target": "a"}\n'
        '{"text": "y", "lang": "ru", "kind": "restate", "kb": "seed", "target": "u1"}\n', encoding="utf-8")
    written = read_rows([tmp_path / "rows.jsonl"], "euvsdisinfo")
    rows, verdicts = euvs_rows(written, tmp_path / "cases.tsv")
    assert [r.target for r in rows] == ["https://e.eu/a"] and rows[0].split == written[0].split
    assert rows[0].is_target("https://e.eu/b") and not rows[0].is_target("https://e.eu/c")
    assert set(verdicts.values()) == {Verdict.REFUTED}
