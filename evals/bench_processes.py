"""Peak memory beside time for whole `tipline` processes: `check`, `ingest` and `run`.

Each command runs as its own child process (the same interpreter, `python -m adapters.main`) against a data
dir and the fake providers of `tipline bench pipeline`. Its peak resident set size is the kernel's
high-water mark for the process's memory (VmHWM in /proc/PID/status), read every 50 ms until it exits:
ru_maxrss (os.wait4, RUSAGE_CHILDREN) would not do, since a child forked from this process inherits
this process's high-water mark, so every child would report the benchmark's own size. Wall time is
from spawning the process to its exit, so it includes starting Python and loading the model, as a
user's `tipline check` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

import bot
from bot.settings import Settings

ROOT = Path(bot.__file__).resolve().parent.parent
# Never inherited by a benchmark child: each would connect it to something real.
_OFF = ("TELEGRAM_TOKEN", "TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET", "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "QDRANT_URL", "QDRANT_API_KEY", "LLM_API_KEY",
        "BRAVE_API_KEY", "FACTCHECK_API_KEY", "FEEDS")


@dataclass(frozen=True)
class ProcessFigure:
    """One child process: what ran, how long it took, its peak RSS, and what the time includes."""

    command: str
    wall_s: float
    peak_rss_mib: float
    includes: str


class BenchProcessError(RuntimeError):
    """A benchmarked `tipline` process failed; the message carries the end of its stderr."""


def child_env(settings: Settings, **overrides: object) -> dict[str, str]:
    """The environment for a `tipline` child: the caller's, without anything that reaches a real service,
    plus `settings`' data dir and model and `overrides` (as TIPLINE_<NAME> variables)."""
    env = {k: v for k, v in os.environ.items() if not (k.startswith("TIPLINE_") and k[8:] in _OFF)}
    values: dict[str, object] = {"data_dir": settings.data_dir, "embed_model": settings.embed_model,
                                 "gdelt_url": ""}
    if settings.uses_default_model:
        values["embed_model_dir"] = settings.model_dir
    values.update(overrides)
    env.update({f"TIPLINE_{k.upper()}": "" if v is None else str(v) for k, v in values.items()})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _vm_hwm_kib(pid: int) -> int | None:
    """The process's peak resident set size so far (VmHWM), or None once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None  # gone, or a zombie (no memory left to report)


class _Child:
    """A `tipline` child process whose peak RSS is watched while it runs."""

    POLL_S = 0.05

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path):
        self.name = args[0]
        self.errlog = cwd / f"stderr-{self.name}-{time.monotonic_ns()}.log"
        self.peak_kib = 0
        with open(self.errlog, "wb") as err:
            self.t0 = time.perf_counter()
            # cwd is a scratch dir, so no developer's .env is read by the child.
            self.proc = subprocess.Popen([sys.executable, "-m", "adapters.main", *args], env=env, cwd=cwd,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        self._watch = asyncio.get_running_loop().create_task(self._watch_memory())

    async def _watch_memory(self) -> None:
        # VmHWM of the process's own memory, read until it exits. Not ru_maxrss: a child forked from this
        # (large) process starts with our high-water mark, so its ru_maxrss would report ours.
        while (kib := _vm_hwm_kib(self.proc.pid)) is not None:
            self.peak_kib = max(self.peak_kib, kib)
            await asyncio.sleep(self.POLL_S)

    def running(self) -> bool:
        return self.proc.poll() is None

    async def wait(self, timeout_s: float) -> tuple[float, float]:
        """(wall seconds, peak RSS in MiB); raises BenchProcessError if it failed or overran."""
        try:
            await asyncio.wait_for(asyncio.to_thread(self.proc.wait), timeout_s)
        except TimeoutError:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait)
            raise BenchProcessError(f"tipline {self.name} did not finish in {timeout_s:.0f} s") from None
        finally:
            await self._watch
        wall = time.perf_counter() - self.t0
        if self.proc.returncode != 0:
            tail = self.errlog.read_text(errors="replace").strip().splitlines()[-3:]
            raise BenchProcessError(f"tipline {self.name} exited {self.proc.returncode}: " + " | ".join(tail))
        return wall, self.peak_kib / 1024


def _ingest_file(path: Path, n: int) -> None:
    """`n` fact-checks of our own invention as CSV, none like the checked texts."""
    places = ["harbour", "library", "stadium", "airport", "museum", "market", "bridge", "hospital"]
    lines = ["claim,url,rating,publisher,date"]
    for i in range(n):
        lines.append(f"The {places[i % len(places)]} in district {i} was sold for {1000 + 37 * i} coins,"
                     f"https://fc.example/bench/{i},False,Bench Checks,2023-0{1 + i % 9}-1{i % 10}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def _wait_ready(session: aiohttp.ClientSession, url: str, child: _Child, timeout_s: float) -> None:
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if not child.running():
            raise BenchProcessError(f"tipline run exited early: {child.errlog.read_text(errors='replace')[-300:]}")
        try:
            async with session.get(url) as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise BenchProcessError(f"tipline run was not ready within {timeout_s:.0f} s")


async def measure_processes(settings: Settings, provider_env: dict[str, object], *, check_text: str,
                            api_texts: list[str], ingest_rows: int, scratch: Path,
                            timeout_s: float = 600) -> list[ProcessFigure]:
    """`tipline ingest`, `tipline check` and `tipline run` (REST API, `api_texts` checked at once), one
    after the other on `settings.data_dir`, which should already hold the seed knowledge base."""
    figures = []
    env = child_env(settings, **provider_env)

    csv_path = scratch / "bench-ingest.csv"
    _ingest_file(csv_path, ingest_rows)
    wall, rss = await _Child(["ingest", str(csv_path)], env, scratch).wait(timeout_s)
    figures.append(ProcessFigure(f"tipline ingest FILE ({ingest_rows} fact-checks, CSV)", round(wall, 2),
                                 round(rss, 1), "start-up, model load, embedding and storing every row"))

    wall, rss = await _Child(["check", "--json", check_text], env, scratch).wait(timeout_s)
    figures.append(ProcessFigure("tipline check --json TEXT (LLM path, fake providers)", round(wall, 2),
                                 round(rss, 1), "start-up, model load and one whole check"))

    port, token = free_port(), "bench-token"
    child = _Child(["run"], child_env(settings, **provider_env, api_token=token, http_host="127.0.0.1",
                                      http_port=port, api_wait_s=settings.api_wait_s), scratch)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            await _wait_ready(session, f"{base}/healthz", child, timeout_s)
            ready_s = time.perf_counter() - child.t0

            auth = {"Authorization": f"Bearer {token}"}

            async def one(text: str) -> None:
                # The REST contract (docs/reliability.md): 201 with the Result within a few seconds, else
                # 202 and a Location to poll; 429/503 say when to come back. A client does all three.
                url, method = f"{base}/v1/checks", "POST"
                while True:
                    body = {"text": text} if method == "POST" else None
                    async with session.request(method, url, headers=auth, json=body) as resp:
                        if resp.status in (200, 201):
                            return
                        if resp.status == 202:  # the POST names the job to poll; a poll keeps polling
                            url = f"{base}{resp.headers['Location']}" if "Location" in resp.headers else url
                            method = "GET"
                        elif resp.status not in (429, 503):
                            raise BenchProcessError(f"{method} {url} answered {resp.status}: {await resp.text()}")
                        await asyncio.sleep(min(float(resp.headers.get("Retry-After", "1")), 1.0))

            t0 = time.perf_counter()
            await asyncio.gather(*(one(t) for t in api_texts))
            checks_s = time.perf_counter() - t0
    except BaseException:
        if child.running():
            child.proc.kill()
        with contextlib.suppress(BenchProcessError):
            await child.wait(60)
        raise
    child.proc.send_signal(signal.SIGTERM)  # the way a service manager stops it
    wall, rss = await child.wait(timeout_s)
    figures.append(ProcessFigure(f"tipline run (REST API; {len(api_texts)} checks at once, then SIGTERM)",
                                 round(wall, 2), round(rss, 1),
                                 f"start-up to ready {ready_s:.1f} s, the checks {checks_s:.1f} s, clean shutdown"))
    return figures
