"""`tipline ingest --server URL`: the files go to a running `tipline run` (POST /v1/factchecks,
adapters/ingest_api.py) instead of into the data dir, which the running bot holds.

The file is read here (a path, or a URL downloaded here, as `tipline ingest` does), sent whole, and
the server's report printed the same way. Without --server, `tipline ingest` hands off by itself when
the data dir is in use and the bot's REST API answers at TIPLINE_HTTP_HOST:TIPLINE_HTTP_PORT.
"""

from __future__ import annotations

from collections import Counter

import aiohttp

from bot.app import SetupError
from bot.ingest_files import SourceReport, read_source
from bot.settings import Settings
from core.ingest import IngestFormatError

# A 200 MB file is parsed and embedded before the server answers: minutes, not seconds.
TIMEOUT_S = 30 * 60


def local_server(settings: Settings) -> str:
    """Where this machine's `tipline run` listens, by the same settings."""
    host = settings.http_host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{host}:{settings.http_port}"


async def answers(server: str, timeout_s: float = 3.0) -> bool:
    """True when a tipline HTTP server answers /healthz there."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http, \
                http.get(f"{server.rstrip('/')}/healthz") as resp:
            return resp.status in (200, 503) and "status" in (await resp.json(content_type=None))
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return False


class IngestClient:
    def __init__(self, server: str, token: str | None):
        if not token:
            raise SetupError(f"sending files to {server} needs the REST API's token: set TIPLINE_API_TOKEN (the "
                             "running bot's) or pass --token")
        self.server = server.rstrip("/")
        self.token = token

    async def send(self, source: str, mapping: dict[str, str] | None = None) -> tuple[SourceReport, int | None]:
        """The server's report for one file or URL, and the knowledge base's size after it."""
        try:
            name, data = await read_source(source)
        except IngestFormatError as exc:
            return SourceReport(source, failed=str(exc)), None
        params = [("name", name)] + [("map", f"{k}={v}") for k, v in (mapping or {}).items()]
        url = f"{self.server}/v1/factchecks"
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as http, \
                    http.post(url, params=params, data=data,
                              headers={"Authorization": f"Bearer {self.token}",
                                       "Content-Type": "application/octet-stream"}) as resp:
                body = await resp.json(content_type=None)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SetupError(f"cannot reach tipline at {self.server} ({type(exc).__name__}: {exc}); is `tipline "
                             "run` up there, with TIPLINE_API_TOKEN set?") from exc
        except ValueError as exc:
            raise SetupError(f"{url} did not answer with JSON: is {self.server} a tipline server?") from exc
        if status == 401:
            raise SetupError(f"the server at {self.server} refused the token: use the running bot's "
                             "TIPLINE_API_TOKEN")
        if status == 404 or status == 405:
            raise SetupError(f"{self.server} does not take files (HTTP {status}): it needs TIPLINE_API_TOKEN set "
                             "and a tipline version with POST /v1/factchecks")
        if status != 201:
            message = body.get("error") if isinstance(body, dict) else None
            return SourceReport(source, failed=str(message or f"HTTP {status}")), None
        report = SourceReport(source, added=int(body["added"]), updated=int(body["updated"]),
                              skipped=int(body["skipped"]), errors=list(body.get("errors") or []),
                              reasons=Counter(body.get("reasons") or {}), warnings=list(body.get("warnings") or []))
        return report, body.get("factchecks")


async def forget_remote(server: str, token: str, user: str, timeout_s: float = 300.0) -> dict[str, int]:
    """`tipline forget --user` through a running bot (`POST /v1/forget`): what it deleted."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http, \
                http.post(f"{server.rstrip('/')}/v1/forget", json={"user": user},
                          headers={"Authorization": f"Bearer {token}"}) as resp:
            body = await resp.json(content_type=None)
            if resp.status != 200:
                raise SetupError(f"{server} refused to forget {user}: {resp.status} {body.get('error', '')}")
            return {k: int(body.get(k, 0)) for k in ("checks", "votes", "jobs", "messages")}
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise SetupError(f"could not ask {server} to forget {user}: {exc}") from exc
