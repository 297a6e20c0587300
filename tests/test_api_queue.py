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
    HttpApi(ChatApp(queue), "tok", **kw).add_routes(web_app)
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


def _hostile_bodies(seed: int = 11, n: int = 120) -> list[tuple[bytes, str, dict[str, str]]]:
    """Bodies a broken or hostile client sends: random bytes, JSON of every shape, the wrong fields and
    types, lone surrogates, deep nesting, headers that lie."""
    import json
    import random

    rng = random.Random(seed)

    def value(depth: int = 0) -> Any:
        kind = rng.randrange(9 if depth < 4 else 5)
        if kind == 0:
            return None
        if kind == 1:
            return rng.choice([True, False, 0, -1, 2**70, 1e308, -0.0])
        if kind == 2:
            return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x400, 0x4ff), 0xd800, 0xfffe,
                                           0x202e, 0, rng.randrange(0x1f300, 0x1f6ff)])) for _ in range(rng.randrange(40)))
        if kind == 3:
            return "\u00a0 \t\n" * rng.randrange(3)
        if kind == 4:
            return CLAIM
        if kind in (5, 6):
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(["text", "Text", "claim", "", "text\u0000"]): value(depth + 1) for _ in range(rng.randrange(4))}

    out: list[tuple[bytes, str, dict[str, str]]] = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
        elif kind == 1:
            body = json.dumps(value(), ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
        elif kind == 2:
            body = json.dumps({"text": value()}).encode("utf-8", "surrogatepass")
        elif kind == 3:
            depth = rng.choice([9, 100, 10_000])
            body = ("[" * depth + "]" * depth).encode() if rng.random() < 0.5 else \
                ('{"text":' * depth + '"x"' + "}" * depth).encode()
        elif kind == 4:
            body = json.dumps({"text": CLAIM})[: rng.randrange(1, 20)].encode()  # cut off
        else:
            body = b'{"text": "' + b"\xff\xfe" * rng.randrange(1, 50) + b'"}'
        ctype = rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded", ""])
        headers = {"Idempotency-Key": "".join(rng.choice("ab\u00e9 \t") for _ in range(rng.randrange(8)))} \
            if rng.random() < 0.2 else {}
        out.append((body, ctype, headers))
    return out


async def test_hostile_bodies_get_an_answer_never_a_server_error(q_app, jobs_db):  # noqa: F811
    """Fuzzing the REST body: every request is answered with a status a client can act on and
    one JSON sentence; none is a 500, none hangs."""
    queue = make_queue(q_app, jobs_db, workers=1)
    await queue.start()
    runner, port = await serve(queue, q_app, wait_s=0.0)
    base = f"http://127.0.0.1:{port}"
    statuses: dict[int, int] = {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as s:
            for body, ctype, headers in _hostile_bodies():
                hdrs = {**AUTH, **headers} | ({"Content-Type": ctype} if ctype else {})
                try:
                    async with s.post(f"{base}/v1/checks", data=body, headers=hdrs) as r:
                        payload = await r.json(content_type=None)
                        statuses[r.status] = statuses.get(r.status, 0) + 1
                except ValueError as exc:  # aiohttp refuses to send a header it cannot encode: not a request
                    assert "header" in str(exc).lower() or "latin" in str(exc).lower(), exc
                    continue
                assert r.status in (200, 201, 202, 400, 413, 415, 422, 429, 503), (r.status, body[:80], payload)
                if r.status >= 400:
                    assert isinstance(payload, dict) and payload.get("error"), payload
                    assert "\n" not in payload["error"] and "Traceback" not in payload["error"]
            async with s.get(f"{base}/healthz") as r:
                assert r.status == 200  # still serving
    finally:
        await runner.cleanup()
        await queue.stop()
    assert statuses.get(400, 0) >= 30 and sum(statuses.values()) >= 100, statuses
