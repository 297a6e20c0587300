"""A fake OpenAI-compatible embeddings server (TEI, Infinity, Ollama, vLLM and OpenAI all speak this):
a real aiohttp server on 127.0.0.1, port 0, the real wire format, and real vectors.

    POST /v1/embeddings  {"model": "...", "input": "text" | ["text", ...], "encoding_format": "float"}
      -> 200 {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [...]}],
              "model": "...", "usage": {"prompt_tokens": N, "total_tokens": N}}
      -> 4xx/5xx {"error": {"message", "type", "code"}}  (OpenAI's error shape; TEI's is close)

The vectors come from the real in-process model (`core.encoders.embeddings.Embedder`), deliberately *not*
normalised (TEI's `--normalize false`, some Ollama models), so the client must normalise. Like TEI it
refuses a batch past `max_batch` (413 in TEI; here 413 with the same message), and `fail(status, times)`
makes the next requests fail (a 503 while the server warms up, a 429 with Retry-After).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

from tests.fakes.loopback import LoopbackFake


@dataclass
class FakeEmbeddings(LoopbackFake):
    embedder: Any = None  # core.encoders.embeddings.Embedder: the real model behind the fake server
    api_key: str | None = None
    max_batch: int = 32
    scale: float = 3.0  # the answer is the unit vector times this: the client normalises
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/embeddings", self._embeddings)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail(self, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        self.failures += [(status, headers or {})] * times

    @staticmethod
    def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
        return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": kind}},
                                 status=status, headers=headers)

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        async with self._changed:
            self._changed.notify_all()
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(401, "Incorrect API key provided.", "invalid_api_key")
        if self.failures:
            status, headers = self.failures.pop(0)
            return self._error(status, "Model is overloaded" if status >= 500 else "Rate limit reached",
                               "server_error" if status >= 500 else "rate_limit_exceeded", headers)
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self._error(400, "'input' must be a string or a non-empty array of strings", "invalid_request_error")
        if any(not t for t in texts):
            return self._error(400, "'input' cannot contain an empty string", "invalid_request_error")
        if len(texts) > self.max_batch:
            return self._error(413, f"batch size {len(texts)} > maximum allowed batch size {self.max_batch}",
                               "validation")
        vecs = await asyncio.to_thread(self.embedder.embed_sync, texts)
        vecs = np.asarray(vecs, dtype=np.float32) * self.scale
        tokens = sum(len(t.split()) for t in texts)
        return web.json_response({
            "object": "list", "model": body.get("model", ""),
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
