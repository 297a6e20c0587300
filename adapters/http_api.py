"""The REST API: the same checks as the bots, as JSON, for scripts, newsroom tools and browser extensions.

    POST /v1/checks        {"text": "..."}                       (Authorization: Bearer <token>)
        -> 201 Result JSON, Location /v1/checks/{id}    the check finished within TIPLINE_API_WAIT_S
        -> 202 {"status", "job"}, Location /v1/jobs/{n}  still waiting or running: poll that
        -> 400 nothing to check / bad body · 429 rate limited · 503 queue full (both with Retry-After)
    GET  /v1/jobs/{n}      -> 200 Result JSON when done · 202 {"status"} while queued · 422 if it failed
    GET  /v1/checks/{id}   -> 200 Result JSON | 404
    POST with `Idempotency-Key: <key>`: the same key answers with the same check (200, header
    `Idempotent-Replayed: true`) instead of running it again, across restarts too; 422 if the key is
    reused for a different text. A 429/503 is not remembered: retry with the same key.
    GET  /healthz          -> 200 {"status": "ok", "factchecks": N}
    GET  /openapi.json     -> this API as OpenAPI 3.1 (adapters/openapi.py; docs/openapi.json)
    Every error, aiohttp's own 404/405/413 included, is JSON: {"error": "<one sentence>"} (adapters/http_errors.py).
    POST /v1/forget        {"user": "telegram:4242"} -> 200 {"checks", "votes", "jobs", "messages"} deleted:
                           what `/forget me` does, for `tipline forget --user` while the bot holds the data dir

Every check goes through the durable job queue (bot/queue.py), like a chat message: the same workers
(`TIPLINE_WORKERS`), queue cap and rate limits. Before, a request with an Idempotency-Key ran its
check inside the HTTP handler: 300 concurrent POSTs all ran at once, every client waited ~14.5 s and
/healthz stalled up to 5.8 s (docs/reliability.md).

Routes are added to the one aiohttp application that also carries /slack/events.
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.chat_app import ChatApp
from bot.requests import CheckRequest
from bot.queue import JobQueue, SilentResponderFactory
from core.intake.message import EmptyInput, intake
from schema.json_limits import JSONTooDeep, loads_bounded
from schema.models import Result
from storage.jobs import Job

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
BODY_JSON_DEPTH = 8  # the body is {"text": …}; anything deeper is not a request of ours
WAIT_S = 10.0  # the default of TIPLINE_API_WAIT_S (bot/settings.py says why)
RETRY_AFTER_S = 30


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


def _created(result: Result, *, status: int = 201, replayed: bool = False) -> web.Response:
    headers = {"Location": f"/v1/checks/{result.id}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return web.Response(status=status, text=result.model_dump_json(), content_type="application/json",
                        headers=headers)


class HttpApi:
    def __init__(self, chat: ChatApp, token: str | None,
                 count_factchecks: Callable[[], Awaitable[int]] | None = None, *, wait_s: float = WAIT_S):
        self.queue = chat.queue
        self.privacy = chat.privacy
        self.wait_s = wait_s
        # An API check cut short by a crash is finished by a worker; the client's retry finds it.
        chat.register("api", responders=SilentResponderFactory())
        self.db = chat.db
        self.token = token
        self._count = count_factchecks

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/openapi.json", self.openapi)
        if self.token:
            app.router.add_post("/v1/checks", self.create_check)
            app.router.add_get("/v1/checks/{check_id}", self.get_check)
            app.router.add_get("/v1/jobs/{job_id}", self.get_job)
            app.router.add_post("/v1/forget", self.forget)

    def _authorised(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        # Constant-time comparison: the token is the only thing between the internet and the engine.
        return (bool(self.token) and scheme.lower() == "bearer" and bool(given)
                and hmac.compare_digest(given.encode(), (self.token or "").encode()))

    async def openapi(self, request: web.Request) -> web.Response:
        from adapters.openapi import openapi_text

        return web.Response(text=openapi_text(), content_type="application/json")

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
        try:
            intake(text)  # nothing to check is said now, before the request takes a place in line
        except EmptyInput as exc:
            return _error(400, str(exc))
        key = request.headers.get("Idempotency-Key")
        if key is not None and not 0 < len(key) <= 200:
            return _error(400, "the Idempotency-Key must be 1-200 characters")
        return await self._queued_check(self.queue, key, text)

    async def _queued_check(self, queue: JobQueue, key: str | None, text: str) -> web.Response:
        replayed = key is not None
        key = key or uuid.uuid4().hex
        req = CheckRequest(text=text, chat_id="api", target_id=key)
        admission = await queue.submit(f"api:{key}", "api", req, {})
        job = admission.job
        if admission.outcome in ("limited", "full"):
            await queue.store.forget_refused(job.id)
            if admission.outcome == "limited":
                return _error(429, "too many checks from this API in a short time; retry later",
                              headers={"Retry-After": str(RETRY_AFTER_S)})
            return _error(503, "too many checks are waiting; retry later", headers={"Retry-After": str(RETRY_AFTER_S)})
        if admission.outcome == "duplicate":
            if job.payload.get("request", {}).get("text") != req.text:
                return _error(422, "this Idempotency-Key was used for a different text")
        else:
            replayed = False
        finished = await queue.wait_finished(job.id, self.wait_s)
        if finished is None:
            return web.json_response({"status": "queued", "job": job.id}, status=202,
                                     headers={"Location": f"/v1/jobs/{job.id}", "Retry-After": "2"})
        return await self._finished_response(finished, replayed=replayed)

    async def _finished_response(self, job: Job, *, replayed: bool = False, created: bool = True) -> web.Response:
        """`created`: this request made the check (201); a replay or a poll of /v1/jobs/{n} reads it (200)."""
        if job.status == "done" and job.check_id:
            result = await self.db.get_check(job.check_id)
            if result is not None:
                return _created(result, status=201 if created and not replayed else 200, replayed=replayed)
        if job.status == "refused":
            return _error(503, "this check was refused while the queue was full; send it again",
                          headers={"Retry-After": str(RETRY_AFTER_S)})
        return _error(422, "the check could not be made; send it again with a new Idempotency-Key")

    async def get_job(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _error(401, "missing or wrong bearer token")
        try:
            job_id = int(request.match_info["job_id"])
        except ValueError:
            return _error(404, "no job with that id")
        job = await self.queue.store.get_id(job_id)
        if job is None or job.platform != "api":
            return _error(404, "no job with that id")
        if job.status in ("held", "pending", "running"):
            return web.json_response({"status": "running" if job.status == "running" else "queued", "job": job.id},
                                     status=202, headers={"Retry-After": "2"})
        return await self._finished_response(job, created=False)

    async def forget(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _error(401, "missing or wrong bearer token")
        try:
            payload = loads_bounded((await request.content.read(MAX_BODY_BYTES)).decode("utf-8"),
                                    limit=BODY_JSON_DEPTH)
        except (JSONTooDeep, UnicodeDecodeError, json.JSONDecodeError):
            payload = None
        user = payload.get("user") if isinstance(payload, dict) else None
        platform, sep, uid = user.partition(":") if isinstance(user, str) else ("", "", "")
        if not sep or not platform.strip() or not uid.strip():
            return _error(400, 'the body must be JSON like {"user": "telegram:4242"}')
        done = await self.privacy.forget(platform.strip().lower(), uid.strip())
        return web.json_response({"checks": done.checks, "votes": done.votes, "jobs": done.jobs,
                                  "messages": len(done.messages)})

    async def get_check(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return _error(401, "missing or wrong bearer token")
        result = await self.db.get_check(request.match_info["check_id"])
        if result is None:
            return _error(404, "no check with that id")
        return web.Response(text=result.model_dump_json(), content_type="application/json")
