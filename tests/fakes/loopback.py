"""Start an aiohttp application on 127.0.0.1 with a free port: the one way every fake server starts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web


async def serve_on_loopback(app: web.Application, shutdown_timeout: float = 2.0) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


class LoopbackFake:
    """Lifecycle shared by the fake platform servers: `start()` serves `add_routes` on a free port."""

    shutdown_timeout = 2.0
    _changed: asyncio.Condition  # set by each fake's __post_init__
    _runner: web.AppRunner | None = None
    port: int = 0

    def add_routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def start(self):
        app = web.Application()
        self.add_routes(app)
        self._runner, self.port = await serve_on_loopback(app, shutdown_timeout=self.shutdown_timeout)
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Wait until `predicate()` returns something truthy, re-checked whenever the fake notifies
        its `_changed` condition (after every API call)."""
        async def loop() -> Any:
            async with self._changed:
                while not (found := predicate()):
                    await self._changed.wait()
                return found
        return await asyncio.wait_for(loop(), timeout)
