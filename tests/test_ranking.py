"""core.evidence.credibility and core.evidence.ranking, with the real ONNX embedding model."""

from __future__ import annotations

import pytest

from core.evidence.credibility import TOP, UNKNOWN, DomainRules, credibility, default_credibility, domain_of, site_of
from core.encoders.embeddings import Embedder
from schema.models import Verdict
from core.evidence.ranking import MIN_RELEVANCE, is_listing_page, normalize_url, rank, recency_weight, shortlist
from tests.judging_support import ev, utc

CLAIM = "Water boils at 50 degrees Celsius at sea level."


@pytest.fixture(scope="module")
def embedder(model_dir) -> Embedder:
    return Embedder(model_dir=model_dir)


# --- credibility ------------------------------------------------------------------------------------

def test_default_tiers_follow_the_seed_table():
    order = ["factcheck.org", "reuters.com", "nytimes.com", "aljazeera.com", "wikipedia.org", "someblog.example",
             "infowars.com"]
    scores = [default_credibility(d) for d in order]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert default_credibility("who.int") == 0.95 and default_credibility("someblog.example") == UNKNOWN


def test_subdomains_and_public_suffixes():
    assert default_credibility("en.wikipedia.org") == default_credibility("wikipedia.org")
    assert default_credibility("https://www.BBC.co.uk/news/x") == 0.85
    assert default_credibility("www.epa.gov") == 0.90  # any .gov
    assert default_credibility("cs.stanford.edu") == 0.85
    assert default_credibility("gov.example.com") == UNKNOWN  # "gov" must be the suffix, not a label
    assert domain_of("https://www.Example.COM:8443/path") == "example.com"
    assert site_of("de.wikipedia.org") == site_of("en.wikipedia.org") == "wikipedia.org"
    assert site_of("news.bbc.co.uk") == "bbc.co.uk"


def test_admin_rules_override_defaults_and_deny_wins():
    rules = DomainRules(allow={"myoutlet.example", "*.gov"}, deny={"infowars.com", "bad.gov"})
    assert credibility("myoutlet.example", rules) == TOP
    assert credibility("www.infowars.com", rules) is None
    assert credibility("bad.gov", rules) is None  # allowed by *.gov, denied by name: denied
    assert credibility("sub.bad.gov", rules) == TOP  # a plain rule is that host only (as bot/domains.py)
    assert credibility("cdc.gov", rules) == TOP
    predicate = DomainRules(deny=lambda host: host.endswith(".ru"))
    assert credibility("news.example.ru", predicate) is None and credibility("example.com", predicate) == UNKNOWN


# --- URL helpers ------------------------------------------------------------------------------------

def test_normalize_url_ignores_what_does_not_change_the_page():
    a = normalize_url("https://www.example.com/news/story/?utm_source=tw&b=2&a=1#comments")
    assert a == normalize_url("http://example.com/news/story?a=1&b=2&fbclid=xyz")
    assert a != normalize_url("https://example.com/news/story?a=1&b=3")


@pytest.mark.parametrize("url, listing", [
    ("https://www.bbc.com/", True), ("https://bbc.com", True), ("https://site.example/index.html", True),
    ("https://site.example/?s=water", True), ("https://site.example/?p=123", False),
    ("https://site.example/tag/water", True), ("https://site.example/news/category/science", True),
    ("https://site.example/author/jane", True), ("https://site.example/2024/01/water-boils-at-100c", False),
    ("https://www.snopes.com/fact-check/water-boils/", False), ("https://www.reuters.com/world/", True),
    ("https://en.wikipedia.org/wiki/Water", False), ("https://a.example/boiling", False), ("https://factcheck.afp.com/doc.afp.com.34XY7UU", False),
    ("https://fullfact.org/health/", True), ("https://example.com/water-boils-at-100c", False),
])
def test_listing_pages(url, listing):
    assert is_listing_page(url) is listing


def test_recency_weight_halves_each_year():
    now = utc(2025)
    assert recency_weight(utc(2025), now) == 1.0
    assert recency_weight(utc(2024), now) == pytest.approx(0.5, abs=0.01)
    assert recency_weight(None, now) == 0.5
    assert recency_weight(utc(2024), now) > recency_weight(utc(2020), now)


# --- ranking ----------------------------------------------------------------------------------------

async def test_rank_filters_dedupes_and_orders(embedder):
    items = [
        ev("https://www.bbc.com/", "BBC - Home", "Water news and more"),  # homepage
        ev("https://example.com/2024/stock-rally", "Markets", "The stock market rose sharply on Tuesday."),  # off-topic
        ev("https://denied.example/water", "Water boils at 100C", "At sea level water boils at 100 °C."),
        ev("https://apnews.com/article/water-boiling", "Water boils at 100C, scientists say",
           "At sea level, pure water boils at 100 degrees Celsius, scientists said on Monday."),
        # syndicated AP copy on another site: near-duplicate text, not an independent source
        ev("https://localpaper.example/news/water-boiling", "Scientists: water boils at 100C",
           "At sea level, pure water boils at 100 degrees Celsius, scientists said on Monday."),
        ev("https://www.snopes.com/fact-check/water-boils-50c/?utm_source=x", "Does water boil at 50C?",
           "Water boils at 50C at sea level.", source_type="factcheck", verdict=Verdict.REFUTED, rating="False"),
        ev("https://snopes.com/fact-check/water-boils-50c", "", "Water boils at 50C at sea level."),  # same URL
    ]
    r = await rank([CLAIM], items, embedder=embedder, rules=DomainRules(deny={"denied.example"}))
    urls = [x.evidence.url for x in r.items]
    reasons = dict(r.dropped)
    assert reasons["https://www.bbc.com/"] == "homepage or listing page"
    assert reasons["https://denied.example/water"] == "denied domain"
    assert reasons["https://example.com/2024/stock-rally"].startswith("off-topic")
    assert reasons["https://snopes.com/fact-check/water-boils-50c"] == "same URL"  # the fact-check copy is kept
    assert reasons["https://localpaper.example/news/water-boiling"].startswith("near-duplicate of https://apnews.com")
    assert urls == ["https://www.snopes.com/fact-check/water-boils-50c/?utm_source=x",
                    "https://apnews.com/article/water-boiling"]
    kept = r.items[0]
    assert kept.evidence.verdict == Verdict.REFUTED and kept.domain == "snopes.com"
    assert all(x.relevance >= MIN_RELEVANCE for x in r.items)
    assert r.items[0].score >= r.items[1].score


async def test_at_most_two_per_site(embedder):
    texts = ["The boiling point of water at standard atmospheric pressure is 100 degrees Celsius.",
             "Water boils at lower temperatures at high altitude, because the air pressure is lower.",
             "Adding salt to water raises its boiling point slightly above 100 °C."]
    items = [ev(f"https://{sub}.wikipedia.org/wiki/Boiling_{n}", "Boiling point", t)
             for n, (sub, t) in enumerate(zip(["en", "de", "fr"], texts))]
    items.append(ev("https://unknownblog.example/boiling", "Boiling point", "At sea level pure water boils at 100 C."))
    r = await rank([CLAIM], items, embedder=embedder)
    sites = [x.domain for x in r.items]
    assert sites.count("wikipedia.org") == 2 and "unknownblog.example" in sites
    assert [reason for _, reason in r.dropped] == ["more than 2 from wikipedia.org"]


async def test_relevance_follows_meaning_and_recency_breaks_ties(embedder):
    on_topic = ev("https://a.example/boiling", "Boiling point of water",
                  "At sea level, pure water boils at 100 °C; at altitude it boils at lower temperatures.")
    loose = ev("https://b.example/pasta", "How to cook pasta", "Bring a large pot of salted water to the boil.")
    r = await rank([CLAIM], [loose, on_topic], embedder=embedder, min_relevance=0.0)
    assert [x.evidence.url for x in r.items] == [on_topic.url, loose.url]
    assert r.items[0].relevance > 0.5 > r.items[1].relevance

    old = ev("https://c.example/boil-2001", "Water boiling point", "Water boils at 100 degrees Celsius at sea level.",
             published=utc(2001))
    new = ev("https://d.example/boil-2024", "Water boiling point", "Water boils at 100 degrees Celsius at sea level!",
             published=utc(2024))
    r2 = await rank([CLAIM], [old, new], embedder=embedder, now=utc(2025))
    # the same text twice: the newer copy is the one kept
    assert [x.evidence.url for x in r2.items] == [new.url]
    assert dict(r2.dropped)[old.url] == f"near-duplicate of {new.url}"


async def test_recency_and_credibility_weigh_in_the_score(embedder):
    a = ev("https://reuters.com/a", "Boiling point", "Water boils at 100 C at sea level.", published=utc(2024, 6))
    b = ev("https://someblog.example/b", "Altitude and boiling", "Water boils at lower temperatures on mountains.",
           published=utc(2010))
    r = await rank([CLAIM], [a, b], embedder=embedder, now=utc(2025))
    by = {x.evidence.url: x for x in r.items}
    for x in r.items:  # the credibility boost plus the recency tie-breaker
        assert x.score == pytest.approx(x.relevance + 0.3 * (x.credibility - 0.5) + 0.1 * (x.recency - 0.5))
    assert by[a.url].recency > by[b.url].recency and by[a.url].credibility > by[b.url].credibility


async def test_a_translation_lets_english_evidence_rank_for_a_russian_claim(embedder):
    claim_ru = "Вода кипит при 50 градусах на уровне моря."
    english = "Water boils at 50 degrees at sea level."
    item = ev("https://a.example/boiling", "Boiling point of water", "At sea level, pure water boils at 100 °C.")
    alone = await rank([claim_ru], [item], embedder=embedder, min_relevance=0.0)
    both = await rank([claim_ru, english], [item], embedder=embedder, min_relevance=0.0)
    assert both.items[0].relevance > alone.items[0].relevance
    assert both.items[0].relevance >= MIN_RELEVANCE > alone.items[0].relevance


async def test_nothing_usable(embedder):
    r = await rank([CLAIM], [ev("https://x.example/", "Home", "")], embedder=embedder)
    assert r.items == [] and r.dropped


def test_shortlist_keeps_the_lexically_best_before_anything_is_embedded():
    on_topic = [ev(f"https://site{i}.example/water-{i}", title, text) for i, (title, text) in enumerate([
        ("Boiling point of water", "Pure water boils at 100 degrees Celsius at sea level."),
        ("Why water boils at 100C", "At sea level the boiling point of water is 100 °C, not 50."),
        ("Does water boil at 50 degrees?", "No: water at sea level boils at 100 degrees Celsius."),
    ])]
    off_topic = [ev(f"https://other{i}.example/story-{i}", title, text) for i, (title, text) in enumerate([
        ("Markets today", "The stock market rose on Tuesday as traders bought banks."),
        ("Football", "The home side won the derby after a late penalty."),
        ("Elections", "Turnout in the regional vote was the highest in a decade."),
        ("Weather", "Heavy snow closed mountain passes overnight."),
        ("Cinema", "The festival opened with a three-hour historical drama."),
        ("Transport", "The new tram line carries its first passengers next month."),
    ])]
    short = shortlist([CLAIM], off_topic[:3] + on_topic + off_topic[3:], limit=3)
    assert sorted(e.url for e, _, _ in short.items) == sorted(e.url for e in on_topic)
    assert [reason for _, reason in short.dropped] == ["below the top before embedding"] * 6
    # with no more candidates than the judge takes, nothing is cut before the model sees them
    few = shortlist([CLAIM], off_topic[:2] + on_topic[:1], limit=3)
    assert len(few.items) == 3 and few.dropped == []


async def test_rank_embeds_only_the_shortlist(embedder):
    words = ["pressure", "altitude", "salt", "kettle", "steam", "bubbles", "thermometer", "mountain", "ocean",
             "laboratory", "kitchen", "physics"]
    items = [ev(f"https://site{i}.example/water-{i}", f"Boiling water and {w}",
                f"Notes on {w}: pure water boils at 100 degrees Celsius at sea level.") for i, w in enumerate(words)]
    r = await rank([CLAIM], items, embedder=embedder, limit=4)
    assert len(r.items) == 4
    assert sum(reason == "below the top before embedding" for _, reason in r.dropped) == 8
