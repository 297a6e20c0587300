"""The fake Slack Web API plus Socket Mode: `apps.connections.open` hands out a ws:// URL on the same
server, which greets with `hello`, pushes envelopes the test sends, and records the app's acks.

Envelopes follow Slack's wire format: {"envelope_id", "type": "events_api" | "slash_commands" |
"interactive", "payload", "accepts_response_payload", "retry_attempt", "retry_reason"}.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.slack_api import FakeSlack


@dataclass
class FakeSlackSocket(FakeSlack):
    app_token: str = "xapp-1-A0TIPLINE-1-test"
    acks: list[dict[str, Any]] = field(default_factory=list)
    opened: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._env = itertools.count(1)
        self._ws: web.WebSocketResponse | None = None

    def add_routes(self, app: web.Application) -> None:
        # Registered before the catch-all /api/{method} route so they win.
        app.router.add_post("/api/apps.connections.open", self._open)
        app.router.add_get("/link/", self._socket)
        super().add_routes(app)

    async def _open(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if auth != f"Bearer {self.app_token}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        self.opened += 1
        return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket=t{self.opened}"})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                            "connection_info": {"app_id": "A0TIPLINE"}})
        async with self._changed:
            self._changed.notify_all()
        async for msg in ws:
            if msg.type == WSMsgType.TEXT:
                data = json.loads(msg.data)
                if "envelope_id" in data:
                    self.acks.append(data)
                    async with self._changed:
                        self._changed.notify_all()
        return ws

    @property
    def connected(self) -> bool:
        return self._ws is not None and not self._ws.closed

    async def push(self, kind: str, payload: dict[str, Any], *, accepts_response_payload: bool = False) -> str:
        assert self._ws is not None, "the app has not connected"
        envelope_id = f"env-{next(self._env)}"
        await self._ws.send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                  "accepts_response_payload": accepts_response_payload,
                                  "retry_attempt": 0, "retry_reason": ""})
        return envelope_id

    def ack_of(self, envelope_id: str) -> dict[str, Any] | None:
        return next((a for a in self.acks if a["envelope_id"] == envelope_id), None)

    async def stop(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        await super().stop()
