"""The REST API through the durable job queue: the same workers, caps and rate limits as the chat bots,
201 when the check finishes within the wait, 202 + /v1/jobs/{n} after it, 429/503 with Retry-After."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web

from adapters.http_api import HttpApi
from bot.chat_app import ChatApp
from bot.limits import RateLimiter
from tests.fakes.loopback import serve_on_loopback
from tests.test_durable_queue import jobs_db, make_queue, q_app  # noqa: F401  (fixtures)

AUTH = {"Authorization": "Bearer tok"}
CLAIM = "Garlic prevents infection with the new coronavirus"


async def serve(queue, q_app, **kw: Any):  # noqa: F811
    web_app = web.Application()
    HttpApi(ChatApp(q_app.engine, queue=queue), "tok", **kw).add_routes(web_app)
    return await serve_on_loopback(web_app)


async def test_a_burst_is_queued_capped_and_every_accepted_check_is_answered(q_app, jobs_db):  # noqa: F811
    queue = make_queue(q_app, jobs_db, workers=1, queue_max=1, hard_cap=2)
    await queue.start()
    runner, port = await serve(queue, q_app, wait_s=0.5)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as s:
            async def post(i: int) -> tuple[int, dict[str, Any], Any]:
                async with s.post(f"{base}/v1/checks", json={"text": f"{CLAIM} (report {i})"}, headers=AUTH) as r:
                    return r.status, await r.json(), r.headers

            async def healthz() -> int:
                async with s.get(f"{base}/healthz") as r:
                    return r.status

            answers = await asyncio.gather(*(post(i) for i in range(40)), healthz())
            health, answers = answers[-1], answers[:-1]
            assert health == 200  # the health check answers during the burst
            statuses = [a[0] for a in answers]
            assert set(statuses) <= {201, 202, 503}, statuses
            full = [a for a in answers if a[0] == 503]
            assert full and all(int(h["Retry-After"]) > 0 for _, _, h in full)
            accepted = [a for a in answers if a[0] in (201, 202)]
            assert len(accepted) >= 2
            for status, body, headers in accepted:  # every accepted request gets its check
                if status == 201:
                    assert body["verdict"] and headers["Location"] == f"/v1/checks/{body['id']}"
                    continue
                location = headers["Location"]
                assert location.startswith("/v1/jobs/")
                for _ in range(600):
                    async with s.get(f"{base}{location}", headers=AUTH) as r:
                        if r.status == 200:
                            assert (await r.json())["verdict"]
                            break
                        assert r.status == 202 and r.headers["Retry-After"]
                    await asyncio.sleep(0.1)
                else:
                    raise AssertionError(f"{location} never finished")
    finally:
        await runner.cleanup()
        await queue.stop()


async def test_a_refused_request_can_be_retried_with_the_same_key(q_app, jobs_db):  # noqa: F811
    queue = make_queue(q_app, jobs_db, workers=1, limiter=RateLimiter(0, 1))  # one API check a minute
    await queue.start()
    runner, port = await serve(queue, q_app)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as s:
            async def post(key: str) -> tuple[int, Any]:
                async with s.post(f"{base}/v1/checks", json={"text": CLAIM},
                                  headers={**AUTH, "Idempotency-Key": key}) as r:
                    return r.status, r.headers
            first, _ = await post("a")
            second, headers = await post("b")
            assert (first, second) == (201, 429) and int(headers["Retry-After"]) > 0
            queue.limiter = None  # the minute has passed, as far as this test is concerned
            again, _ = await post("b")
            assert again == 201  # the refusal was not remembered against the key
    finally:
        await runner.cleanup()
        await queue.stop()


async def test_nothing_to_check_is_refused_before_it_takes_a_place_in_line(q_app, jobs_db):  # noqa: F811
    queue = make_queue(q_app, jobs_db, workers=1)
    runner, port = await serve(queue, q_app)  # no worker started: only intake can answer
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"http://127.0.0.1:{port}/v1/checks", json={"text": " 🙂 "}, headers=AUTH) as r:
                assert r.status == 400 and "no text to check" in (await r.json())["error"]
        assert await queue.store.counts() == {}
    finally:
        await runner.cleanup()
