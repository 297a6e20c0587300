"""Link expansion: the safe fetcher and the page extractor against a real local web server, and hostile HTML."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from core.evidence.base import ClaimQuery
from core.evidence.errors import (
    FetchError, FetchTimeout, HTTPStatusError, PageTooLarge, TooManyRedirects, UnsupportedContent,
)
from core.evidence.fetch import PageFetcher, decode_body, guarded_session
from core.evidence.gather import gather_all
from core.evidence.html_extract import best_passage, extract_page
from core.evidence.links import LinkSource
from core.evidence.ssrf import SSRFGuard
from schema.models import Verdict
from tests.fakes.search_api import FakeSearchAPI

CLAIM = "Drinking hot water cures the flu within a day"

CLAIMREVIEW_PAGE = """<!doctype html><html lang="en-GB"><head><title>ignored title</title>
<meta property="og:title" content="OG title loses to JSON-LD">
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
 {"@type": "Organization", "name": "Example Checks"},
 {"@type": "ClaimReview", "claimReviewed": "Hot water cures the flu",
  "author": {"@type": "Organization", "name": "Example Checks"}, "datePublished": "2024-02-03",
  "url": "https://checks.example/hot-water",
  "reviewRating": {"@type": "Rating", "ratingValue": 1, "bestRating": 5, "worstRating": 1, "alternateName": "False"}},
 {"@type": "NewsArticle", "headline": "No, hot water does not cure the flu", "datePublished": "2024-02-03T10:00:00Z",
  "publisher": {"@type": "Organization", "name": "Example Checks"}}]}</script>
<script>var tracking = "drinking hot water cures the flu tracking script";</script>
</head><body><nav>Home | Health | Drinking hot water cures flu menu</nav>
<article><h1>No, hot water does not cure the flu</h1>
<p>Posts claim that drinking hot water cures the flu within a day. Doctors say there is no evidence for it.</p>
<p>Influenza is a viral infection; hydration helps comfort but does not kill the virus.</p>
<p>Health agencies recommend rest, fluids and, for some patients, antiviral medication prescribed by a doctor.</p>
</article><footer>Copyright footer text</footer></body></html>"""

OG_PAGE = """<html><head><meta charset="utf-8"><title>Plain title</title>
<meta property="og:title" content="Flu season starts early">
<meta property="og:description" content="Health officials report an early start to the flu season.">
<meta property="og:site_name" content="Daily Example">
<meta property="article:published_time" content="2024-01-15T08:30:00+00:00">
<style>.x{color:red}</style></head><body><header>Site header</header>
<div><p>Hospitals are seeing more flu cases than usual for December.</p></div>
<aside>Related: celebrity gossip</aside></body></html>"""


@pytest.fixture
async def fake():
    server = await FakeSearchAPI().start()
    yield server
    await server.stop()


@pytest.fixture
async def fetcher():
    guard = SSRFGuard(["127.0.0.1"])
    async with guarded_session(guard) as session:
        yield PageFetcher(session, guard, max_bytes=2 * 1024 * 1024, timeout_s=5)


async def test_claimreview_page_becomes_a_rated_evidence(fake: FakeSearchAPI, fetcher: PageFetcher):
    url = fake.page("/check", CLAIMREVIEW_PAGE)
    evidence, notes = await LinkSource(fetcher).gather_noted(ClaimQuery(claim=CLAIM, urls=[url]), limit=3)
    assert notes == []
    [ev] = evidence
    assert ev.source_type == "page" and ev.source == "links"
    assert ev.title == "No, hot water does not cure the flu"
    assert ev.rating == "False" and ev.verdict == Verdict.REFUTED
    assert ev.publisher == "Example Checks"
    assert ev.published_at is not None and ev.published_at.year == 2024
    assert ev.language == "en" and ev.domain == "127.0.0.1"
    assert "Hot water cures the flu" in ev.snippet and "no evidence" in ev.snippet
    assert "tracking" not in ev.snippet and "menu" not in ev.snippet and "footer" not in ev.snippet


def test_numeric_only_claimreview_rating_is_normalised():
    page = ('<script type="application/ld+json">{"@type": ["ClaimReview"], "claimReviewed": "x", '
            '"reviewRating": {"ratingValue": "5", "bestRating": "5", "worstRating": "1"}}</script>')
    [review] = extract_page(page, "http://h/").claim_reviews
    assert review.verdict == Verdict.SUPPORTED and review.rating == ""


def test_opengraph_and_readable_text():
    info = extract_page(OG_PAGE, "https://daily.example/flu")
    assert info.title == "Flu season starts early"
    assert info.description.startswith("Health officials report")
    assert info.site_name == "Daily Example"
    assert info.published is not None and info.published.day == 15
    assert "Hospitals are seeing more flu cases" in info.text
    for junk in ("Site header", "celebrity gossip", "color:red"):
        assert junk not in info.text


async def test_fifty_megabytes_declared_is_refused_unread(fake: FakeSearchAPI, fetcher: PageFetcher):
    with pytest.raises(PageTooLarge):
        await fetcher.fetch(fake.url("/huge?declared=1"))


async def test_fifty_megabytes_undeclared_is_cut_at_the_cap(fake: FakeSearchAPI, fetcher: PageFetcher):
    page = await fetcher.fetch(fake.url("/huge"))
    assert page.truncated
    assert len(page.text.encode()) <= 2 * 1024 * 1024


async def test_gzip_bomb_is_cut_at_the_cap(fake: FakeSearchAPI, fetcher: PageFetcher):
    import gzip
    bomb = gzip.compress(b"<p>" + b"a" * (16 * 1024 * 1024), compresslevel=9)  # 16 MB inflated, 16 KB sent
    url = fake.page("/bomb", bomb, headers={"Content-Encoding": "gzip"})
    page = await fetcher.fetch(url)
    assert page.truncated and len(page.text) <= 2 * 1024 * 1024


async def test_slow_drip_ends_in_a_timeout(fake: FakeSearchAPI):
    guard = SSRFGuard(["127.0.0.1"])
    async with guarded_session(guard) as session:
        with pytest.raises(FetchTimeout) as err:
            await PageFetcher(session, guard, timeout_s=1.0).fetch(fake.url("/drip?every=0.1"))
    assert err.value.sentence == "The page took too long to load."


async def test_silent_server_fails_on_the_read_timeout(fake: FakeSearchAPI):
    guard = SSRFGuard(["127.0.0.1"])
    async with guarded_session(guard) as session:
        fetcher = PageFetcher(session, guard, timeout_s=30, read_timeout_s=0.3)
        with pytest.raises(FetchTimeout):
            await fetcher.fetch(fake.url("/drip?every=5"))


@pytest.mark.parametrize(("body", "content_type"), [
    (b"%PDF-1.7\n\x00\x01\x02binary", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, "text/html"),  # binary pretending to be HTML
    (b"<html>no type</html>", ""),
])
async def test_non_text_is_refused(fake: FakeSearchAPI, fetcher: PageFetcher, body: bytes, content_type: str):
    url = fake.page("/file", body, content_type=content_type or "application/octet-stream")
    with pytest.raises(UnsupportedContent):
        await fetcher.fetch(url)


@pytest.mark.parametrize("status", [404, 410, 500, 503])
async def test_http_errors_are_typed(fake: FakeSearchAPI, fetcher: PageFetcher, status: int):
    url = fake.page("/err", "<p>oops</p>", status=status)
    with pytest.raises(HTTPStatusError) as err:
        await fetcher.fetch(url)
    assert err.value.status == status and str(status) in err.value.sentence


async def test_redirect_loop_stops_after_five(fake: FakeSearchAPI, fetcher: PageFetcher):
    url = fake.page("/loop", "", status=302, headers={"Location": "/loop"})
    with pytest.raises(TooManyRedirects):
        await fetcher.fetch(url)
    assert len(fake.requests) == 6  # the first request and five redirects


async def test_relative_redirect_is_followed(fake: FakeSearchAPI, fetcher: PageFetcher):
    fake.page("/moved", "", status=301, headers={"Location": "/here"})
    fake.page("/here", OG_PAGE)
    page = await fetcher.fetch(fake.url("/moved"))
    assert page.url.endswith("/here") and page.redirects == [fake.url("/here")]


async def test_json_and_plain_text_are_read(fake: FakeSearchAPI, fetcher: PageFetcher):
    page = await fetcher.fetch(fake.page("/data.json", json.dumps({"claim": "x"}), content_type="application/json"))
    assert page.content_type == "application/json" and '"claim"' in page.text
    page = await fetcher.fetch(fake.page("/a.txt", "plain words", content_type="text/plain"))
    assert page.text == "plain words"


@pytest.mark.parametrize(("raw", "header", "expected", "charset"), [
    ("Привет мир".encode("cp1251"), "text/html; charset=windows-1251", "Привет мир", "cp1251"),
    ('<meta charset="koi8-r"><p>'.encode() + "Привет".encode("koi8-r"), "text/html", "Привет", "koi8-r"),
    ("café".encode("cp1252"), "text/html; charset=utf-8", "café", "cp1252"),  # mislabelled
    ("naïve".encode("utf-8"), "text/html; charset=no-such-charset", "naïve", "utf-8"),
    (b"\xef\xbb\xbfbom", "text/plain", "bom", "utf-8-sig"),
])
def test_decoding_by_charset_with_fallback(raw: bytes, header: str, expected: str, charset: str):
    text, used = decode_body(raw, header)
    assert expected in text and used == charset


async def test_charset_from_header_over_the_wire(fake: FakeSearchAPI, fetcher: PageFetcher):
    url = fake.page("/ru", "<p>Новости дня</p>".encode("cp1251"), content_type="text/html; charset=windows-1251")
    page = await fetcher.fetch(url)
    assert "Новости дня" in page.text


HOSTILE = {
    "deep nesting": "<div>" * 200_000 + "deep text" + "</div>" * 10,
    "broken tags": "<p<a href='<<<'>><<>>/ <script <style>unclosed <!-- comment <p>text after",
    "megabyte attribute": '<html><head><meta property="og:title" content="' + "A" * 1_500_000 + '"></head><body>x</body>',
    "unclosed script": "<p>before</p><script>" + "var a=1;" * 100_000,
    "json-ld bomb": '<script type="application/ld+json">' + "[" * 100_000 + "]" * 100_000 + "</script><p>ok</p>",
    "json-ld garbage": '<script type="application/ld+json">{"@type": "ClaimReview", reviewRating: </script>',
    "binary as text": "".join(chr(c) for c in range(0, 0x3000, 7)) * 20,
    "many attributes": "<div " + " ".join(f"a{i}=x" for i in range(100_000)) + ">text</div>",
    "nul bytes": "<p>\x00\x00text\x00</p>",
    # these three sent the stdlib html.parser quadratic (tens of seconds for 50-200 KB)
    "unfinished tags": "<x " * 50_000,
    "unclosed comments": "<!--" * 50_000,
    "unclosed quotes": "<a b='" * 20_000,
    "cdata and pi": "<![CDATA[x]]><?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>]><p>&a; &#xffffffff; &#0;</p>",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_html_never_crashes(name: str):
    info = extract_page(HOSTILE[name], "http://h/")
    assert isinstance(info.text, str) and len(info.text) <= 70_000
    assert len(info.title) <= 500


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("<>/=\"'!-[]{}:;&# abcpdivscriptylemta\n\x00é")), max_size=400))
def test_fuzzed_html_never_crashes(html: str):
    info = extract_page(html, "http://h/")
    assert isinstance(info.text, str)


def test_tokenizer_reads_entities_raw_text_and_attributes():
    html = ("<html LANG='fr'><body><p>Fish &amp; chips &lt;3</p><script>if (a < b) { x = '</p><p>not text' }"
            "</script><p title=\"a &quot;b&quot;\">after</p><textarea>&lt;kept&gt;</textarea>"
            "<meta name=description content='Caf&eacute; &amp; bar'></body></html>")
    info = extract_page(html, "http://h/")
    assert info.language == "fr" and info.description == "Café & bar"
    assert "Fish & chips <3" in info.text and "after" in info.text
    assert "not text" not in info.text


def test_best_passage_picks_the_window_about_the_claim():
    text = "Weather is nice today. " * 40 + "Hot water does not cure the flu, doctors say. " + "Sports news. " * 40
    passage = best_passage(text, CLAIM, size=120)
    assert "cure the flu" in passage and len(passage) <= 120


async def test_link_source_mixes_pages_and_per_link_errors(fake: FakeSearchAPI, fetcher: PageFetcher):
    good = fake.page("/good", OG_PAGE)
    query = ClaimQuery(claim=CLAIM, urls=[good, "http://10.0.0.1/admin", fake.url("/missing")])
    evidence, notes = await LinkSource(fetcher).gather_noted(query, limit=5)
    assert [e.url for e in evidence] == [good]
    assert notes == ["Link 2: The link was not opened: it points to a private network address.",
                     "Link 3: The site answered with an error (HTTP 404)."]


async def test_link_source_fetches_at_most_max_links(fake: FakeSearchAPI, fetcher: PageFetcher):
    urls = [fake.page(f"/p{i}", OG_PAGE) for i in range(6)]
    evidence, _ = await LinkSource(fetcher, max_links=3).gather_noted(ClaimQuery(claim=CLAIM, urls=urls), limit=10)
    assert len(evidence) == 3 and len(fake.requests) == 3


async def test_link_source_total_timeout_reports_the_slow_link(fake: FakeSearchAPI):
    guard = SSRFGuard(["127.0.0.1"])
    good = fake.page("/good", OG_PAGE)
    async with guarded_session(guard) as session:
        source = LinkSource(PageFetcher(session, guard, timeout_s=30), total_timeout_s=1.0)
        evidence, notes = await source.gather_noted(ClaimQuery(claim=CLAIM, urls=[good, fake.url("/drip")]), limit=3)
    assert [e.url for e in evidence] == [good]
    assert notes == ["Link 2: The page took too long to load."]


async def test_all_links_failing_raises_one_sentence_and_gather_all_reports_it(fetcher: PageFetcher):
    source = LinkSource(fetcher)
    query = ClaimQuery(claim=CLAIM, urls=["http://169.254.169.254/latest/meta-data/"])
    with pytest.raises(FetchError, match="cloud metadata"):
        await source.gather(query, limit=3)
    evidence, [report] = await gather_all([source], query, limit=3, timeout=5)
    assert evidence == [] and not report.ok and "cloud metadata" in report.error
    assert report.notes == ["The link: The link was not opened: it points to a cloud metadata address."]
