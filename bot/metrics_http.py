"""GET /metrics on the shared aiohttp server (`tipline run`): the exposition text of one `Metrics`.

Apart from bot/metrics.py so that recording metrics does not import aiohttp's server: a one-shot
`tipline check` builds the app without any HTTP, and aiohttp costs ~0.22 s of CPU to import.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from bot.metrics import Metrics

METRICS_KEY: web.AppKey[Metrics] = web.AppKey("tipline_metrics", Metrics)


async def metrics_handler(request: web.Request) -> web.Response:
    metrics = request.app[METRICS_KEY]
    # CONTENT_TYPE_LATEST carries a charset; aiohttp's content_type= argument refuses that, so set the header.
    return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})


def add_metrics_routes(app: web.Application, metrics: Metrics | None = None) -> Metrics:
    """Serve GET /metrics from `metrics` (a new `Metrics` if none is given); returns the one in use."""
    metrics = metrics or Metrics()
    app[METRICS_KEY] = metrics
    app.router.add_get("/metrics", metrics_handler)
    return metrics
