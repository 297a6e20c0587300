"""Every error of the one HTTP server as JSON: `{"error": "<one sentence>"}`.

Our handlers answer so already; aiohttp's own answers (an unknown route's 404, a wrong method's 405, a body
past the limit's 413) are text/plain, and an exception escaping a handler would be a bare 500. A client
of the API reads one shape whatever happened; a 500 carries an id to find in the log, never a traceback.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)

_WORDS = {404: "no such route", 405: "this route does not take that method",
          413: "the request body is over the limit", 400: "the request could not be read"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _body(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    kept = {k: v for k, v in (headers or {}).items() if k in ("Allow", "Retry-After")}
    return web.json_response({"error": message}, status=status, headers=kept)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or exc.content_type == "application/json":
            raise
        return _body(exc.status, _WORDS.get(exc.status, exc.reason.lower()), dict(exc.headers))
    except Exception:
        ref = uuid.uuid4().hex[:8]
        log.exception("http: unexpected error on %s %s (ref %s)", request.method, request.path, ref)
        return _body(500, f"an unexpected error happened; it is logged as {ref}")


def add_json_errors(app: web.Application) -> None:
    """Before the app starts (its middleware list freezes then)."""
    app.middlewares.append(json_errors)
