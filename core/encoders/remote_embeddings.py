"""Text embeddings from an OpenAI-compatible embeddings server (`POST {base}/embeddings`): Hugging Face
TEI, Infinity, Ollama, vLLM, or OpenAI itself. Selected by TIPLINE_EMBED_URL at the composition root
(bot/app.py); the rest of tipline sees the same `TextEmbedder` as the in-process model.

Why: one machine's CPU embeds every message, claim and piece of evidence; a GPU server shared by several
tipline processes (with a Qdrant server for the vectors) is how a deployment grows past one machine.

- Batched: at most `batch_size` texts per request (TEI's default `--max-client-batch-size` is 32), up to
  `concurrency` requests in flight, answers put back in input order by their `index`.
- Retries: connection errors, timeouts, 429 and 5xx are retried `retries` times with exponential
  back-off (honouring Retry-After up to `MAX_RETRY_AFTER_S`); any other answer fails at once with the
  server's own message, as an `EmbeddingError` sentence.
- The same cache as the in-process model: the most recent `cache_size` texts, shared by the sync and
  async paths, so a check that embeds its message twice asks the server once.
- Vectors are L2-normalised here (not every server normalises), as the in-process model's are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from core.encoders.embeddings import EmbeddingError
from core.encoders.vector_memo import VectorMemo
from schema.text import safe_text

MAX_RETRY_AFTER_S = 10.0
# The in-process model reads at most 256 word pieces (~1,500 characters); servers refuse inputs past
# their model's context (TEI: 413 without --auto-truncate), so nothing longer than a message may be is sent.
MAX_CHARS = 4096
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


class _Retry(Exception):
    def __init__(self, reason: str, after_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.after_s = after_s


class RemoteEmbedder:
    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, batch_size: int = 32,
                 timeout_s: float = 30.0, retries: int = 3, backoff_s: float = 0.5, concurrency: int = 4,
                 cache_size: int = 4096):
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model_name = model
        self.batch_size = max(1, batch_size)
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.concurrency = max(1, concurrency)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0))
        self._sync = httpx.Client(timeout=self._timeout, headers=self._headers)
        self._async: httpx.AsyncClient | None = None
        self._memo: VectorMemo[str] = VectorMemo(cache_size)
        self.requests = 0  # requests sent, retries included (for tests and `tipline doctor`)
        self.dim = 0

    @classmethod
    def connect(cls, base_url: str, model: str, **kw: Any) -> RemoteEmbedder:
        """A client whose `dim` is known: one probe embedding, so a wrong URL fails at start-up in one
        sentence rather than on the first message."""
        embedder = cls(base_url, model, **kw)
        embedder.dim = int(embedder.embed_sync(["dimension probe"]).shape[1])
        return embedder

    # --- the TextEmbedder protocol ------------------------------------------------------------------

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        cached, todo = self._lookup(texts)
        fresh = [self._post_sync(batch) for batch in self._batches(todo)]
        return self._assemble(texts, cached, todo, fresh)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        cached, todo = self._lookup(texts)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(batch: list[str]) -> np.ndarray:
            async with gate:
                return await self._post_async(batch)
        tasks = [asyncio.create_task(one(b)) for b in self._batches(todo)]
        try:
            fresh = await asyncio.gather(*tasks)
        except BaseException:  # one batch failed for good: the others' answers are of no use
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return self._assemble(texts, cached, todo, list(fresh))

    def clear_cache(self) -> None:
        self._memo.clear()

    async def aclose(self) -> None:
        self._sync.close()
        if self._async is not None:
            await self._async.aclose()

    # --- cache and batches --------------------------------------------------------------------------

    def _lookup(self, texts: list[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        return self._memo.lookup(texts)

    def _batches(self, todo: list[str]) -> list[list[str]]:
        return [todo[i:i + self.batch_size] for i in range(0, len(todo), self.batch_size)]

    def _assemble(self, texts: list[str], cached: dict[str, np.ndarray], todo: list[str],
                  fresh: list[np.ndarray]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        found = dict(cached)
        if todo:
            vecs = np.concatenate(fresh)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            vecs = (vecs / norms).astype(np.float32)
            found.update(zip(todo, vecs))
            self._memo.remember(todo, vecs)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    # --- the wire ------------------------------------------------------------------------------------

    def _body(self, batch: list[str]) -> dict[str, Any]:
        # Some servers refuse an empty string (OpenAI: 400); a lone surrogate cannot be sent as JSON.
        inputs = [(safe_text(t) or " ")[:MAX_CHARS] for t in batch]
        return {"model": self.model_name, "input": inputs, "encoding_format": "float"}

    def _vectors(self, response: httpx.Response, n: int) -> np.ndarray:
        """The batch's vectors from a response, or `_Retry` / `EmbeddingError`."""
        if response.status_code in RETRYABLE:
            after = response.headers.get("Retry-After")
            raise _Retry(f"HTTP {response.status_code}",
                         min(float(after), MAX_RETRY_AFTER_S) if after and after.isdigit() else None)
        try:
            body = response.json()
        except ValueError as exc:
            raise EmbeddingError(f"the embeddings server at {self.url} answered HTTP {response.status_code} "
                                 "without JSON; is TIPLINE_EMBED_URL the API's base URL (ending in /v1)?") from exc
        if response.status_code != 200:
            error = body.get("error") if isinstance(body, dict) else None
            message = (error.get("message") if isinstance(error, dict) else error) or body
            raise EmbeddingError(f"the embeddings server at {self.url} refused the request "
                                 f"(HTTP {response.status_code}: {str(message)[:200]})")
        try:
            items = sorted(body["data"], key=lambda d: d["index"])
            vecs = np.asarray([d["embedding"] for d in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"the embeddings server at {self.url} did not answer in the OpenAI format "
                                 "(data[].embedding)") from exc
        if vecs.ndim != 2 or vecs.shape[0] != n or (self.dim and vecs.shape[1] != self.dim):
            raise EmbeddingError(f"the embeddings server at {self.url} returned {vecs.shape} vectors for {n} "
                                 f"texts (expected {self.dim or 'any'} dimensions)")
        return vecs

    def _wait_s(self, attempt: int, retry: _Retry) -> float:
        return retry.after_s if retry.after_s is not None else self.backoff_s * (2 ** attempt)

    def _give_up(self, retry: _Retry) -> EmbeddingError:
        return EmbeddingError(f"the embeddings server at {self.url} could not be used ({retry.reason}, "
                              f"{self.retries + 1} attempts); check TIPLINE_EMBED_URL and that the server is up")

    def _post_sync(self, batch: list[str]) -> np.ndarray:
        body = self._body(batch)
        for attempt in range(self.retries + 1):
            try:
                self.requests += 1
                return self._vectors(self._sync.post(self.url, json=body), len(batch))
            except httpx.TransportError as exc:
                retry = _Retry(_transport_reason(exc))
            except _Retry as exc:
                retry = exc
            if attempt == self.retries:
                raise self._give_up(retry)
            time.sleep(self._wait_s(attempt, retry))
        raise AssertionError("unreachable")

    async def _post_async(self, batch: list[str]) -> np.ndarray:
        if self._async is None:
            self._async = httpx.AsyncClient(timeout=self._timeout, headers=self._headers)
        body = self._body(batch)
        for attempt in range(self.retries + 1):
            try:
                self.requests += 1
                response = await self._async.post(self.url, json=body)
                # Parsing a batch of vectors is quick next to the request; a 32 x 1024 answer is ~0.3 MB.
                return self._vectors(response, len(batch))
            except httpx.TransportError as exc:
                retry = _Retry(_transport_reason(exc))
            except _Retry as exc:
                retry = exc
            if attempt == self.retries:
                raise self._give_up(retry)
            await asyncio.sleep(self._wait_s(attempt, retry))
        raise AssertionError("unreachable")


def _transport_reason(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(exc, httpx.ConnectError):
        return "cannot connect"
    return type(exc).__name__
