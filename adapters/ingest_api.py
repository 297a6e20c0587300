"""Fact-checks added while the bot runs: `POST /v1/factchecks` on the one HTTP server of `tipline run`.

    POST /v1/factchecks?name=checks.csv[&map=claim=statement&map=url=link]
        Authorization: Bearer <TIPLINE_API_TOKEN>
        body: the file itself, as `tipline ingest` reads it (ClaimReview JSON/JSON-LD, Fact Check Tools
              API JSON, CSV/TSV/JSONL, RSS/Atom); `name` gives its format by extension (sniffed otherwise)
        -> 201 {"source", "added", "updated", "skipped", "reasons", "errors" (first 50), "unrated",
                "warnings" (first 50: rows stored unrated, "line 7: unknown rating 'Banana', stored as
                unrated"), "summary", "factchecks": total now}
        -> 400 {"error": "<one sentence>"}: nothing ingested (bad format, no usable rows, bad map)
        -> 401 · 413 past the 200 MB limit of `tipline ingest`

`tipline ingest --server URL` sends files here; a running bot holds the data dir (the embedded vector
store allows one process), so this is how files get in without stopping it. The whole file is read,
parsed (off the event loop) and added before the answer: a large file takes as long as `tipline ingest`.
"""

from __future__ import annotations

import hmac
import logging
from pathlib import PurePath

from aiohttp import web

from bot.ingest_files import ingest_bytes
from core.ingest import MAX_BYTES
from core.matching.knowledge_base import KnowledgeBase

log = logging.getLogger(__name__)

CHUNK = 1 << 20


def bearer_ok(request: web.Request, token: str | None) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Constant-time comparison, as for /v1/checks: the token guards the knowledge base.
    return bool(token) and scheme.lower() == "bearer" and bool(given) and \
        hmac.compare_digest(given.encode(), (token or "").encode())


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def parse_mapping(items: list[str]) -> dict[str, str]:
    """`FIELD=COLUMN` items (the CLI's --map) as a mapping; ValueError names the bad one."""
    mapping = {}
    for item in items:
        field, sep, column = item.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise ValueError(f"map takes FIELD=COLUMN, not {item!r}")
        mapping[field.strip()] = column.strip()
    return mapping


class IngestApi:
    def __init__(self, kb: KnowledgeBase, token: str | None, *, max_bytes: int = MAX_BYTES):
        self.kb = kb
        self.token = token
        self.max_bytes = max_bytes

    def add_routes(self, app: web.Application) -> None:
        if self.token:
            app.router.add_post("/v1/factchecks", self.ingest)

    async def ingest(self, request: web.Request) -> web.Response:
        if not bearer_ok(request, self.token):
            return _error(401, "missing or wrong bearer token")
        limit = f"the file is over the {self.max_bytes // 2**20} MB limit; split it"
        if request.content_length is not None and request.content_length > self.max_bytes:
            return _error(413, limit)
        try:
            mapping = parse_mapping(request.query.getall("map", []))
        except ValueError as exc:
            return _error(400, str(exc))
        # Only the file name's last part: it picks the format and names the source in the report.
        name = PurePath(request.query.get("name", "") or "upload").name[:200] or "upload"
        chunks: list[bytes] = []
        size = 0
        while chunk := await request.content.read(CHUNK):  # streamed: past the limit it stops reading
            size += len(chunk)
            if size > self.max_bytes:
                return _error(413, limit)
            chunks.append(chunk)
        if not size:
            return _error(400, "the body is empty: send the file itself, with ?name=FILE.csv (or .json, .tsv, …)")
        report = await ingest_bytes(self.kb, f"api:{name}", name, b"".join(chunks), mapping or None)
        if report.failed:
            return _error(400, f"nothing ingested from {name}: {report.failed}")
        log.info("ingest api: %s: %s", name, report.summary())
        return web.json_response({**report.to_json(), "factchecks": await self.kb.count()}, status=201)
