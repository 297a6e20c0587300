"""A fake search provider that misbehaves on request: a real aiohttp server on 127.0.0.1, port 0.

`GET /search?q=...` answers `{"results": [{"url", "title", "snippet"}]}` when healthy. Each request takes
the next scripted `Reply`, or `default` when the script is empty:

    api.push(Reply.ok())                          # a good answer
    api.push(Reply.error(503))                    # a server error
    api.push(*Reply.storm(5, retry_after="1"))    # five 429s carrying Retry-After (seconds or an HTTP date)
    api.push(Reply.hang())                        # never answers (until the server stops): a timeout
    api.push(Reply.malformed())                   # 200 with a body that is not JSON
    api.push(Reply.drip(0.2))                     # 200, then one byte of a valid body every 0.2 s
    api.default = Reply.error(500)                # what every unscripted request gets

`hits` counts requests, so a test can prove that an open circuit or a cache hit sent nothing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web

from tests.fakes.loopback import serve_on_loopback

Kind = Literal["ok", "status", "hang", "malformed", "drip"]


@dataclass(frozen=True)
class Reply:
    kind: Kind = "ok"
    status: int = 200
    retry_after: str | None = None
    interval_s: float = 0.0

    @classmethod
    def ok(cls) -> Reply:
        return cls("ok")

    @classmethod
    def error(cls, status: int, retry_after: str | None = None) -> Reply:
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def storm(cls, n: int, retry_after: str | None = "0") -> list[Reply]:
        return [cls("status", status=429, retry_after=retry_after) for _ in range(n)]

    @classmethod
    def hang(cls) -> Reply:
        return cls("hang")

    @classmethod
    def malformed(cls) -> Reply:
        return cls("malformed")

    @classmethod
    def drip(cls, interval_s: float) -> Reply:
        return cls("drip", interval_s=interval_s)


@dataclass
class FlakyAPI:
    default: Reply = field(default_factory=Reply.ok)
    script: list[Reply] = field(default_factory=list)
    hits: int = 0
    queries: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> FlakyAPI:
        app = web.Application()
        app.router.add_get("/search", self._search)
        self._runner, self.port = await serve_on_loopback(app, shutdown_timeout=0.5)
        return self

    async def stop(self) -> None:
        self._stopping.set()  # release hanging and dripping handlers so cleanup is quick
        if self._runner:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/search"

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    @staticmethod
    def body(query: str) -> dict:
        return {"results": [{"url": f"https://example.org/{i}?q={query.replace(' ', '+')}",
                             "title": f"Result {i} for {query}", "snippet": f"snippet {i}"} for i in range(3)]}

    async def _search(self, request: web.Request) -> web.StreamResponse:
        self.hits += 1
        query = request.query.get("q", "")
        self.queries.append(query)
        reply = self.script.pop(0) if self.script else self.default
        if reply.kind == "status":
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            return web.json_response({"error": f"fake HTTP {reply.status}"}, status=reply.status, headers=headers)
        if reply.kind == "hang":
            await self._stopping.wait()
            return web.json_response(self.body(query))
        if reply.kind == "malformed":
            return web.Response(text='{"results": [{"url": ', content_type="application/json")
        if reply.kind == "drip":
            payload = json.dumps(self.body(query)).encode()
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = len(payload)
            await resp.prepare(request)
            for i in range(len(payload)):
                await resp.write(payload[i:i + 1])
                try:
                    await asyncio.wait_for(self._stopping.wait(), reply.interval_s)
                    break
                except asyncio.TimeoutError:
                    pass
            return resp
        return web.json_response(self.body(query))
