"""The REST API: the same checks as the bots, as JSON, for scripts, newsroom tools and browser extensions.

    POST /v1/checks        {"text": "..."}  -> 201 Result JSON       (Authorization: Bearer <token>)
    GET  /v1/checks/{id}                    -> 200 Result JSON | 404
    POST with `Idempotency-Key: <key>`: the same key answers with the same check (200, header
    `Idempotent-Replayed: true`) instead of running it again; 409 while it is still running, 422 if
    the key is reused for a different text. Needs the job queue (bot/queue.py).
    GET  /healthz                           -> 200 {"status": "ok", "factchecks": N}

Routes are added to the one aiohttp application that also carries /slack/events.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.chat_app import ChatApp
from bot.queue import SilentResponderFactory
from core.intake import EmptyInput
from schema.json_limits import JSONTooDeep, loads_bounded
from schema.models import Result

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
BODY_JSON_DEPTH = 8  # the body is {"text": …}; anything deeper is not a request of ours


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class HttpApi:
    def __init__(self, chat: ChatApp, token: str | None,
                 count_factchecks: Callable[[], Awaitable[int]] | None = None):
        self.queue = chat.queue
        self.checks = chat.service  # runs, stores and counts (metrics) each check
        # An API check cut short by a crash is finished by a worker; the client's retry finds it.
        chat.register("api", responders=SilentResponderFactory())
        self.db = chat.db
        self.token = token
        self._count = count_factchecks

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self.healthz)
        if self.token:
            app.router.add_post("/v1/checks", self.create_check)
            app.router.add_get("/v1/checks/{check_id}", self.get_check)

    def _authorised(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        # Constant-time comparison: the token is the only thing between the internet and the engine.
        return (bool(self.token) and scheme.lower() == "bearer" and bool(given)
                and hmac.compare_digest(given.encode(), (self.token or "").encode()))

    async def healthz(self, request: web.Request) -> web.Response:
        body: dict = {"status": "ok"}
        if self._count is not None:
            try:
                body["factchecks"] = await self._count()
            except Exception:  # a health check reports, it does not crash
                log.exception("healthz: knowledge base unavailable")
                return web.json_response({"status": "degraded", "error": "knowledge base unavailable"}, status=503)
        return web.json_response(body)

    async def create_check(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _error(401, "missing or wrong bearer token")
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _error(413, f"the request body is over {MAX_BODY_BYTES // 1024} KB")
        raw = await request.content.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            return _error(413, f"the request body is over {MAX_BODY_BYTES // 1024} KB")
        try:
            payload = loads_bounded(raw.decode("utf-8"), limit=BODY_JSON_DEPTH)
        except JSONTooDeep as exc:
            return _error(400, f"{exc}; the body must be JSON like {{\"text\": \"the message to check\"}}")
        except (UnicodeDecodeError, json.JSONDecodeError):
            return _error(400, 'the body must be JSON like {"text": "the message to check"}')
        text = payload.get("text") if isinstance(payload, dict) else None
        if not isinstance(text, str):
            return _error(400, 'the body must be JSON like {"text": "the message to check"}')
        key = request.headers.get("Idempotency-Key")
        if key is not None and self.queue is not None:
            return await self._idempotent_check(key, text)
        try:
            result = await self._check(text)
        except EmptyInput as exc:
            return _error(400, str(exc))
        return web.Response(status=201, text=result.model_dump_json(), content_type="application/json",
                            headers={"Location": f"/v1/checks/{result.id}"})

    async def _check(self, text: str) -> Result:
        return await self.checks.check(text)

    async def _idempotent_check(self, key: str, text: str) -> web.Response:
        from bot.queue import request_to_payload
        from bot.chat import CheckRequest

        assert self.queue is not None
        if not key or len(key) > 200:
            return _error(400, "the Idempotency-Key must be 1-200 characters")
        store = self.queue.store
        req = CheckRequest(text=text, chat_id="api", target_id=key)
        job, created = await store.enqueue(f"api:{key}", "api", "api", None, request_to_payload(req, {}),
                                           status="running")
        if not created:
            if job.payload.get("request", {}).get("text") != text:
                return _error(422, "this Idempotency-Key was used for a different text")
            if job.status == "done" and job.check_id:
                result = await self.db.get_check(job.check_id)
                if result is not None:
                    return web.Response(text=result.model_dump_json(), content_type="application/json",
                                        headers={"Location": f"/v1/checks/{result.id}",
                                                 "Idempotent-Replayed": "true"})
            if job.status in ("pending", "running", "held"):
                return _error(409, "a check with this Idempotency-Key is still running; try again shortly")
            return _error(422, "the check with this Idempotency-Key could not be made; use a new key")
        try:
            result = await self._check(text)
        except EmptyInput as exc:
            await store.mark_failed(job.id, str(exc))
            return _error(400, str(exc))
        except Exception as exc:
            await store.mark_failed(job.id, repr(exc))
            raise
        await store.mark_done(job.id, result.id)
        return web.Response(status=201, text=result.model_dump_json(), content_type="application/json",
                            headers={"Location": f"/v1/checks/{result.id}"})

    async def get_check(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _error(401, "missing or wrong bearer token")
        result = await self.db.get_check(request.match_info["check_id"])
        if result is None:
            return _error(404, "no check with that id")
        return web.Response(text=result.model_dump_json(), content_type="application/json")
