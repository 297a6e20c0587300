"""What a benchmark ran on and with: stated beside its figures, since they mean nothing without it."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import bot
from bot.settings import Settings

ROOT = Path(bot.__file__).resolve().parent.parent


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit() -> str:
    """The checked-out commit, saying so when tracked files differ from it (the figures are then of that
    tree, not of the commit alone)."""
    head = _git("rev-parse", "--short=10", "HEAD") or "unknown"
    return head + (" + uncommitted changes" if _git("status", "--porcelain", "--untracked-files=no") else "")


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system). Beside the wall time it
    tells a slow run on a busy machine (CPU well under cores x wall) from a run that is itself too long."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def machine_facts(settings: Settings) -> dict:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"), "commit": commit(),
        "cores": cores, "cpu": _cpu_model(), "memory_gib": _memory_gib(),
        "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
        "onnxruntime": _version("onnxruntime"), "fastembed": _version("fastembed"),
        "qdrant_client": _version("qdrant-client"), "embed_model": settings.embed_model,
        "load_average_start": load_average(),
    }
