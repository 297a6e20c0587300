"""Scheduled feed refresh: new fact-checks land in a freshly built collection swapped in behind an alias,
while checks keep searching; a failing feed is reported and the others still land."""

import asyncio

from aiohttp import web

from bot.app import build_app
from bot.feeds import FeedRefresher
from tests.fakes.loopback import serve_on_loopback

FEED_1 = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Example Checks</title><link>https://checks.example</link>
<item><title>FALSE: Drinking hot lemon water every morning kills cancer cells</title>
<link>https://checks.example/lemon-water</link><pubDate>Tue, 03 Mar 2020 10:00:00 GMT</pubDate></item>
</channel></rss>"""

FEED_2 = FEED_1.replace("</channel>", """<item><title>FALSE: A giant squid washed up on a beach in Kansas</title>
<link>https://checks.example/kansas-squid</link><pubDate>Wed, 04 Mar 2020 10:00:00 GMT</pubDate></item>
</channel>""")


class FeedServer:
    def __init__(self) -> None:
        self.body = FEED_1
        self.hits = 0

    async def feed(self, _: web.Request) -> web.Response:
        self.hits += 1
        return web.Response(text=self.body, content_type="application/rss+xml")

    async def broken(self, _: web.Request) -> web.Response:
        return web.Response(status=503, text="down")


async def test_refresh_swaps_in_a_new_collection_and_searches_never_fail(app):
    server = FeedServer()
    web_app = web.Application()
    web_app.add_routes([web.get("/feed.xml", server.feed), web.get("/broken", server.broken)])
    runner, port = await serve_on_loopback(web_app)
    base = f"http://127.0.0.1:{port}"
    try:
        refresher = FeedRefresher(app.kb, [f"{base}/feed.xml", f"{base}/broken"])
        seed_count = await app.kb.count()

        report = await refresher.refresh_once()
        assert report.added == 1 and report.swapped
        assert list(report.failed) == [f"{base}/broken"] and "HTTP 503" in report.failed[f"{base}/broken"]
        first = await app.vectors.physical_name(app.kb.collection)
        assert first != app.kb.collection, "the collection now lives behind an alias"
        assert await app.kb.count() == seed_count + 1

        # Searches keep working while the next refresh builds and swaps a new collection.
        server.body = FEED_2
        stop = asyncio.Event()
        verdicts: list[str] = []

        async def keep_checking() -> None:
            while not stop.is_set():
                r = await app.engine.check("The 5G rollout caused the coronavirus outbreak")
                verdicts.append(r.verdict.value)
                await asyncio.sleep(0)

        checker = asyncio.create_task(keep_checking())
        report2 = await refresher.refresh_once()
        await asyncio.sleep(0.05)
        stop.set()
        await checker
        assert report2.added == 1  # the lemon-water item is an update, the squid is new
        assert verdicts and set(verdicts) == {"REFUTED"}
        second = await app.vectors.physical_name(app.kb.collection)
        assert second != first
        names = set(await app.vectors.collection_names())
        assert first not in names, "the replaced collection is dropped"
        assert await app.kb.count() == seed_count + 2

        result = await app.engine.check("a giant squid was found on a Kansas beach")
        assert result.matches[0].url == "https://checks.example/kansas-squid"
    finally:
        await runner.cleanup()


async def test_the_alias_survives_a_restart(settings):
    server = FeedServer()
    web_app = web.Application()
    web_app.add_routes([web.get("/feed.xml", server.feed)])
    runner, port = await serve_on_loopback(web_app)
    try:
        async with build_app(settings) as a:
            await FeedRefresher(a.kb, [f"http://127.0.0.1:{port}/feed.xml"]).refresh_once()
            count = await a.kb.count()
        async with build_app(settings) as b:
            assert await b.kb.count() == count
            result = await b.engine.check("hot lemon water in the morning kills cancer cells!!")
            assert result.matches[0].url == "https://checks.example/lemon-water"
    finally:
        await runner.cleanup()


async def test_run_forever_stops_promptly(app):
    refresher = FeedRefresher(app.kb, [], interval_minutes=60)
    stop = asyncio.Event()
    task = asyncio.create_task(refresher.run_forever(stop))
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert refresher.last is not None and refresher.last.fetched == 0
