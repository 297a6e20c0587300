"""Every ingestion format on small hand-written fixtures: good rows, bad rows (with positions), bad files."""

from __future__ import annotations

import json
from datetime import date

import pytest

from core.ingest import IngestFormatError, ParsedRow, detect_format, parse_bytes
from core.ingest.feeds import split_title
from core.ingest.fields import clean_text, language_code, parse_date
from schema.models import FactCheck, Verdict


def good(rows: list[ParsedRow]) -> list[FactCheck]:
    return [r.factcheck for r in rows if r.ok and r.factcheck is not None]


def errors(rows: list[ParsedRow]) -> list[tuple[int | None, str]]:
    return [(r.line, r.error) for r in rows if r.error]


# --- ClaimReview -----------------------------------------------------------------------------------

CLAIMREVIEW = {
    "@context": "https://schema.org",
    "@type": "ClaimReview",
    "@id": "https://checkers.example.org/2021/04/wind-turbines-frozen#review",
    "url": "https://checkers.example.org/2021/04/wind-turbines-frozen",
    "name": "Frozen wind turbines did <em>not</em> cause the state&#8217;s blackout",
    "claimReviewed": "  Frozen wind turbines caused\nthe February blackout ",
    "datePublished": "2021-04-02T18:45:00-05:00",
    "inLanguage": "en-US",
    "author": {"@type": "Organization", "name": "Checkers Desk", "url": "https://checkers.example.org"},
    "reviewRating": {"@type": "Rating", "alternateName": "Mostly False", "ratingValue": "2",
                     "bestRating": "5", "worstRating": "1"},
    "itemReviewed": {
        "@type": "Claim",
        "author": {"@type": "Person", "name": "A. State Senator"},
        "firstAppearance": {"@type": "CreativeWork", "url": "https://social.example.com/p/111"},
        "appearance": [{"@type": "CreativeWork", "url": "https://video.example.net/watch?v=abc"},
                       "https://social.example.com/p/111"],
    },
}


def test_claimreview_single_object_all_fields() -> None:
    rows = parse_bytes("review.json", json.dumps(CLAIMREVIEW).encode())
    assert errors(rows) == []
    (fc,) = good(rows)
    assert fc.claim == "Frozen wind turbines caused the February blackout"
    assert fc.title == "Frozen wind turbines did not cause the state\u2019s blackout"
    assert fc.url == "https://checkers.example.org/2021/04/wind-turbines-frozen"
    assert fc.publisher == "Checkers Desk"
    assert fc.published_at == date(2021, 4, 2)  # the publisher's local date, not UTC's April 3rd
    assert fc.rating_text == "Mostly False"
    assert fc.verdict is Verdict.REFUTED
    assert fc.language == "en"
    assert fc.claimant == "A. State Senator"
    assert fc.appearances == ["https://social.example.com/p/111", "https://video.example.net/watch?v=abc"]
    assert fc.source_id == CLAIMREVIEW["@id"]
    assert rows[0].line == 1


def _review(claim: str | None, rating: dict, **extra: object) -> dict:
    obj = {"@type": "ClaimReview", "url": f"https://fc.example/{abs(hash(claim)) % 1000}",
           "author": {"@type": "Organization", "name": "FC"}, "reviewRating": rating, **extra}
    if claim is not None:
        obj["claimReviewed"] = claim
    return obj


def test_claimreview_list_graph_and_numeric_rating() -> None:
    doc = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebPage", "name": "ignored"},
        _review("Drinking hot water cures the flu", {"ratingValue": 1, "bestRating": 5, "worstRating": 1}),
        _review("The bridge opened in 1932", {"ratingValue": "5"}),
    ]}
    rows = parse_bytes("graph.jsonld", json.dumps(doc).encode())
    assert [(r.line, r.factcheck.verdict if r.factcheck else None) for r in rows] == [
        (1, Verdict.REFUTED), (2, Verdict.SUPPORTED)]
    rows = parse_bytes("list.json", json.dumps([_review("A", {"alternateName": "Sátira"}),
                                                  _review("B", {"alternateName": "Engañoso"})]).encode())
    assert [fc.verdict for fc in good(rows)] == [Verdict.NOT_CHECKABLE, Verdict.MISLEADING]


def test_claimreview_datafeed_dump_with_bad_record() -> None:
    feed = {
        "@context": "https://schema.org", "@type": "DataFeed", "name": "Reviews dump",
        "dataFeedElement": [
            {"@type": "DataFeedItem", "item": [
                _review("Vaccines contain tracking chips", {"alternateName": "Falso"}, inLanguage="es",
                        datePublished="2021-06-07"),
            ]},
            {"@type": "DataFeedItem", "item": [
                _review(None, {"alternateName": "False"}),  # no claimReviewed: reported, skipped
                _review("The lake dried up in 2019", {"alternateName": "Wrong"}, datePublished="last year"),
                {"@type": ["ClaimReview"], "claimReviewed": "Typed as a list", "reviewRating": {"alternateName": "True"},
                 "url": "https://fc.example/list-type"},
            ]},
        ],
    }
    rows = parse_bytes("dump.json", json.dumps(feed).encode())
    assert [r.line for r in rows] == [1, 2, 3, 4]
    assert errors(rows) == [(2, "ClaimReview #2: missing claim text"),
                            (3, "ClaimReview #3: unreadable date 'last year'")]
    first, last = good(rows)
    assert (first.claim, first.language, first.published_at, first.verdict) == (
        "Vaccines contain tracking chips", "es", date(2021, 6, 7), Verdict.REFUTED)
    assert (last.claim, last.verdict) == ("Typed as a list", Verdict.SUPPORTED)


HTML_PAGE = """<!DOCTYPE html>
<html lang="fr"><head><title>Vérification</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Organization","name":"Les Vérificateurs"}</script>
<script type='application/ld+json'>
//<![CDATA[
{"@context":"https://schema.org","@type":"ClaimReview",
 "url":"https://verif.example.fr/2022/01/pain","claimReviewed":"Le prix du pain a triplé en un an",
 "author":{"@type":"Organization","url":"https://verif.example.fr"},
 "datePublished":"12 January 2022","inLanguage":"fr",
 "reviewRating":{"@type":"Rating","alternateName":"Plutôt faux"},
 "itemReviewed":{"@type":"Claim","author":{"@type":"Person","name":"Un député"}}}
//]]>
</script>
<script type="application/ld+json">{ this is broken json </script>
</head><body><p>Article…</p></body></html>"""


def test_claimreview_from_html_page() -> None:
    assert detect_format("page.html", HTML_PAGE.encode()) == "claimreview"
    rows = parse_bytes("page.html", HTML_PAGE.encode())
    (fc,) = good(rows)
    assert fc.claim == "Le prix du pain a triplé en un an"
    assert fc.verdict is Verdict.REFUTED
    assert fc.publisher == "verif.example.fr"  # no author name: the site's host stands in
    assert fc.published_at == date(2022, 1, 12)
    assert fc.language == "fr"
    assert fc.claimant == "Un député"


def test_claimreview_whole_file_errors() -> None:
    with pytest.raises(IngestFormatError, match="not valid JSON"):
        parse_bytes("x.json", b'{"@type": "ClaimReview", ')
    with pytest.raises(IngestFormatError, match="no ClaimReview"):
        parse_bytes("x.json", b'{"@type": "WebPage", "name": "nothing here"}')
    with pytest.raises(IngestFormatError, match="ld\\+json"):
        parse_bytes("x.html", b"<!doctype html><html><body>No structured data</body></html>")


# --- Fact Check Tools API ----------------------------------------------------------------------------

API_RESPONSE = {
    "claims": [
        {
            "text": "A new law bans cash payments over &quot;$500&quot;",
            "claimant": "Viral post",
            "claimDate": "2023-02-27T00:00:00Z",
            "claimReview": [
                {"publisher": {"name": "Verify Team", "site": "verify.example.com"},
                 "url": "https://verify.example.com/cash-ban", "title": "No, cash over $500 is not banned",
                 "reviewDate": "2023-03-01T12:00:00Z", "textualRating": "False", "languageCode": "en"},
                {"publisher": {"site": "checagem.example.br"},
                 "url": "https://checagem.example.br/dinheiro", "title": "Lei não proíbe pagamentos",
                 "reviewDate": "2023-03-02T09:00:00Z", "textualRating": "Enganoso", "languageCode": "pt-BR"},
            ],
        },
        {"text": "Claim without any review", "claimReview": []},
        {"text": "Bad review date", "claimReview": [
            {"publisher": {"name": "X"}, "url": "https://x.example/1", "reviewDate": "someday",
             "textualRating": "True"}]},
    ],
    "nextPageToken": "CAo",
}


def test_factcheck_api_one_factcheck_per_review() -> None:
    data = json.dumps(API_RESPONSE).encode()
    assert detect_format("search.json", data) == "factcheck_api"
    rows = parse_bytes("search.json", data)
    first, second = good(rows)
    assert first.claim == 'A new law bans cash payments over "$500"'
    assert (first.publisher, first.verdict, first.published_at, first.claimant, first.title) == (
        "Verify Team", Verdict.REFUTED, date(2023, 3, 1), "Viral post", "No, cash over $500 is not banned")
    assert (second.publisher, second.verdict, second.language) == ("checagem.example.br", Verdict.MISLEADING, "pt")
    assert first.id != second.id
    assert errors(rows) == [(2, "claim #2: no claimReview"),
                            (3, "claim #3, review 1: unreadable date 'someday'")]


def test_factcheck_api_pages_in_a_list() -> None:
    pages = [API_RESPONSE, {"claims": [{"text": "Page two claim", "claimReview": [
        {"publisher": {"name": "P"}, "url": "https://p.example/2", "textualRating": "Half True"}]}]}]
    rows = parse_bytes("pages.json", json.dumps(pages).encode())
    assert [(r.line, r.factcheck.verdict) for r in rows if r.ok][-1] == (4, Verdict.MIXED)


PAGE_TWO = {"claims": [{"text": "Зеленський втік з Києва", "claimReview": [
    {"publisher": {"site": "stopfake.org"}, "url": "https://www.stopfake.org/uk/x", "textualRating": "Фейк",
     "languageCode": "uk"}]}]}


def test_factcheck_api_pages_end_with_the_empty_answer_past_the_last_page() -> None:
    rows = parse_bytes("pages.json", json.dumps([API_RESPONSE, PAGE_TWO, {}], ensure_ascii=False).encode())
    assert [r.factcheck.verdict for r in rows if r.ok] == [Verdict.REFUTED, Verdict.MISLEADING, Verdict.REFUTED]


def test_factcheck_api_one_response_per_line() -> None:
    text = "\n".join(json.dumps(p, ensure_ascii=False) for p in (API_RESPONSE, PAGE_TWO, {})) + "\n"
    for name in ("pages.jsonl", "pages.json"):
        assert detect_format(name, text.encode()) == "factcheck_api"
        rows = parse_bytes(name, text.encode())
        assert [r.factcheck.claim for r in rows if r.ok][-1] == "Зеленський втік з Києва"
    broken = text + "{not json\n"
    with pytest.raises(IngestFormatError, match="line 4"):
        parse_bytes("pages.jsonl", broken.encode())


# --- CSV / TSV / JSONL ---------------------------------------------------------------------------------

CSV_TEXT = (
    "Claim Reviewed,Review URL,Rating,Publisher,Date,Language,Title\r\n"
    '"The city banned bicycles\r\non weekends",https://local.example/bikes,Pants on Fire,Local Check,2022-05-01,en,"Bikes, banned?"\r\n'
    ",https://local.example/empty,False,Local Check,2022-05-02,en,No claim here\r\n"
    "Tap water contains <b>lithium</b>,https://local.example/lithium,Unproven,Local Check,May 3 2022,en,\r\n"
    "Bread prices doubled,https://local.example/bread,Mostly True,Local Check,31/02/2022,en,\r\n"
    "\r\n"
    "Schools close in June,https://local.example/schools,Correct,Local Check,\"June 9, 2022\",en,,extra\r\n"
    "Trains run on time,https://local.example/trains,Mixed,Local Check,2022-06-10,en\r\n"
)


def test_csv_with_bom_multiline_cells_and_bad_rows() -> None:
    data = b"\xef\xbb\xbf" + CSV_TEXT.encode()
    assert detect_format("export.csv", data) == "csv"
    rows = parse_bytes("export.csv", data)
    assert errors(rows) == [
        (4, "line 4: missing claim text"),
        (6, "line 6: unreadable date '31/02/2022'"),
        (8, "line 8: 8 fields but the header has 7"),
    ]
    bikes, lithium, trains = good(rows)
    assert rows[0].line == 2
    assert bikes.claim == "The city banned bicycles on weekends"
    assert (bikes.url, bikes.verdict, bikes.publisher, bikes.title) == (
        "https://local.example/bikes", Verdict.REFUTED, "Local Check", "Bikes, banned?")
    assert (lithium.claim, lithium.published_at, lithium.verdict) == (
        "Tap water contains lithium", date(2022, 5, 3), Verdict.NOT_ENOUGH_EVIDENCE)
    assert (trains.verdict, rows[-1].line) == (Verdict.MIXED, 9)


def test_tsv_and_semicolon_csv() -> None:
    tsv = "claim\trating\tdate\turl\nМост построили за месяц\tЛожь\t01.02.2023\thttps://p.example/most\n".encode()
    assert detect_format("ru.tsv", tsv) == "tsv"
    (fc,) = good(parse_bytes("ru.tsv", tsv))
    assert (fc.claim, fc.verdict, fc.published_at) == ("Мост построили за месяц", Verdict.REFUTED, date(2023, 2, 1))
    semi = "text;verdict;lang;link\nDer Zug fährt nie pünktlich;Irreführend;de;https://f.example/zug\n".encode()
    (fc,) = good(parse_bytes("de.csv", semi))
    assert (fc.claim, fc.verdict, fc.language) == ("Der Zug fährt nie pünktlich", Verdict.MISLEADING, "de")


def test_csv_column_mapping() -> None:
    data = (b"aussage,bewertung,quelle,wann,links,artikel\nEnergy bills fell 40%,Falsch,Faktenteam,2023-01-05,"
            b"https://a.example/1 https://b.example/2,https://faktenteam.example/energie\n")
    mapping = {"claim": "Aussage", "rating_text": "bewertung", "publisher": "quelle", "date": "wann",
               "appearances": "links", "url": "artikel"}
    (fc,) = good(parse_bytes("map.csv", data, mapping))
    assert (fc.claim, fc.verdict, fc.publisher, fc.published_at, fc.appearances) == (
        "Energy bills fell 40%", Verdict.REFUTED, "Faktenteam", date(2023, 1, 5),
        ["https://a.example/1", "https://b.example/2"])
    with pytest.raises(IngestFormatError, match="'nope'.*not in the header"):
        parse_bytes("map.csv", data, {"claim": "nope"})
    with pytest.raises(IngestFormatError, match="unknown field"):
        parse_bytes("map.csv", data, {"colour": "aussage"})
    with pytest.raises(IngestFormatError, match="No claim column"):
        parse_bytes("map.csv", data)


def test_csv_numeric_rating_columns() -> None:
    data = (b"claim,ratingValue,bestRating,worstRating,url\nThe dam is leaking,1,5,1,https://d.example/1\n"
            b"The dam is new,5,5,1,https://d.example/2\n")
    assert [fc.verdict for fc in good(parse_bytes("n.csv", data))] == [Verdict.REFUTED, Verdict.SUPPORTED]


def test_jsonl_rows_bad_lines_and_claimreview_lines() -> None:
    lines = [
        json.dumps({"claimReviewed": "Eggs cause baldness", "textualRating": "Hoax", "url": "https://e.example/1",
                    "date": "2020-03-01T08:00:00Z"}),
        "",
        "{not json",
        json.dumps({"rating": "True"}),
        json.dumps(["a", "list"]),
        json.dumps(_review("Moon landing filmed in a studio", {"alternateName": "Four Pinocchios"},
                           url="https://wp.example/moon",
                           itemReviewed={"@type": "Claim", "appearance": [{"url": "https://v.example/m"}]})),
        # U+2028 unescaped inside a string must not split the line
        json.dumps({"text": "Rain\u2028tomorrow", "verdict": "Research in progress", "link": "https://r.example/1"},
                   ensure_ascii=False),
    ]
    data = ("\n".join(lines) + "\n").encode()
    assert detect_format("dump.jsonl", data) == "jsonl"
    rows = parse_bytes("dump.jsonl", data)
    assert errors(rows) == [(3, "line 3: invalid JSON (Expecting property name enclosed in double quotes)"),
                            (4, "line 4: missing claim text"), (5, "line 5: not a JSON object")]
    eggs, moon, rain = good(rows)
    assert (eggs.claim, eggs.verdict, eggs.published_at) == ("Eggs cause baldness", Verdict.REFUTED, date(2020, 3, 1))
    assert (moon.verdict, moon.appearances) == (Verdict.REFUTED, ["https://v.example/m"])
    assert (rain.claim, rain.verdict) == ("Rain tomorrow", Verdict.NOT_ENOUGH_EVIDENCE)
    assert [r.line for r in rows] == [1, 3, 4, 5, 6, 7]


def test_jsonl_with_mapping_and_json_array_of_records() -> None:
    data = (b'{"q": "Parks close at 6pm", "r": "Correct", "u": "https://p.example/6"}\n'
            b'{"q": "Parks close at noon", "r": "Incorrect", "u": "https://p.example/12"}\n')
    mapping = {"claim": "q", "rating_text": "r", "url": "u"}
    assert [fc.verdict for fc in good(parse_bytes("m.jsonl", data, mapping))] == [Verdict.SUPPORTED, Verdict.REFUTED]
    array = json.dumps([{"claim": "Buses are free", "rating": "Satire", "url": "https://s.example/bus"},
                        {"rating": "False"}]).encode()
    assert detect_format("records.json", array) == "json_rows"
    rows = parse_bytes("records.json", array)
    assert good(rows)[0].verdict is Verdict.NOT_CHECKABLE
    assert errors(rows) == [(2, "record 2: missing claim text")]


# --- RSS / Atom -----------------------------------------------------------------------------------------

RSS = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel>
<title>The Check Desk &amp; Co</title><link>https://desk.example.org</link><language>en-gb</language>
<item><title>Fact Check: FALSE: Photo shows flooded airport in 2024</title>
  <link>https://desk.example.org/airport</link><guid>desk-1</guid>
  <pubDate>Mon, 04 Mar 2024 23:15:00 -0500</pubDate>
  <description>&lt;p&gt;The photo is from a 2012 storm.&lt;/p&gt;</description></item>
<item><title>[Misleading] Chart of bread prices leaves out inflation</title>
  <link>https://desk.example.org/bread</link><pubDate>Tue, 05 Mar 2024 10:00:00 GMT</pubDate></item>
<item><title>Did the mayor ban scooters?</title><link>https://desk.example.org/scooters</link>
  <category>Politics</category><category>Half True</category><pubDate>not a date</pubDate></item>
<item><title>Claim: a comet will hit in May</title><link>https://desk.example.org/comet</link>
  <description>It is true that a comet exists. Our rating: Pants on Fire. Nothing will hit.</description></item>
<item><title>Senator says taxes went up</title><link>https://desk.example.org/taxes</link>
  <description>It is true that the senator said it; we explain the numbers.</description></item>
<item><link>https://desk.example.org/untitled</link></item>
</channel></rss>"""


def test_rss_feed_entries() -> None:
    data = RSS.encode()
    assert detect_format("feed.xml", data) == "feed"
    rows = parse_bytes("feed.xml", data)
    # An entry that rates nothing is not a fact-check tipline could cite: refused, with the reason.
    assert errors(rows) == [(5, "entry #5: no rating"), (6, "entry #6: no title")]
    assert [r.reason for r in rows if r.error] == ["no rating", "no title"]
    airport, bread, scooters, comet = good(rows)
    assert (airport.claim, airport.title, airport.verdict, airport.rating_text) == (
        "Photo shows flooded airport in 2024", "Fact Check: FALSE: Photo shows flooded airport in 2024",
        Verdict.REFUTED, "FALSE")
    assert (airport.url, airport.publisher, airport.language, airport.source_id, airport.published_at) == (
        "https://desk.example.org/airport", "The Check Desk & Co", "en", "desk-1", date(2024, 3, 4))
    assert (bread.claim, bread.verdict, bread.published_at) == (
        "Chart of bread prices leaves out inflation", Verdict.MISLEADING, date(2024, 3, 5))
    assert (scooters.verdict, scooters.rating_text, scooters.published_at) == (Verdict.MIXED, "Half True", None)
    assert (comet.claim, comet.verdict) == ("a comet will hit in May", Verdict.REFUTED)
    # A stray "true" in prose is not a rating: the taxes entry (#5) is the one refused above.


ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="ru">
<title>Проверка фактов</title><id>urn:x:feed</id><updated>2024-01-02T00:00:00Z</updated>
<entry><title>Фейк: в магазинах закончилась гречка</title><id>urn:x:1</id>
  <link href="https://proverka.example/grechka"/><updated>2024-01-02T21:30:00+03:00</updated></entry>
</feed>"""


def test_atom_feed_language_and_prefix_in_russian() -> None:
    (fc,) = good(parse_bytes("feed.atom", ATOM.encode()))
    assert (fc.claim, fc.verdict, fc.language, fc.publisher, fc.url, fc.published_at) == (
        "в магазинах закончилась гречка", Verdict.REFUTED, "ru", "Проверка фактов",
        "https://proverka.example/grechka", date(2024, 1, 2))


def test_latin1_feed_with_declared_encoding() -> None:
    data = ('<?xml version="1.0" encoding="ISO-8859-1"?><rss version="2.0"><channel><title>Vérifié</title>'
            "<item><title>Faux : la tour Eiffel sera démontée</title><link>https://v.example/t</link></item>"
            "</channel></rss>").encode("latin-1")
    (fc,) = good(parse_bytes("latin.rss", data))
    assert (fc.claim, fc.verdict, fc.publisher) == ("la tour Eiffel sera démontée", Verdict.REFUTED, "Vérifié")


@pytest.mark.parametrize(
    ("title", "claim", "verdict"),
    [
        ("FALSE: 5G spreads viruses", "5G spreads viruses", Verdict.REFUTED),
        ("Fact-check | Mostly true: unemployment fell", "unemployment fell", Verdict.SUPPORTED),
        ("Biden: 'We will win'", "Biden: 'We will win'", None),
        ("COVID-19 - what we know", "COVID-19 - what we know", None),
        ("(Satire) Town elects a cat", "Town elects a cat", Verdict.NOT_CHECKABLE),
    ],
)
def test_feed_title_prefixes(title: str, claim: str, verdict: Verdict | None) -> None:
    got_claim, got_verdict, _ = split_title(title)
    assert (got_claim, got_verdict) == (claim, verdict)


# --- whole-file checks, detection, field helpers ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("x.csv", b"", "is empty"),
        ("x.csv", b"  \n\t\n", "is empty"),
        ("x.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("x.csv", "claim,rating\nhé,False\n".encode("utf-16"), "UTF-16"),
        ("x.csv", "claim,rating\nCafé prices,False\n".encode("latin-1"), "not UTF-8 text \\(byte 0xE9 on line 2\\)"),
        ("x.txt", b"just some words without structure\n", "not in a recognised format"),
        ("x.xml", b"<?xml version='1.0'?><catalog><book/></catalog>", "XML but not an RSS or Atom feed"),
        ("x.json", b'{"hello": "world"}', "holds no ClaimReview"),
        ("x.jsonl", b"nope\nstill nope\n", "No line of the file is valid JSON"),
        ("x.csv", b"\n\n", "is empty"),
    ],
)
def test_whole_file_errors(name: str, data: bytes, message: str) -> None:
    with pytest.raises(IngestFormatError, match=message):
        parse_bytes(name, data)


def test_size_cap() -> None:
    data = b"claim,rating\n" + b"A claim,False\n" * 100
    assert len(parse_bytes("big.csv", data, max_bytes=len(data))) == 100
    with pytest.raises(IngestFormatError, match="over the"):
        parse_bytes("big.csv", data, max_bytes=len(data) - 1)
    with pytest.raises(IngestFormatError, match="over the"):
        detect_format("big.csv", data, max_bytes=10)


def test_detection_by_content_not_extension() -> None:
    assert detect_format("upload.txt", json.dumps(CLAIMREVIEW).encode()) == "claimreview"
    assert detect_format("upload.txt", json.dumps(API_RESPONSE).encode()) == "factcheck_api"
    assert detect_format("upload", RSS.encode()) == "feed"
    assert detect_format("upload.json", b'{"claim": "a"}\n{"claim": "b"}\n') == "jsonl"
    assert detect_format("upload.txt", b"claim\trating\nx\tFalse\n") == "tsv"
    assert detect_format("upload.txt", b"claim,rating\nx,False\n") == "csv"


def test_field_helpers() -> None:
    assert clean_text("<p>Tom &amp;amp; Jerry\u00a0<br/>are\u200b  <script>x()</script>friends</p>") == "Tom & Jerry are friends"
    assert parse_date("Tue, 03 Mar 2020 18:30:00 GMT") == date(2020, 3, 3)
    assert parse_date("2020-03-01T23:59:59Z") == date(2020, 3, 1)
    assert parse_date("March 3, 2020") == date(2020, 3, 3)
    assert parse_date("") is None
    assert language_code("pt-BR") == "pt" and language_code("English") == "en"
    assert language_code({"@type": "Language", "name": "Spanish", "alternateName": "es"}) == "es"
    assert language_code("not a language") is None


# --- half-facts: a claim without its verdict, or a verdict without its article --------------------------

HALF_FACTS_CSV = (
    "claim,rating,url\n"
    "Tea cures colds,False,https://ok.example/tea\n"
    "Tea causes colds,,https://ok.example/tea2\n"
    "Tea is banned in Wales,False,\n"
    "Tea was invented in 1990,,\n"
)


def test_rows_without_a_rating_or_without_a_source_url_are_refused_with_line_and_reason() -> None:
    rows = parse_bytes("half.csv", HALF_FACTS_CSV.encode())
    assert [fc.claim for fc in good(rows)] == ["Tea cures colds"]
    assert errors(rows) == [(3, "line 3: no rating"), (4, "line 4: rating without a source URL"),
                            (5, "line 5: no rating")]


def test_claimreview_and_fact_check_api_items_without_a_link_or_rating_are_refused() -> None:
    no_url = {k: v for k, v in CLAIMREVIEW.items() if k not in ("url", "@id")}
    no_rating = {**CLAIMREVIEW, "reviewRating": {"@type": "Rating"}}
    rows = parse_bytes("reviews.json", json.dumps([CLAIMREVIEW, no_url, no_rating]).encode())
    assert len(good(rows)) == 1
    assert errors(rows) == [(2, "ClaimReview #2: rating without a source URL"), (3, "ClaimReview #3: no rating")]
    api = {"claims": [{"text": "Snow is hot", "claimReview": [
        {"publisher": {"name": "A"}, "url": "https://a.example/snow", "textualRating": "False"},
        {"publisher": {"name": "B"}, "textualRating": "False"},
        {"publisher": {"name": "C"}, "url": "https://c.example/snow"}]}]}
    rows = parse_bytes("api.json", json.dumps(api).encode())
    assert [fc.publisher for fc in good(rows)] == ["A"]
    assert [r.reason for r in rows if r.error] == ["rating without a source URL", "no rating"]


async def test_the_ingest_summary_counts_skipped_rows_and_why(app, tmp_path) -> None:
    from bot.ingest_files import ingest_source

    path = tmp_path / "half.csv"
    path.write_text(HALF_FACTS_CSV, encoding="utf-8")
    report = await ingest_source(app.kb, str(path))
    assert (report.added, report.skipped) == (1, 3)
    assert report.reasons == {"no rating": 2, "rating without a source URL": 1}
    assert report.summary() == "1 new, 0 updated, 3 skipped (2 no rating, 1 rating without a source URL)"
    assert report.errors[0] == f"{path}:3: line 3: no rating"
    stored = await app.db.factchecks_by_urls(["https://ok.example/tea", "https://ok.example/tea2"])
    assert [fc.claim for fc in stored] == ["Tea cures colds"]
