"""One local aiohttp server speaking SearxNG, Brave, GDELT DOC 2.1 and Fact Check Tools wire formats,
plus web pages for link expansion (JSON-LD/OpenGraph pages, redirects, huge, slow, binary, wrong type).

    fake = await FakeSearchAPI().start()
    fake.searx_results.append(searx_result("https://reuters.com/x", "Title", "snippet"))
    fake.fail("brave", status=429, headers={"Retry-After": "3"})
    settings.searxng_url = fake.url("")       # every provider URL points here
    ...
    fake.requests  # [(route, path, query dict, headers dict)]

Search results are filtered like the real engines do for `site:` (SearxNG, Brave) and `domain:` (GDELT)
operators, so staged search (trusted outlets, fact-checkers, broad) behaves realistically.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackFake


@dataclass
class Fault:
    status: int = 200
    body: str | None = None  # raw body instead of the normal JSON
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"
    times: int | None = None  # None: every request


def searx_result(url: str, title: str = "", content: str = "", published: str | None = None,
                 engine: str = "duckduckgo") -> dict:
    parts = url.split("/")
    return {"url": url, "title": title, "content": content, "engine": engine, "engines": [engine],
            "parsed_url": [parts[0].rstrip(":"), parts[2] if len(parts) > 2 else "", "/" + "/".join(parts[3:]),
                           "", "", ""],
            "template": "default.html", "positions": [1], "score": 1.0, "category": "general",
            "publishedDate": published}


def brave_result(url: str, title: str = "", description: str = "", page_age: str | None = None,
                 age: str | None = None) -> dict:
    host = url.split("/")[2] if url.count("/") >= 2 else ""
    item: dict[str, Any] = {"title": title, "url": url, "is_source_local": False, "is_source_both": False,
                            "description": description, "language": "en", "family_friendly": True,
                            "type": "search_result", "profile": {"name": host, "url": url},
                            "meta_url": {"scheme": "https", "netloc": host, "hostname": host, "path": ""}}
    if page_age:
        item["page_age"] = page_age
    if age:
        item["age"] = age
    return item


def gdelt_article(url: str, title: str, seendate: str = "20240101T120000Z", language: str = "English",
                  country: str = "United States") -> dict:
    return {"url": url, "url_mobile": "", "title": title, "seendate": seendate, "socialimage": "",
            "domain": url.split("/")[2].removeprefix("www."), "language": language, "sourcecountry": country}


def factcheck_claim(text: str, url: str, rating: str, publisher: str = "Snopes", site: str = "snopes.com",
                    review_date: str = "2024-01-02T00:00:00Z", title: str = "") -> dict:
    return {"text": text, "claimant": "Social media", "claimDate": "2024-01-01T00:00:00Z",
            "claimReview": [{"publisher": {"name": publisher, "site": site}, "url": url,
                             "title": title or f"Fact check: {text}", "reviewDate": review_date,
                             "textualRating": rating, "languageCode": "en"}]}


_SITE = re.compile(r"\b(?:site|domain):([a-z0-9.-]+)", re.I)


def _host(url: str) -> str:
    host = url.split("/")[2].lower() if url.count("/") >= 2 else ""
    return host.removeprefix("www.")


def _filter_by_sites(items: list[dict], q: str) -> list[dict]:
    sites = [s.lower() for s in _SITE.findall(q)]
    if not sites:
        return items
    return [i for i in items if any(_host(i["url"]) == s or _host(i["url"]).endswith("." + s) for s in sites)]


@dataclass
class FakeSearchAPI(LoopbackFake):
    searx_results: list[dict] = field(default_factory=list)
    brave_web: list[dict] = field(default_factory=list)
    brave_news: list[dict] = field(default_factory=list)
    gdelt_articles: list[dict] = field(default_factory=list)
    factcheck_claims: list[dict] = field(default_factory=list)
    pages: dict[str, tuple[int, str, bytes | str, dict[str, str]]] = field(default_factory=dict)
    faults: dict[str, Fault] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], dict[str, str]]] = field(default_factory=list)
    brave_key: str = "brave-test-key"
    factcheck_key: str = "fc-test-key"
    shutdown_timeout: float = 0.5  # slow-drip and delayed handlers are cut off quickly at teardown

    def __post_init__(self) -> None:
        self._changed = asyncio.Condition()

    # -- scripting -------------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def fail(self, route: str, **kwargs: Any) -> None:
        """Make `route` ("searxng", "brave", "gdelt", "factcheck") answer with a fault."""
        self.faults[route] = Fault(**kwargs)

    def page(self, path: str, body: bytes | str, *, status: int = 200, content_type: str = "text/html; charset=utf-8",
             headers: dict[str, str] | None = None) -> str:
        self.pages[path] = (status, content_type, body, headers or {})
        return self.url(path)

    def hits(self, route: str) -> list[dict[str, str]]:
        return [q for r, _p, q, _h in self.requests if r == route]

    # -- plumbing --------------------------------------------------------------------------------------
    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/searxng/search", self._searxng)
        app.router.add_get("/brave/res/v1/web/search", self._brave)
        app.router.add_get("/gdelt/api/v2/doc/doc", self._gdelt)
        app.router.add_get("/factcheck/v1alpha1/claims:search", self._factcheck)
        app.router.add_get("/redirect", self._redirect)
        app.router.add_get("/huge", self._huge)
        app.router.add_get("/drip", self._drip)
        app.router.add_get("/{tail:.*}", self._page)

    async def _log(self, route: str, request: web.Request) -> web.Response | None:
        self.requests.append((route, request.path, dict(request.query), dict(request.headers)))
        async with self._changed:
            self._changed.notify_all()
        fault = self.faults.get(route)
        if fault is None:
            return None
        if fault.times is not None:
            if fault.times <= 0:
                return None
            fault.times -= 1
        if fault.delay_s:
            await asyncio.sleep(fault.delay_s)
        if fault.status == 200 and fault.body is None:
            return None
        return web.Response(status=fault.status, text=fault.body if fault.body is not None else "error",
                            headers=fault.headers, content_type=fault.content_type)

    async def _searxng(self, request: web.Request) -> web.StreamResponse:
        if (faulted := await self._log("searxng", request)) is not None:
            return faulted
        if request.query.get("format") != "json":
            return web.Response(status=403, text="403 Forbidden")  # SearxNG with json output disabled
        q = request.query.get("q", "")
        return web.json_response({"query": q, "number_of_results": 0, "results": _filter_by_sites(self.searx_results, q),
                                  "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
                                  "unresponsive_engines": []})

    async def _brave(self, request: web.Request) -> web.StreamResponse:
        if (faulted := await self._log("brave", request)) is not None:
            return faulted
        if request.headers.get("X-Subscription-Token") != self.brave_key:
            return web.json_response({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID",
                                      "status": 422, "detail": "The provided subscription token is invalid."}},
                                     status=422)
        q = request.query.get("q", "")
        count = int(request.query.get("count", "20"))
        body: dict[str, Any] = {"type": "search", "query": {"original": q},
                                "web": {"type": "search", "results": _filter_by_sites(self.brave_web, q)[:count]}}
        if self.brave_news:
            body["news"] = {"type": "news", "results": _filter_by_sites(self.brave_news, q)}
        return web.json_response(body)

    async def _gdelt(self, request: web.Request) -> web.StreamResponse:
        if (faulted := await self._log("gdelt", request)) is not None:
            return faulted
        q = request.query.get("query", "")
        if len(q.strip()) < 3:
            # GDELT answers its errors as plain text with HTTP 200.
            return web.Response(text="Your search contained a phrase that was too short.", content_type="text/html")
        arts = _filter_by_sites(self.gdelt_articles, q)[: int(request.query.get("maxrecords", "75"))]
        if not arts:
            return web.json_response({})  # GDELT's "no results" is an empty object
        return web.Response(text=json.dumps({"articles": arts}), content_type="application/json")

    async def _factcheck(self, request: web.Request) -> web.StreamResponse:
        if (faulted := await self._log("factcheck", request)) is not None:
            return faulted
        if request.query.get("key") != self.factcheck_key:
            return web.json_response({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                                "status": "INVALID_ARGUMENT"}}, status=400)
        words = set(re.findall(r"\w+", request.query.get("query", "").lower()))
        claims = [c for c in self.factcheck_claims if words & set(re.findall(r"\w+", c["text"].lower()))]
        size = int(request.query.get("pageSize", "10"))
        return web.json_response({"claims": claims[:size]} if claims else {})

    async def _redirect(self, request: web.Request) -> web.StreamResponse:
        await self._log("page", request)
        raise web.HTTPFound(request.query["to"])

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """50 MB of HTML; `?declared=1` announces it in Content-Length, otherwise chunked."""
        await self._log("page", request)
        total = 50 * 1024 * 1024
        resp = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        if request.query.get("declared"):
            resp.content_length = total
        await resp.prepare(request)
        chunk = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>\n"
        try:
            for _ in range(total // len(chunk)):
                await resp.write(chunk)
        except (ConnectionResetError, RuntimeError):
            pass  # the client hung up at its cap, as it should
        return resp

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        """A page that sends one byte every `?every=` seconds, forever (until the client gives up)."""
        await self._log("page", request)
        every = float(request.query.get("every", "0.2"))
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        await resp.prepare(request)
        try:
            await resp.write(b"<html><body>")
            while True:
                await asyncio.sleep(every)
                await resp.write(b"a")
        except (ConnectionResetError, RuntimeError, asyncio.CancelledError):
            pass
        return resp

    async def _page(self, request: web.Request) -> web.StreamResponse:
        await self._log("page", request)
        found = self.pages.get(request.path)
        if found is None:
            return web.Response(status=404, text="not found")
        status, content_type, body, headers = found
        raw = body.encode("utf-8") if isinstance(body, str) else body
        return web.Response(status=status, body=raw, headers={"Content-Type": content_type, **headers})
