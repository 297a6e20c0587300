#!/usr/bin/env python3
"""Peak memory, time and answer of the real `tipline` CLI on each hostile input of issue 13 (docs/reliability.md).

Each input is written to a scratch directory and given to a fresh `tipline` process (its own data dir, offline,
no TIPLINE_* variable of the caller's): `tipline ingest FILE` for files, `tipline check -` for bytes on standard
input. The peak RSS is the child's own (`os.wait4`), the answer the first line it printed.

    .venv/bin/python -m evals.hostile_inputs            # the sizes of the issue (a 50 MB CSV cell, ...)
    .venv/bin/python -m evals.hostile_inputs --quick    # small sizes: the smoke test (tests/test_hostile_inputs_tool.py)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIPLINE = [sys.executable, "-m", "adapters.main"]


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # after `tipline`; "{file}" is replaced by the input's path
    file_name: str | None  # None: the bytes go to standard input
    data: bytes


@dataclass(frozen=True)
class Outcome:
    case: str
    exit_code: int
    seconds: float
    peak_rss_mib: float
    answer: str


def cases(quick: bool) -> list[Case]:
    big_cell = (1 if quick else 50) * 1024 * 1024
    depth = 10_000 if quick else 100_000
    noise = 100 * 1024 if quick else 1024 * 1024
    rng = random.Random(7)
    laughs = ('<?xml version="1.0"?>\n<!DOCTYPE rss [\n <!ENTITY lol "lol">\n'
              + "".join(f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'
                        for i in range(1, 10))
              + ']>\n<rss version="2.0"><channel><title>t</title>\n'
              '<item><title>&lol9;</title><link>https://example.org/x</link><category>False</category></item>\n'
              "</channel></rss>\n")
    return [
        Case(f"CSV with one {big_cell // 2**20} MB cell", ("ingest", "{file}"), "huge.csv",
             b"claim,rating,url\n\"" + b"a" * big_cell + b"\",False,https://example.org/a\n"),
        Case(f"JSON nested {depth:,} deep", ("ingest", "{file}"), "deep.json",
             b"[" * depth + b"]" * depth),
        Case("RSS with nested entity definitions (billion laughs)", ("ingest", "{file}"), "laughs.xml",
             laughs.encode()),
        Case("JSON lines with lone surrogates and NUL", ("ingest", "{file}"), "odd.jsonl",
             json.dumps({"claim": "5G towers \ud800 spread COVID\u0000", "rating": "False",
                         "url": "https://example.org/5g"}).encode() + b"\n"),
        Case("CSV rows without a rating or a link", ("ingest", "{file}"), "half.csv",
             b"claim,rating,url\nThe moon is made of cheese,,https://example.org/m\nVaccines contain chips,False,\n"),
        Case(f"{noise // 1024:,} KB of random bytes to `check -`", ("check", "-"), None, rng.randbytes(noise)),
        Case("invalid UTF-8 before a claim to `check -`", ("check", "-"), None, b"\xff\xfe 5G causes covid"),
    ]


def copy_data_dir(seeded: Path, data_dir: Path) -> None:
    """`seeded` (a data dir a first start filled) copied to `data_dir`, its preallocated files kept sparse."""
    try:  # Qdrant Edge preallocates ~500 MB of sparse files per data dir (2.4 MB used)
        subprocess.run(["cp", "-a", "--sparse=always", str(seeded), str(data_dir)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):  # not GNU cp
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.copytree(seeded, data_dir)


def run_case(case: Case, scratch: Path, env: dict[str, str], timeout_s: float,
             seeded: Path | None = None) -> Outcome:
    data_dir = scratch / f"data-{abs(hash(case.name))}"
    if seeded is not None:
        copy_data_dir(seeded, data_dir)
    args = [a.replace("{file}", str(scratch / case.file_name)) if case.file_name else a for a in case.args]
    if case.file_name:
        (scratch / case.file_name).write_bytes(case.data)
    out_path, err_path = scratch / "out.txt", scratch / "err.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*TIPLINE, "--data-dir", str(data_dir), *args], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE if case.file_name is None else subprocess.DEVNULL,
                                stdout=out, stderr=err)
        if case.file_name is None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(case.data)
                proc.stdin.close()
            except BrokenPipeError:  # it stopped reading: what it says is the answer
                pass
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
    text = stdout + stderr
    # A refusal is on standard error (after any start-up lines on standard output); an answer on output.
    said = stderr if proc.returncode != 0 and stderr.strip() else stdout
    answer = next((line.strip() for line in said.splitlines() if line.strip()), "").replace(f"{scratch}/", "")
    if "Traceback" in text:
        answer = "TRACEBACK: " + answer
    return Outcome(case.name, proc.returncode, round(seconds, 2), round(usage.ru_maxrss / 1024, 1), answer[:160])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (the smoke test)")
    ap.add_argument("--model-dir", type=Path, help="TIPLINE_EMBED_MODEL_DIR for the children")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a child counts as hung")
    ap.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    # The smoke test's: a fresh data dir is seeded first (three models embedding the seed's 107 claims,
    # writing USE's arrays: 81 CPU-s for the 7 --quick children, 17 on copies), which no hostile input tests.
    ap.add_argument("--seeded", type=Path, help="copy this already seeded data dir for each child instead")
    ap.add_argument("--model-cache-dir", type=Path, help="TIPLINE_MODEL_CACHE_DIR for the children")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_OFFLINE": "true", "PYTHONPATH": str(ROOT)})
    if args.model_dir:
        env["TIPLINE_EMBED_MODEL_DIR"] = str(args.model_dir)
    if args.model_cache_dir:
        env["TIPLINE_MODEL_CACHE_DIR"] = str(args.model_cache_dir)
    with tempfile.TemporaryDirectory(prefix="tipline-hostile-") as tmp:
        outcomes = [run_case(c, Path(tmp), env, args.timeout, args.seeded) for c in cases(args.quick)]
    if args.json:
        print(json.dumps([o.__dict__ for o in outcomes], ensure_ascii=False, indent=1))
        return 0
    print("| input | exit | seconds | peak RSS (MiB) | what tipline said (first line) |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        print(f"| {o.case} | {o.exit_code} | {o.seconds} | {o.peak_rss_mib} | {o.answer.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
