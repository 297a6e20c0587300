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
Like a real server it honours `max_completion_tokens` (else `max_tokens`): content longer than that many
tokens (counted as one token per 4 characters, the usual rule of thumb) is cut there with
`finish_reason: "length"`. Every request body is recorded in `requests` (with its Authorization header in
`auth`), refused ones too.

It plays OpenAI's models by the request's model name, refusing what they refuse with OpenAI's own 400
bodies (`model_refusal`), before any script is used:

- reasoning models (gpt-5*, o1*, o3*, o4*): `max_tokens` ("Unsupported parameter: 'max_tokens' is not
  supported with this model. Use 'max_completion_tokens' instead."), a temperature other than 1, and a
  `reasoning_effort` the model does not take (gpt-5/-mini/-nano: minimal..high; gpt-5.1 and later:
  none..xhigh; o-series: low..high). Their hidden reasoning (`reasoning_tokens`, by effort; medium when none
  is sent, none for gpt-5.1+) is spent from the limit before the answer, and reported in
  `usage.completion_tokens_details.reasoning_tokens`;
- other OpenAI names (gpt-4o*, gpt-4.1*, ...): `reasoning_effort`;
- models without structured outputs (gpt-3.5-turbo, gpt-4, gpt-4-turbo, o1-mini, o1-preview):
  `response_format` of type json_schema (gpt-4 and the o1 previews: json_object too).

Any other name (fake-model, llama3.1, ...) takes everything, like Ollama and llama.cpp, which ignore what they
do not know. Azure OpenAI's deployment route is served too: `/openai/deployments/{name}/chat/completions`
wants an `api-version` query (404 without) and, with `api_key` set, that key in an `api-key` header (401);
`deployments` maps a deployment to the model it plays.

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
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from tests.fakes.loopback import serve_on_loopback


# Hidden reasoning tokens a reasoning model spends before answering, per reasoning_effort (illustrative).
REASONING_TOKENS = {"none": 0, "minimal": 0, "low": 128, "medium": 512, "high": 2048, "xhigh": 4096}


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
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._azure_completions)
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

    models: tuple[str, ...] = ("gpt-5-mini", "gpt-4.1-mini", "gpt-4o-mini", "gpt-4o")  # what GET /v1/models lists
    api_key: str | None = None  # set: GET /v1/models wants it as the bearer token, like OpenAI
    deployments: dict[str, str] = field(default_factory=dict)  # Azure deployment -> the model it plays
    # Hidden reasoning a reasoning model spends per effort before it answers (illustrative sizes).
    reasoning_tokens: dict[str, int] = field(default_factory=lambda: dict(REASONING_TOKENS))
    urls: list[str] = field(default_factory=list)  # path and query of every chat completion request

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

    async def _azure_completions(self, request: web.Request) -> web.Response:
        """Azure OpenAI's deployment API: the deployment in the path names the model, the body's is ignored."""
        if "api-version" not in request.query:
            return web.json_response({"error": {"code": "404", "message": "Resource not found"}}, status=404)
        if self.api_key is not None and request.headers.get("api-key") != self.api_key:
            return web.json_response({"error": {"code": "401", "message": "Access denied due to invalid "
                                      "subscription key or wrong API endpoint. Make sure to provide a valid key "
                                      "for an active subscription and use a correct regional API endpoint for "
                                      "your resource."}}, status=401)
        deployment = request.match_info["deployment"]
        return await self._completions(request, model=self.deployments.get(deployment, deployment))

    async def _completions(self, request: web.Request, model: str | None = None) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.auth.append(request.headers.get("Authorization"))
        self.urls.append(request.path_qs)
        model = model if model is not None else str(body.get("model", ""))
        refused = model_refusal(model, body)
        if refused is not None:
            return web.json_response({"error": refused}, status=400)
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
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        thinking = self._reasoning(model, body)
        if isinstance(limit, int) and thinking >= limit:  # it reasoned until the limit: no answer at all
            content, finish, completion_tokens, thinking = "", "length", 0, limit
        elif isinstance(limit, int):
            limit -= thinking
            if content is not None and len(content) > 4 * limit:
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
            "usage": {"prompt_tokens": s.prompt_tokens, "completion_tokens": completion_tokens + thinking,
                      "total_tokens": s.prompt_tokens + completion_tokens + thinking,
                      "completion_tokens_details": {"reasoning_tokens": thinking}},
        })

    def _reasoning(self, model: str, body: dict[str, Any]) -> int:
        if not REASONING.match(_bare(model)):
            return 0
        effort = body.get("reasoning_effort") or default_effort(model)
        return self.reasoning_tokens.get(str(effort), 0)

    @staticmethod
    def _error(status: int, message: str, code: str) -> web.Response:
        return web.json_response({"error": {"message": message, "type": code, "param": None, "code": code}},
                                 status=status)


# --- what OpenAI's models refuse -----------------------------------------------------------------

REASONING = re.compile(r"^(gpt-5|o[1-9])")
_GPT5_FIRST = re.compile(r"^gpt-5(-mini|-nano)?(-\d{4}-\d{2}-\d{2})?$")
_OPENAI_NAME = re.compile(r"^(gpt-|chatgpt-|o[1-9])")
_NO_JSON_SCHEMA = re.compile(r"^(gpt-3\.5-turbo|gpt-4-turbo|gpt-4(-0314|-0613)?$|gpt-4o-2024-05-13$|o1-mini|o1-preview)")
_NO_JSON_OBJECT = re.compile(r"^(gpt-4(-0314|-0613)?$|o1-mini|o1-preview)")


def _bare(model: str) -> str:
    return model.rsplit("/", 1)[-1].strip().lower()


def efforts(model: str) -> tuple[str, ...]:
    """The reasoning_effort values a reasoning model takes."""
    name = _bare(model)
    if _GPT5_FIRST.match(name):
        return ("minimal", "low", "medium", "high")
    if name.startswith("gpt-5"):
        return ("none", "low", "medium", "high", "xhigh")
    return ("low", "medium", "high")


def default_effort(model: str) -> str:
    name = _bare(model)
    return "none" if name.startswith("gpt-5") and not _GPT5_FIRST.match(name) else "medium"


def _listed(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _refusal(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"message": message, "type": "invalid_request_error", "param": param, "code": code}


def model_refusal(model: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The `error` object OpenAI answers with (HTTP 400) when `model` refuses something in `body`."""
    name = _bare(model)
    if not _OPENAI_NAME.match(name):
        return None  # a local model's server: it ignores what it does not know
    if REASONING.match(name):
        if "max_tokens" in body:
            return _refusal("Unsupported parameter: 'max_tokens' is not supported with this model. "
                            "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        if "temperature" in body and body["temperature"] is not None and body["temperature"] != 1:
            return _refusal(f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                            "model. Only the default (1) value is supported.", "temperature", "unsupported_value")
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in efforts(name):
            return _refusal(f"Unsupported value: 'reasoning_effort' does not support {effort!r} with this model. "
                            f"Supported values are: {_listed(efforts(name))}.", "reasoning_effort",
                            "unsupported_value")
    elif body.get("reasoning_effort") is not None:
        return _refusal("Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                        "reasoning_effort", "unsupported_parameter")
    kind = (body.get("response_format") or {}).get("type")
    if kind == "json_schema" and _NO_JSON_SCHEMA.match(name):
        return _refusal("Invalid parameter: 'response_format' of type 'json_schema' is not supported with this "
                        "model. Learn more about supported models at the Structured Outputs guide: "
                        "https://platform.openai.com/docs/guides/structured-outputs", None, None)
    if kind == "json_object" and _NO_JSON_OBJECT.match(name):
        return _refusal("Invalid parameter: 'response_format' of type 'json_object' is not supported with this "
                        "model.", "response_format", None)
    return None


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
