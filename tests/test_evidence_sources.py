"""Web/news/fact-check sources, staged search, gather_all and the registry, against one local fake server
speaking SearxNG, Brave, GDELT DOC 2.1 and Fact Check Tools wire formats (tests/fakes/search_api.py)."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.brave import BraveSource
from core.evidence.errors import ProviderError
from core.evidence.factcheck_api import FactCheckAPISource
from core.evidence.gather import gather_all
from core.evidence.gdelt import GdeltSource, gdelt_terms
from core.evidence.knowledge import KnowledgeSource
from core.evidence.registry import EvidenceSources, build_sources
from core.evidence.searxng import SearxNGSource
from core.evidence.staged import FACTCHECK_DOMAINS
from schema.models import Verdict
from tests.fakes.search_api import (
    FakeSearchAPI, brave_result, factcheck_claim, gdelt_article, searx_result,
)

CLAIM = "The Eiffel Tower was sold for scrap metal in 2024"
TRUSTED = ["reuters.com", "apnews.com"]


@pytest.fixture
async def fake():
    server = await FakeSearchAPI().start()
    yield server
    await server.stop()


@pytest.fixture
async def session():
    async with aiohttp.ClientSession() as s:
        yield s


def _sources(fake: FakeSearchAPI, session: aiohttp.ClientSession, timeout_s: float = 5.0) -> dict:
    return {
        "searxng": SearxNGSource(session, fake.url("/searxng"), timeout_s=timeout_s),
        "brave": BraveSource(session, fake.url("/brave/res/v1/web/search"), fake.brave_key, timeout_s=timeout_s),
        "gdelt": GdeltSource(session, fake.url("/gdelt/api/v2/doc/doc"), timeout_s=timeout_s),
        "factcheck": FactCheckAPISource(session, fake.url("/factcheck/v1alpha1/claims:search"), fake.factcheck_key,
                                        timeout_s=timeout_s),
    }


def _stock(fake: FakeSearchAPI) -> None:
    """Three trusted-outlet stories, one fact-check, two random blogs, in every provider's format."""
    stories = [("https://www.reuters.com/world/eiffel-1", "Eiffel Tower not sold, city says"),
               ("https://apnews.com/article/eiffel-2", "No, the Eiffel Tower was not sold for scrap"),
               ("https://www.reuters.com/world/eiffel-3", "Paris denies Eiffel Tower sale"),
               ("https://www.snopes.com/fact-check/eiffel-scrap/", "Was the Eiffel Tower sold for scrap?"),
               ("https://blog.example/eiffel", "The Eiffel tower SOLD!!!"),
               ("https://another.example/eiffel", "Eiffel Tower scrap rumour")]
    for url, title in stories:
        fake.searx_results.append(searx_result(url, title, f"<strong>Eiffel</strong> &amp; {title}",
                                               published="2024-04-01T09:00:00"))
        fake.brave_web.append(brave_result(url, title, f"<strong>{title}</strong>", page_age="2024-04-01T09:00:00"))
        fake.gdelt_articles.append(gdelt_article(url, title))
    fake.brave_news.append(brave_result("https://apnews.com/article/eiffel-news", "AP: Eiffel Tower still standing",
                                        "News result", age="April 2, 2024"))
    fake.factcheck_claims.append(factcheck_claim("The Eiffel Tower was sold for scrap", "https://www.snopes.com/fc/eiffel",
                                                 "Pants on Fire", publisher="Snopes"))


# -- wire formats -----------------------------------------------------------------------------------------


async def test_searxng_wire_format_and_parsing(fake: FakeSearchAPI, session):
    _stock(fake)
    found = await _sources(fake, session)["searxng"].search("eiffel tower scrap", 10)
    [(route, path, params, _h)] = fake.requests
    assert path == "/searxng/search" and params["format"] == "json" and params["q"] == "eiffel tower scrap"
    assert len(found) == 6 and found[0].url == "https://www.reuters.com/world/eiffel-1"
    assert found[0].domain == "reuters.com" and found[0].snippet.startswith("Eiffel & ")
    assert found[0].published_at is not None and found[0].published_at.month == 4
    assert {e.source for e in found} == {"searxng"}


async def test_brave_sends_token_and_reads_web_and_news(fake: FakeSearchAPI, session):
    _stock(fake)
    found = await _sources(fake, session)["brave"].search("eiffel", 20)
    [(_r, _p, params, headers)] = fake.requests
    assert headers["X-Subscription-Token"] == fake.brave_key and params["q"] == "eiffel" and params["count"] == "20"
    assert [e.source_type for e in found].count("news") == 1
    news = next(e for e in found if e.source_type == "news")
    assert news.published_at is not None and news.published_at.day == 2
    assert found[0].snippet == "Eiffel Tower not sold, city says" and found[0].publisher == "www.reuters.com"


async def test_brave_wrong_key_is_a_refusal_not_a_crash(fake: FakeSearchAPI, session):
    source = BraveSource(session, fake.url("/brave/res/v1/web/search"), "wrong")
    with pytest.raises(ProviderError, match="refused .HTTP 422"):
        await source.search("eiffel", 5)


async def test_gdelt_wire_format_and_dates(fake: FakeSearchAPI, session):
    _stock(fake)
    found = await _sources(fake, session)["gdelt"].search("Eiffel Tower scrap", 4)
    [(_r, _p, params, _h)] = fake.requests
    assert params == {"query": "Eiffel Tower scrap", "mode": "ArtList", "format": "json", "maxrecords": "4",
                      "sort": "DateDesc"}
    assert len(found) == 4 and all(e.source_type == "news" and e.language == "en" for e in found)
    assert found[0].published_at is not None and found[0].published_at.isoformat() == "2024-01-01T12:00:00+00:00"


async def test_gdelt_plain_text_error_with_http_200(fake: FakeSearchAPI, session):
    with pytest.raises(ProviderError, match="GDELT refused the search: 'Your search contained a phrase"):
        await _sources(fake, session)["gdelt"].search("a", 5)


async def test_gdelt_no_results_is_an_empty_object(fake: FakeSearchAPI, session):
    assert await _sources(fake, session)["gdelt"].search("nothing matches this", 5) == []


def test_gdelt_terms_drop_short_words_and_punctuation():
    assert gdelt_terms('"The" Eiffel-Tower: was it sold?! (2024)') == "Eiffel Tower sold 2024"


async def test_factcheck_api_wire_format_and_rating(fake: FakeSearchAPI, session):
    _stock(fake)
    found = await _sources(fake, session)["factcheck"].gather(ClaimQuery(claim=CLAIM, language="en"), limit=5)
    [(_r, path, params, _h)] = fake.requests
    assert path == "/factcheck/v1alpha1/claims:search"
    assert params == {"query": CLAIM, "pageSize": "5", "key": fake.factcheck_key, "languageCode": "en"}
    [ev] = found
    assert ev.source_type == "factcheck" and ev.rating == "Pants on Fire" and ev.verdict == Verdict.REFUTED
    assert ev.publisher == "Snopes" and ev.domain == "snopes.com" and ev.published_at is not None


async def test_factcheck_api_nothing_found(fake: FakeSearchAPI, session):
    assert await _sources(fake, session)["factcheck"].gather(ClaimQuery(claim="unrelated words"), limit=5) == []


async def test_factcheck_api_bad_key_does_not_leak_the_key(fake: FakeSearchAPI, session):
    source = FactCheckAPISource(session, fake.url("/factcheck/v1alpha1/claims:search"), "secret-key-123")
    with pytest.raises(ProviderError) as err:
        await source.gather(ClaimQuery(claim=CLAIM), limit=5)
    assert "secret-key-123" not in err.value.sentence and "secret-key-123" not in str(err.value)


# -- staged search ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "route", "operator"), [("searxng", "searxng", "site:"),
                                                            ("brave", "brave", "site:")])
async def test_trusted_outlets_first_and_enough_stops_there(fake, session, provider, route, operator):
    _stock(fake)
    found = await _sources(fake, session)[provider].gather(
        ClaimQuery(claim=CLAIM, allow_domains=TRUSTED), limit=8)
    hits = fake.hits(route)
    assert len(hits) == 1, hits
    q = hits[0]["q"]
    assert f"{operator}reuters.com" in q and f"{operator}apnews.com" in q
    assert {e.domain for e in found} <= {"reuters.com", "apnews.com"} and len(found) >= 3
    assert all(e.retrieval_score > 0.7 for e in found)


async def test_fact_checkers_second_then_broad_when_still_short(fake: FakeSearchAPI, session):
    _stock(fake)
    found = await _sources(fake, session)["searxng"].gather(
        ClaimQuery(claim=CLAIM, queries=[CLAIM, "eiffel tower scrap"], allow_domains=["bbc.co.uk"]), limit=8)
    qs = [h["q"] for h in fake.hits("searxng")]
    assert len(qs) == 4  # trusted (nothing), fact-checkers (one), broad x2
    assert "site:bbc.co.uk" in qs[0]
    assert all(f"site:{d}" in qs[1] for d in FACTCHECK_DOMAINS)
    assert set(qs[2:]) == {CLAIM, "eiffel tower scrap"}
    assert found[0].domain == "snopes.com"  # found by the fact-checker stage, so ranked above broad results
    assert len({e.url for e in found}) == len(found) == 6
    assert found[0].retrieval_score > max(e.retrieval_score for e in found[1:])


async def test_gdelt_stages_locally_in_one_request(fake: FakeSearchAPI, session):
    """GDELT allows one request per 5 s: one wide keyword query, then trusted > fact-checkers > the rest."""
    _stock(fake)
    fake.gdelt_articles.insert(0, gdelt_article("https://blog.example/first", "Eiffel scrap blog"))
    found = await _sources(fake, session)["gdelt"].gather(ClaimQuery(claim=CLAIM, allow_domains=TRUSTED), limit=5)
    [params] = fake.hits("gdelt")
    assert params["query"] == "Eiffel Tower sold scrap metal 2024" and params["maxrecords"] == "50"
    assert [e.domain for e in found] == ["reuters.com", "apnews.com", "reuters.com", "snopes.com", "blog.example"]
    scores = [e.retrieval_score for e in found]
    assert scores == sorted(scores, reverse=True) and scores[2] > scores[3] > scores[4]


async def test_gdelt_rate_limit_notice_is_a_429(fake: FakeSearchAPI, session):
    fake.fail("gdelt", status=200, content_type="text/plain",
              body="Please limit requests to one every 5 seconds or contact kalev.leetaru5@gmail.com for larger queries.")
    with pytest.raises(ProviderError) as err:
        await _sources(fake, session)["gdelt"].gather(ClaimQuery(claim=CLAIM), limit=5)
    assert err.value.status == 429 and err.value.retry_after == 5.0


async def test_allow_domains_cannot_inject_query_syntax(fake: FakeSearchAPI, session):
    await _sources(fake, session)["searxng"].gather(
        ClaimQuery(claim=CLAIM, allow_domains=["reuters.com) OR (x", "ok.example", "bad domain"]), limit=3)
    first = fake.hits("searxng")[0]["q"]
    assert first == f"{CLAIM} (site:ok.example)"


# -- faults, for every provider -------------------------------------------------------------------------------

PROVIDERS = ["searxng", "brave", "gdelt", "factcheck"]


@pytest.mark.parametrize("route", PROVIDERS)
async def test_429_carries_status_and_retry_after(fake, session, route):
    fake.fail(route, status=429, headers={"Retry-After": "7"}, body="slow down")
    with pytest.raises(ProviderError) as err:
        await _sources(fake, session)[route].gather(ClaimQuery(claim=CLAIM), limit=5)
    assert err.value.status == 429 and err.value.retry_after == 7.0 and "429" in err.value.sentence


@pytest.mark.parametrize("route", PROVIDERS)
async def test_500_is_a_server_error(fake, session, route):
    fake.fail(route, status=500)
    with pytest.raises(ProviderError, match="server error .HTTP 500"):
        await _sources(fake, session)[route].gather(ClaimQuery(claim=CLAIM), limit=5)


@pytest.mark.parametrize("route", PROVIDERS)
@pytest.mark.parametrize("body", ['{"results": [', "<html>Bad gateway</html>", "[1, 2, 3]", '{"results": 5}',
                                  '{"web": {"results": [{"url": 5}, "x", null]}, "articles": "no", "claims": {}}'])
async def test_malformed_answers_are_reported_never_raised_raw(fake, session, route, body):
    fake.fail(route, status=200, body=body)
    evidence, [report] = await gather_all([_sources(fake, session)[route]], ClaimQuery(claim=CLAIM), limit=5, timeout=5)
    # Either a clean error sentence or nothing found: never an exception, never junk evidence.
    assert evidence == [] and report.found == 0
    if not report.ok:
        assert report.error and "Traceback" not in report.error and "unexpectedly" not in report.error


@pytest.mark.parametrize("route", PROVIDERS)
async def test_slow_provider_times_out_in_gather_all(fake, session, route):
    _stock(fake)
    fake.fail(route, delay_s=3)
    sources = _sources(fake, session, timeout_s=30)
    evidence, [report] = await gather_all([sources[route]], ClaimQuery(claim=CLAIM), limit=5, timeout=0.5)
    assert evidence == [] and not report.ok and report.error == "No answer within 0.5 s."


async def test_provider_answers_after_a_transient_fault(fake, session):
    _stock(fake)
    fake.fail("brave", status=503, times=1)
    source = _sources(fake, session)["brave"]
    with pytest.raises(ProviderError):
        await source.search("eiffel", 5)
    assert len(await source.search("eiffel", 5)) == 5


# -- gather_all ---------------------------------------------------------------------------------------------


class _Broken:
    name = "broken"

    async def gather(self, query, *, limit):
        raise RuntimeError("secret internal detail http://user:key@host")


class _Malformed:
    name = "malformed"

    async def gather(self, query, *, limit):
        return {"not": "a list"}


class _Hangs:
    name = "hangs"

    def __init__(self):
        self.cancelled = False

    async def gather(self, query, *, limit):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def test_gather_all_isolates_every_failure(fake, session):
    _stock(fake)
    hangs = _Hangs()
    sources = [_sources(fake, session)["factcheck"], _Broken(), _Malformed(), hangs, _sources(fake, session)["gdelt"]]
    evidence, reports = await gather_all(sources, ClaimQuery(claim=CLAIM), limit=3, timeout=1.0)
    by_name = {r.source: r for r in reports}
    assert [r.source for r in reports] == ["factcheck_api", "broken", "malformed", "hangs", "gdelt"]
    assert by_name["factcheck_api"].ok and by_name["factcheck_api"].found == 1
    assert by_name["gdelt"].ok and by_name["gdelt"].found == 3
    assert by_name["broken"].error == "The source failed unexpectedly." and "key" not in by_name["broken"].error
    assert by_name["malformed"].error == "The source returned results in an unexpected shape."
    assert by_name["hangs"].error == "No answer within 1 s." and hangs.cancelled
    assert [e.source for e in evidence] == ["factcheck_api"] + ["gdelt"] * 3
    assert all(isinstance(e, Evidence) for e in evidence)


async def test_unreachable_provider_fails_fast_with_a_sentence(session):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = GdeltSource(session, f"http://127.0.0.1:{port}/api/v2/doc/doc", timeout_s=5)
    evidence, [report] = await gather_all([source], ClaimQuery(claim=CLAIM), limit=5, timeout=5)
    assert evidence == [] and report.error == "GDELT could not be reached."


# -- registry --------------------------------------------------------------------------------------------------


async def test_registry_builds_only_configured_providers(settings, fake):
    shipped = settings.model_copy(update={"gdelt_url": type(settings).model_fields["gdelt_url"].default})
    async with EvidenceSources(shipped) as default:
        assert default.names == ["links"]  # no provider is on by default; link expansion (used with an LLM)
    configured = settings.model_copy(update={
        "searxng_url": fake.url("/searxng"), "brave_api_key": fake.brave_key, "brave_url": fake.url("/brave/res/v1/web/search"),
        "gdelt_url": fake.url("/gdelt/api/v2/doc/doc"), "factcheck_api_key": fake.factcheck_key,
        "factcheck_url": fake.url("/factcheck/v1alpha1/claims:search"), "fetch_allow_hosts": ["127.0.0.1"]})
    configured = type(settings).model_validate(configured.model_dump())
    _stock(fake)
    page = fake.page("/story", "<html><head><title>Eiffel story</title></head><body><p>The Eiffel Tower "
                               "stands.</p></body></html>")
    async with EvidenceSources(configured) as ev:
        assert ev.names == ["factcheck_api", "searxng", "brave", "gdelt", "links"]
        evidence, reports = await gather_all(ev.sources, ClaimQuery(claim=CLAIM, urls=[page], allow_domains=TRUSTED),
                                             limit=5, timeout=5)
    assert all(r.ok for r in reports), reports
    assert {r.source: r.found for r in reports}["links"] == 1
    assert {e.source_type for e in evidence} == {"factcheck", "web", "news", "page"}
    assert ev.api_session.closed and ev.fetch_session.closed


async def test_registry_link_expansion_refuses_loopback_by_default(settings, fake):
    page = fake.page("/story", "<p>intranet</p>")
    off = type(settings).model_validate({**settings.model_dump(), "gdelt_url": None})
    async with EvidenceSources(off) as ev:
        evidence, [report] = await gather_all(ev.sources, ClaimQuery(claim=CLAIM, urls=[page]), limit=5, timeout=5)
    assert evidence == [] and not report.ok and "loopback" in report.error
    assert fake.requests == []


async def test_build_sources_with_caller_owned_sessions(settings, session):
    gdelt = settings.model_copy(update={"gdelt_url": "https://api.gdeltproject.org/api/v2/doc/doc"})
    sources = build_sources(gdelt, api_session=session)
    assert [s.name for s in sources] == ["gdelt"]  # no fetch session: no link expansion


# -- knowledge base ---------------------------------------------------------------------------------------------


async def test_knowledge_source_returns_matched_fact_checks(app):
    source = KnowledgeSource(app.matcher)
    found = await source.gather(ClaimQuery(claim="5G mobile networks spread the coronavirus around the world"), limit=3)
    assert found, "the seed knowledge base has this claim"
    top = found[0]
    assert top.source == "knowledge" and top.source_type == "factcheck"
    assert top.url == "https://www.logically.ai/factchecks/library/b1f4b613"
    assert top.verdict == Verdict.REFUTED and top.rating == "False"
    direct = await app.matcher.match("5G mobile networks spread the coronavirus around the world", [], limit=3)
    assert top.retrieval_score == direct[0].similarity


async def test_knowledge_source_by_url_and_gather_all(app):
    url = "https://www.logically.ai/factchecks/library/b1f4b613"
    evidence, [report] = await gather_all([KnowledgeSource(app.matcher)],
                                          ClaimQuery(claim="something unrelated about football", urls=[url]),
                                          limit=3, timeout=30)
    assert report.ok and evidence[0].url == url and evidence[0].retrieval_score == 1.0


# -- the `evidence` collection: the knowledge base grows with use --------------------------------------------


async def test_evidence_index_grows_and_boosts_what_keeps_proving_relevant(app, settings):
    from core.evidence.evidence_index import EvidenceIndex, EvidenceIndexSource
    from storage.evidence_vectors import EvidenceVectors

    index = EvidenceIndex(EvidenceVectors(app.vectors, settings.evidence_collection), app.embedder)
    await index.open()
    web = Evidence(url="https://www.reuters.com/world/eiffel-1", title="Eiffel Tower not sold for scrap, Paris says",
                   snippet="The city of Paris denied rumours that the Eiffel Tower was sold as scrap metal.",
                   domain="reuters.com", source="searxng", source_type="web")
    other = Evidence(url="https://example.org/football", title="Cup final report",
                     snippet="The home side won the cup final after extra time.", domain="example.org",
                     source="gdelt", source_type="news")
    rated = Evidence(url="https://www.snopes.com/fc/eiffel", title="Fact check", snippet="Claim checked",
                     source="factcheck_api", source_type="factcheck")
    assert await index.add([web, other, rated]) == 2  # fact-checks live in `factchecks`, not here
    assert await index.add([web]) == 0  # already stored: kept, count not reset

    source = EvidenceIndexSource(index)
    first = await source.gather(ClaimQuery(claim=CLAIM), limit=3)
    assert [e.url for e in first] == [web.url]
    assert first[0].source_type == "knowledge" and first[0].domain == "reuters.com"
    second = await source.gather(ClaimQuery(claim=CLAIM), limit=3)
    assert second[0].retrieval_score == pytest.approx(first[0].retrieval_score + 0.02, abs=1e-3)
    [hit] = [h for h in await index.vectors.search((await app.embedder.embed([CLAIM]))[0], 5) if h.url == web.url]
    assert hit.payload["access_count"] == 2 and hit.payload["credibility"] == 0.9
    assert {"source", "domain", "source_type", "credibility", "timestamp", "access_count", "language"} <= hit.payload.keys()


# -- one contract, every source -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["searxng", "brave", "gdelt", "factcheck", "links"])
@pytest.mark.parametrize("limit", [1, 2, 5])
async def test_every_source_honours_the_contract(fake, session, name, limit):
    from core.evidence.fetch import PageFetcher, guarded_session
    from core.evidence.links import LinkSource
    from core.evidence.ssrf import SSRFGuard

    _stock(fake)
    for i in range(3):
        fake.factcheck_claims.append(factcheck_claim(f"Eiffel Tower claim {i}", f"https://fullfact.org/e{i}", "Mostly false",
                                                     publisher="Full Fact", site="fullfact.org"))
    urls = [fake.page(f"/p{i}", f"<title>Eiffel {i}</title><p>Eiffel Tower story {i}.</p>") for i in range(3)]
    query = ClaimQuery(claim=CLAIM, urls=urls, allow_domains=TRUSTED)
    guard = SSRFGuard(["127.0.0.1"])
    async with guarded_session(guard) as fetch_session:
        sources = {**_sources(fake, session), "links": LinkSource(PageFetcher(fetch_session, guard), max_links=3)}
        source = sources[name]
        found = await source.gather(query, limit=limit)
    assert isinstance(found, list) and 0 < len(found) <= limit
    for e in found:
        assert isinstance(e, Evidence) and e.source == source.name
        assert e.url.startswith(("http://", "https://")) and e.domain == e.domain.lower()
        assert not e.domain.startswith("www.") and e.title
        assert 0.0 <= e.retrieval_score <= 1.0
        assert (e.verdict is not None) == (e.source_type == "factcheck")
    assert len({e.url for e in found}) == len(found)


async def test_provider_slower_than_its_own_timeout_says_so(fake, session):
    fake.fail("searxng", delay_s=2)
    source = SearxNGSource(session, fake.url("/searxng"), timeout_s=0.3)
    with pytest.raises(ProviderError, match="SearxNG took longer than 0.3 s to answer"):
        await source.search("eiffel", 3)
