"""`tipline bench cold`: what one `tipline check "..."` costs from a cold start, as fresh processes.

Each repeat spawns `python -m adapters.main check TEXT` (the same interpreter, cwd a scratch dir so no
.env is read) on a data dir that already holds the knowledge base (prepared once, before timing, by a
first check that seeds it and caches the optimised model graph). Figures per process: CPU seconds
(user + system, from `os.wait4`, the same numbers `/usr/bin/time -v` prints), wall seconds from spawn to
exit, and peak RSS (VmHWM polled while it runs: a forked child's ru_maxrss starts at this process's
high-water mark, see bench_processes.py). Three kinds of input: an English claim, a Russian one (the
multilingual model's path) and an emoji-only message, which must be refused before any model loads.
Goal (issue 14): a cold check at most 1.5 s of CPU.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bot.settings import Settings
from evals.bench_processes import _vm_hwm_kib, child_env

GOAL_CPU_S = 1.5
INPUTS = {
    "english claim": "5G towers spread the coronavirus",
    "russian claim": "Вышки 5G распространяют коронавирус",
    "emoji only (refused)": "🙂🙂🙂",
}


@dataclass(frozen=True)
class ColdFigure:
    input: str
    runs: int
    cpu_s_median: float
    cpu_s_max: float
    wall_s_median: float
    peak_rss_mib_median: float
    exit_code: int


class BenchColdError(RuntimeError):
    """A `tipline check` child failed where it should not have; the message carries its stderr."""


def _one(args: list[str], env: dict[str, str], cwd: Path, timeout_s: float) -> tuple[float, float, float, int, str]:
    """(cpu s, wall s, peak RSS MiB, exit code, stderr tail) of one child."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "adapters.main", *args], env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        peak = 0
        deadline = t0 + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if (kib := _vm_hwm_kib(proc.pid)) is not None:
                peak = max(peak, kib)
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise BenchColdError(f"tipline {' '.join(args[:1])} did not finish in {timeout_s:.0f} s")
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: Popen must not wait again
        err.seek(0)
        tail = err.read().decode(errors="replace").strip()[-400:]
    return usage.ru_utime + usage.ru_stime, wall, peak / 1024, proc.returncode, tail


def bench_cold_sync(settings: Settings, *, repeats: int = 5, timeout_s: float = 300) -> dict:
    with tempfile.TemporaryDirectory(prefix="tipline-cold-") as tmp:
        scratch = Path(tmp)
        data = scratch / "data"
        env = child_env(settings.model_copy(update={"data_dir": data}))
        # An installed tipline runs from its bytecode caches: a shell's PYTHONDONTWRITEBYTECODE=1 would leave a
        # fresh checkout compiling its own modules in every timed child instead (`import adapters.main` 0.6 ->
        # 0.8 s of CPU, three runs each).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # Not timed: the first start seeds the knowledge base and writes the optimised graph and the bytecode.
        cpu, _, _, code, tail = _one(["check", INPUTS["english claim"]], env, scratch, timeout_s)
        if code != 0:
            raise BenchColdError(f"the first tipline check exited {code}: {tail}")
        figures = []
        for name, text in INPUTS.items():
            runs = [_one(["check", text], env, scratch, timeout_s) for _ in range(repeats)]
            codes = {r[3] for r in runs}
            refused = name.endswith("(refused)")
            if codes != ({1} if refused else {0}):
                raise BenchColdError(f"tipline check ({name}) exited {sorted(codes)}: {runs[-1][4]}")
            figures.append(ColdFigure(
                input=name, runs=repeats, cpu_s_median=round(statistics.median(r[0] for r in runs), 2),
                cpu_s_max=round(max(r[0] for r in runs), 2),
                wall_s_median=round(statistics.median(r[1] for r in runs), 2),
                peak_rss_mib_median=round(statistics.median(r[2] for r in runs), 1), exit_code=runs[0][3]))
    checks = [f for f in figures if not f.input.endswith("(refused)")]
    return {"repeats": repeats, "goal_cpu_s": GOAL_CPU_S, "first_start_cpu_s": round(cpu, 2),
            "figures": [asdict(f) for f in figures],
            "goal_met": all(f.cpu_s_median <= GOAL_CPU_S for f in checks)}


async def bench_cold(settings: Settings, *, repeats: int = 5) -> dict:
    return await asyncio.to_thread(bench_cold_sync, settings, repeats=repeats)


def format_cold(result: dict) -> str:
    lines = [f"Cold `tipline check` as a fresh process, median of {result['repeats']} "
             f"(goal ≤ {result['goal_cpu_s']} s CPU: {'met' if result['goal_met'] else 'missed'})",
             f"{'input':24} {'CPU s':>7} {'max':>6} {'wall s':>7} {'peak RSS MiB':>13}"]
    for f in result["figures"]:
        lines.append(f"{f['input']:24} {f['cpu_s_median']:7.2f} {f['cpu_s_max']:6.2f} {f['wall_s_median']:7.2f} "
                     f"{f['peak_rss_mib_median']:13.1f}")
    lines.append(f"(first start on an empty data dir, seeding the knowledge base: {result['first_start_cpu_s']} s CPU)")
    return "\n".join(lines)
