"""The REST API's OpenAPI 3.1 document, generated from the models it sends and reads.

Served at GET /openapi.json by `tipline run`, written to docs/openapi.json by `tipline openapi`; a test fails
when the checked-in file and this code disagree. Every error is `{"error": "<one sentence>"}` (adapters/
http_errors.py turns aiohttp's own 404/405/413 into that too).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from schema.models import Result


class CheckBody(BaseModel):
    text: str = Field(description="The message to check, as a user would forward it (links and all).")


class Queued(BaseModel):
    status: str = Field(description='"queued" or "running": poll the Location header\'s /v1/jobs/{job_id}.')
    job: int


class ForgetBody(BaseModel):
    user: str = Field(description='Whose data to delete: "<platform>:<user id>", e.g. "telegram:4242".')


class Forgotten(BaseModel):
    checks: int
    votes: int
    jobs: int
    messages: int


class Health(BaseModel):
    status: str = Field(description='"ok", or "degraded" with a 503 when the knowledge base cannot be read.')
    factchecks: int | None = None
    error: str | None = None


class IngestReport(BaseModel):
    source: str
    added: int
    updated: int
    skipped: int
    unrated: int = 0
    summary: str = ""
    factchecks: int = Field(description="Fact-checks in the knowledge base after this file.")
    reasons: dict[str, int] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list, description="The first 50 rows refused, with why.")
    warnings: list[str] = Field(default_factory=list, description="The first 50 rows stored unrated, with why.")


class Error(BaseModel):
    error: str = Field(description="What went wrong, in one sentence.")


_MODELS: tuple[type[BaseModel], ...] = (Result, CheckBody, Queued, ForgetBody, Forgotten, Health, IngestReport, Error)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel], description: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": _ref(model)}}}
    if headers:
        out["headers"] = {h: {"description": d, "schema": {"type": "string"}} for h, d in headers.items()}
    return out


def _errors(*codes: int) -> dict[str, Any]:
    words = {400: "Bad request: nothing to check, or a body that is not the JSON asked for.",
             401: "Missing or wrong bearer token.", 404: "No such check, job or route.",
             405: "The route exists, not with this method.", 413: "The body is over the limit.",
             422: "The check failed, or the Idempotency-Key was used for another text.",
             429: "Rate limited: retry after Retry-After seconds.",
             500: "An unexpected error (logged with its id; no details in the body).",
             503: "The queue is full or the knowledge base is unavailable: retry after Retry-After seconds."}
    return {str(c): _json(Error, words[c]) for c in codes}


_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]
_CHECK_ID = {"name": "check_id", "in": "path", "required": True, "schema": {"type": "string"}}
_JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}


API_VERSION = "1"  # the /v1/ routes' version, not the package's: the document changes when the API does


def openapi() -> dict[str, Any]:
    """The document."""
    schemas: dict[str, Any] = {}
    for model in _MODELS:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    body = lambda m: {"required": True, "content": {"application/json": {"schema": _ref(m)}}}  # noqa: E731
    return {
        "openapi": "3.1.0",
        "info": {"title": "tipline", "version": API_VERSION,
                 "description": "Fact-check a message: the same checks as the Telegram and Slack bots, as JSON."},
        "components": {"schemas": schemas,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "TIPLINE_API_TOKEN"}}},
        "paths": {
            "/v1/checks": {"post": {
                "summary": "Check a message", "security": _AUTH, "requestBody": body(CheckBody),
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                "schema": {"type": "string", "maxLength": 200},
                                "description": "The same key answers with the same check instead of a new one."}],
                "responses": {"201": _json(Result, "The check, finished.", {"Location": "/v1/checks/{id}"}),
                              "200": _json(Result, "A replayed Idempotency-Key: the check made before.",
                                           {"Idempotent-Replayed": "true"}),
                              "202": _json(Queued, "Still queued or running.", {"Location": "/v1/jobs/{job_id}"}),
                              **_errors(400, 401, 413, 422, 429, 500, 503)}}},
            "/v1/checks/{check_id}": {"get": {
                "summary": "A check made before", "security": _AUTH, "parameters": [_CHECK_ID],
                "responses": {"200": _json(Result, "The check."), **_errors(401, 404, 500)}}},
            "/v1/jobs/{job_id}": {"get": {
                "summary": "A queued check", "security": _AUTH, "parameters": [_JOB_ID],
                "responses": {"200": _json(Result, "Done: the check."), "202": _json(Queued, "Not done yet."),
                              **_errors(401, 404, 422, 500, 503)}}},
            "/v1/forget": {"post": {
                "summary": "Delete one person's checks, votes, jobs and tracked messages", "security": _AUTH,
                "requestBody": body(ForgetBody),
                "responses": {"200": _json(Forgotten, "What was deleted."), **_errors(400, 401, 500)}}},
            "/v1/factchecks": {"post": {
                "summary": "Add fact-checks from a file, as `tipline ingest` reads it", "security": _AUTH,
                "parameters": [{"name": "name", "in": "query", "required": False, "schema": {"type": "string"},
                                "description": "The file's name: its extension gives the format."},
                               {"name": "map", "in": "query", "required": False,
                                "schema": {"type": "array", "items": {"type": "string"}},
                                "description": "field=column, as `tipline ingest --map`."}],
                "requestBody": {"required": True, "content": {"application/octet-stream": {
                    "schema": {"type": "string", "format": "binary"}}}},
                "responses": {"201": _json(IngestReport, "What was added."), **_errors(400, 401, 413, 500)}}},
            "/healthz": {"get": {
                "summary": "Liveness and the knowledge base's size",
                "responses": {"200": _json(Health, "Serving."), "503": _json(Health, "Degraded.")}}},
            "/metrics": {"get": {
                "summary": "Prometheus metrics (docs/deploy.md lists them)",
                "responses": {"200": {"description": "Prometheus text exposition.",
                                      "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}}}},
        },
    }


def openapi_text() -> str:
    return json.dumps(openapi(), indent=2, ensure_ascii=False) + "\n"
