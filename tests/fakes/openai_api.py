"""A fake OpenAI-compatible chat completions API: a real aiohttp server on 127.0.0.1, port 0.

Point the openai client at it with `AsyncOpenAI(base_url=fake.base_url, api_key="test")`.
`POST /v1/chat/completions` answers in the real wire format (id, object, created, model, choices with
message{role, content, refusal}, finish_reason, usage). Each test scripts the answers in order:

    fake.reply_json({"kind": "FACTUAL", ...})   # a valid content
    fake.reply_raw("{not json")                 # malformed content
    fake.reply_status(500)                      # HTTP error with an OpenAI-style error body
    fake.reply_slow(5.0, {...})                 # answer only after a delay (to hit the client timeout)
    fake.reply_refusal("I can't help")          # message.refusal set, content null
    fake.reply_no_choices()                     # choices: []

With nothing scripted it answers 500 "fake: nothing scripted", so a missing script fails loudly.
Like a real server it honours `max_tokens`: content longer than that many tokens (counted as one token
per 4 characters, the usual rule of thumb) is cut there with `finish_reason: "length"`.
Every request body is recorded in `requests` (with its Authorization header in `auth`).

A pipeline makes several different calls; scripts can be keyed by the structured-output name
(`response_format.json_schema.name`) so their order does not matter:

    fake.named("stance").reply_json({...})      # same reply_* methods, queued for that name only
    fake.respond("stance", lambda body: {...})  # answer every "stance" call from its request body

A request is answered from its name's queue first, then its responder, then the shared in-order script.
`user_text(body)` gives the user message of a recorded request; `requests_named(name)` filters them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from tests.fakes.loopback import serve_on_loopback


@dataclass
class Scripted:
    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    refusal: str | None = None
    no_choices: bool = False
    prompt_tokens: int = 11
    completion_tokens: int = 7


@dataclass
class FakeOpenAI:
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    script: list[Scripted] = field(default_factory=list)
    by_name: dict[str, list[Scripted]] = field(default_factory=dict)
    responders: dict[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._seq = itertools.count(1)
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self._runner, self.port = await serve_on_loopback(app, shutdown_timeout=1.0)
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting -------------------------------------------------------------------------

    models: tuple[str, ...] = ("gpt-4o-mini", "gpt-4o")  # what GET /v1/models lists
    api_key: str | None = None  # set: GET /v1/models wants it as the bearer token, like OpenAI

    async def _models(self, request: web.Request) -> web.Response:
        """OpenAI's model list: {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}."""
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(401, "Incorrect API key provided.", "invalid_api_key")
        return web.json_response({"object": "list", "data": [
            {"id": m, "object": "model", "created": 1715367049, "owned_by": "system"} for m in self.models]})

    def reply_json(self, content: Any, **kw: Any) -> None:
        self.script.append(Scripted(content=json.dumps(content), **kw))

    def reply_raw(self, content: str | None, **kw: Any) -> None:
        self.script.append(Scripted(content=content, **kw))

    def reply_status(self, status: int) -> None:
        self.script.append(Scripted(status=status))

    def reply_slow(self, delay_s: float, content: Any) -> None:
        self.script.append(Scripted(content=json.dumps(content), delay_s=delay_s))

    def reply_refusal(self, text: str) -> None:
        self.script.append(Scripted(refusal=text))

    def reply_no_choices(self) -> None:
        self.script.append(Scripted(no_choices=True))

    def named(self, name: str) -> _NamedScript:
        """The reply_* methods, queued for requests whose json_schema name is `name`."""
        return _NamedScript(self.by_name.setdefault(name, []))

    def respond(self, name: str, fn: Callable[[dict[str, Any]], Any]) -> None:
        """Answer every `name` request with `json.dumps(fn(body))` (a `Scripted` return is used as is)."""
        self.responders[name] = fn

    def requests_named(self, name: str) -> list[dict[str, Any]]:
        return [b for b in self.requests if schema_name(b) == name]

    def _next(self, body: dict[str, Any]) -> Scripted | None:
        name = schema_name(body)
        queue = self.by_name.get(name or "")
        if queue:
            return queue.pop(0)
        if name in self.responders:
            out = self.responders[name](body)
            return out if isinstance(out, Scripted) else Scripted(content=json.dumps(out))
        if self.script:
            return self.script.pop(0)
        return None

    # --- handler ---------------------------------------------------------------------------

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("Authorization"))
        s = self._next(body)
        if s is None:
            return self._error(500, "fake: nothing scripted for this request", "server_error")
        if s.delay_s:
            try:
                await asyncio.wait_for(self._stopping.wait(), s.delay_s)
            except asyncio.TimeoutError:
                pass
        if s.status != 200:
            kind = "rate_limit_exceeded" if s.status == 429 else "server_error"
            return self._error(s.status, f"fake HTTP {s.status}", kind)
        content, finish, completion_tokens = s.content, "stop", s.completion_tokens
        limit = body.get("max_tokens")
        if content is not None and isinstance(limit, int) and len(content) > 4 * limit:
            content, finish, completion_tokens = content[:4 * limit], "length", limit
        choices = [] if s.no_choices else [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": s.refusal},
            "logprobs": None,
            "finish_reason": finish,
        }]
        return web.json_response({
            "id": f"chatcmpl-fake{next(self._seq)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": choices,
            "usage": {"prompt_tokens": s.prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": s.prompt_tokens + completion_tokens},
        })

    @staticmethod
    def _error(status: int, message: str, code: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": code, "param": None, "code": code}},
                                 status=status)


def schema_name(body: dict[str, Any]) -> str | None:
    rf = body.get("response_format") or {}
    return (rf.get("json_schema") or {}).get("name")


def user_text(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


@dataclass
class _NamedScript:
    queue: list[Scripted]

    def reply_json(self, content: Any, **kw: Any) -> None:
        self.queue.append(Scripted(content=json.dumps(content), **kw))

    def reply_raw(self, content: str | None, **kw: Any) -> None:
        self.queue.append(Scripted(content=content, **kw))

    def reply_status(self, status: int) -> None:
        self.queue.append(Scripted(status=status))

    def reply_slow(self, delay_s: float, content: Any) -> None:
        self.queue.append(Scripted(content=json.dumps(content), delay_s=delay_s))

    def reply_refusal(self, text: str) -> None:
        self.queue.append(Scripted(refusal=text))
