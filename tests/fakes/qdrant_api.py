"""A fake Qdrant server's read-only part `tipline doctor` uses: a real aiohttp server on 127.0.0.1 with
Qdrant's REST wire format.

    GET /             -> {"title": "qdrant - vector search engine", "version": "1.19.0", "commit": "…"}
    GET /collections  -> {"result": {"collections": [{"name": "…"}]}, "status": "ok", "time": 0.00001}
    with an api-key set, a request without the `api-key` header gets 401 and Qdrant's plain-text body.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from tests.fakes.loopback import LoopbackFake


@dataclass
class FakeQdrant(LoopbackFake):
    api_key: str | None = None
    collections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/", self._root)
        app.router.add_get("/collections", self._collections)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _refused(self, request: web.Request) -> web.Response | None:
        if self.api_key is not None and request.headers.get("api-key") != self.api_key:
            return web.Response(status=401, text="Must provide an API key or an Authorization bearer token")
        return None

    async def _root(self, request: web.Request) -> web.Response:
        return self._refused(request) or web.json_response(
            {"title": "qdrant - vector search engine", "version": "1.19.0", "commit": "0" * 40})

    async def _collections(self, request: web.Request) -> web.Response:
        return self._refused(request) or web.json_response(
            {"result": {"collections": [{"name": n} for n in self.collections]}, "status": "ok", "time": 1.2e-5})
