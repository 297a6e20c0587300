"""The REST API and /healthz through `tipline run`'s HTTP server, with real HTTP requests."""

import asyncio
import json
import socket
import time

import aiohttp
import pytest

from adapters.run import NoAdapterConfigured, run
from tests.conftest import isolated_settings

TOKEN = "s3cret-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
async def server(tmp_path_factory, model_dir, seeded):
    """One `tipline run` for the module: its tests only read, or add checks of their own (each start of
    run() builds an app: ~1 s of CPU on a seeded data dir, and this module has 10 tests)."""
    port = _free_port()
    configured = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("http-api") / "data"), model_dir,
                                   api_token=TOKEN, http_port=port)
    stop = asyncio.Event()
    task = asyncio.create_task(run(configured, stop))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # a loaded machine: run() answers once the models are loaded
    async with aiohttp.ClientSession() as http:
        while True:
            if task.done():
                task.result()
            try:
                async with http.get(f"{base}/healthz") as r:
                    if r.status == 200:
                        break
            except aiohttp.ClientConnectionError:
                pass
            assert time.monotonic() < deadline, "tipline run did not answer /healthz in 300 s"
            await asyncio.sleep(0.1)
        yield base, http
    stop.set()
    await asyncio.wait_for(task, 30)


async def test_healthz_reports_the_knowledge_base(server):
    base, http = server
    async with http.get(f"{base}/healthz") as r:
        body = await r.json()
    assert r.status == 200 and body["status"] == "ok" and body["factchecks"] >= 60


async def test_create_and_fetch_a_check(server):
    base, http = server
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with http.post(f"{base}/v1/checks", json={"text": "Vaccines cause autism"}, headers=auth) as r:
        assert r.status == 201
        created = await r.json()
        location = r.headers["Location"]
    assert created["verdict"] == "REFUTED" and created["mode"] == "offline"
    async with http.get(f"{base}{location}", headers=auth) as r:
        assert r.status == 200
        assert (await r.json())["id"] == created["id"]
    async with http.get(f"{base}/v1/checks/nope", headers=auth) as r:
        assert r.status == 404


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}])
async def test_requests_without_the_token_are_refused(server, headers):
    base, http = server
    async with http.post(f"{base}/v1/checks", json={"text": "x y z"}, headers=headers) as r:
        assert r.status == 401
        assert "token" in (await r.json())["error"]


@pytest.mark.parametrize("body,status,phrase", [
    (b"not json", 400, "must be JSON"),
    (json.dumps({"text": 5}).encode(), 400, "must be JSON"),
    (json.dumps({"text": "   "}).encode(), 400, "no text to check"),
    (json.dumps({"text": "a" * 70_000}).encode(), 413, "over 64 KB"),
])
async def test_bad_bodies_get_a_clear_answer(server, body, status, phrase):
    base, http = server
    async with http.post(f"{base}/v1/checks", data=body, headers={"Authorization": f"Bearer {TOKEN}",
                                                                 "Content-Type": "application/json"}) as r:
        assert r.status == status
        assert phrase in (await r.json())["error"]


async def test_nothing_configured_is_a_clear_error(settings):
    with pytest.raises(NoAdapterConfigured, match="TIPLINE_API_TOKEN"):
        await run(settings, asyncio.Event())


# --- the API people integrate: OpenAPI, JSON errors on every status ------------------------------------

async def test_openapi_is_served_and_names_every_route(server):
    base, http = server
    async with http.get(f"{base}/openapi.json") as r:
        assert r.status == 200 and r.content_type == "application/json"
        doc = await r.json()
    assert doc["openapi"].startswith("3.1")
    for path in ("/v1/checks", "/v1/checks/{check_id}", "/v1/jobs/{job_id}", "/v1/forget", "/v1/factchecks",
                 "/healthz", "/metrics", "/openapi.json"):
        assert path in doc["paths"], path
    for path, ops in doc["paths"].items():  # every route it names is served (not aiohttp's 404 or 405)
        for method in ops:
            url = base + path.replace("{check_id}", "nope").replace("{job_id}", "999999")
            async with http.request(method.upper(), url, headers={"Authorization": f"Bearer {TOKEN}"}) as r:
                assert r.status not in (405, 500), (method, path, r.status)
                if r.status == 404:
                    assert (await r.json())["error"] != "no such route", (method, path)
    result = doc["components"]["schemas"]["Result"]
    assert "verdict" in result["properties"] and "inherited_from" in result["properties"]


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("GET", "/no/such/route", None, 404),
    ("DELETE", "/v1/checks", None, 405),
    ("POST", "/v1/checks", b"not json", 400),
    ("GET", "/v1/checks/nosuchcheck", None, 404),
    ("GET", "/v1/jobs/999999", None, 404),
    ("POST", "/v1/forget", b"{}", 400),
    ("POST", "/v1/checks", b'{"text": "' + b"x" * (70 * 1024) + b'"}', 413),
])
async def test_every_error_is_one_json_sentence(server, method, path, body, status):
    base, http = server
    async with http.request(method, f"{base}{path}", data=body, headers={"Authorization": f"Bearer {TOKEN}"}) as r:
        assert r.status == status
        assert r.content_type == "application/json"
        payload = await r.json()
    assert isinstance(payload["error"], str) and payload["error"] and "Traceback" not in payload["error"]


async def test_a_wrong_token_is_a_json_401(server):
    base, http = server
    async with http.post(f"{base}/v1/checks", json={"text": "x"}, headers={"Authorization": "Bearer wrong"}) as r:
        assert r.status == 401 and (await r.json())["error"]
