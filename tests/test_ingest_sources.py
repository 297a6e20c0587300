"""`tipline ingest` sources end to end: a fact-checker's feed served over HTTP by a local server,
and files, into the real knowledge base."""

from aiohttp import web

from bot.ingest_files import ingest_source
from tests.fakes.loopback import serve_on_loopback

FEED = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Example Checks</title><link>https://checks.example</link>
<language>en</language>
<item><title>FALSE: Drinking hot lemon water every morning kills cancer cells</title>
<link>https://checks.example/lemon-water</link><pubDate>Tue, 03 Mar 2020 10:00:00 GMT</pubDate></item>
<item><title>Fact Check: A giant squid washed up on a beach in Kansas</title>
<link>https://checks.example/kansas-squid</link><pubDate>Wed, 04 Mar 2020 10:00:00 GMT</pubDate>
<category>Pants on Fire</category></item>
</channel></rss>"""


async def _serve(routes):
    app = web.Application()
    app.add_routes(routes)
    runner, port = await serve_on_loopback(app)
    return runner, f"http://127.0.0.1:{port}"


async def test_feed_over_http_is_ingested_and_matched(app):
    async def feed(_):
        return web.Response(text=FEED, content_type="application/rss+xml")

    runner, base = await _serve([web.get("/feed.xml", feed)])
    try:
        before = await app.kb.count()
        report = await ingest_source(app.kb, f"{base}/feed.xml")
        assert report.failed is None and report.added == 2 and report.skipped == 0
        assert await app.kb.count() == before + 2
        again = await ingest_source(app.kb, f"{base}/feed.xml")
        assert again.added == 0 and again.updated == 2 and await app.kb.count() == before + 2
    finally:
        await runner.cleanup()
    result = await app.engine.check("hot lemon water in the morning kills cancer cells!!")
    assert result.matches[0].url == "https://checks.example/lemon-water"
    assert result.matches[0].verdict.value == "REFUTED"
    runs = await app.db.ingest_runs()
    assert [r.status for r in runs[-2:]] == ["done", "done"]


async def test_http_errors_change_nothing(app):
    async def broken(_):
        return web.Response(status=500, text="oops")

    async def garbage(_):
        return web.Response(body=b"\x00\x01\x02binary", content_type="application/octet-stream")

    runner, base = await _serve([web.get("/broken", broken), web.get("/garbage", garbage)])
    try:
        before = await app.kb.count()
        r1 = await ingest_source(app.kb, f"{base}/broken")
        r2 = await ingest_source(app.kb, f"{base}/garbage")
    finally:
        await runner.cleanup()
    assert "HTTP 500" in r1.failed
    assert "binary" in r2.failed
    assert await app.kb.count() == before
    assert [r.status for r in (await app.db.ingest_runs())[-2:]] == ["failed", "failed"]
