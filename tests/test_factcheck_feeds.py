"""Fact-checkers' feeds that fill the knowledge base (docs/feeds.md): the recommended list, a feed read by
conditional GET, ClaimReview JSON-LD from the articles its items link, verdict words of Russian and Ukrainian
titles, and what a feed or a page may refuse, against local sites speaking RSS, Atom and schema.org
(tests/fakes/factcheck_sites.py), with the real knowledge base (SQLite, embedded Qdrant, the models).

One app per module; every test reads feeds at paths of its own.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from adapters.doctor import feed_rows, leaves_machine
from adapters.feeds_cli import BadRef, feeds_command, resolve
from bot.app import build_app
from bot.feeds import FeedRefresher, open_refresher
from core.watch.factcheck_feed import MAX_ATTEMPTS, NO_VERDICT
from core.ingest.feeds import split_title
from core.watch.recommended_feeds import find_recommended, load_recommended
from schema.models import FactCheck, Verdict
from storage.factcheck_feeds import FactCheckFeedStore, read_feeds
from tests.conftest import SeededDataDir, isolated_settings, subprocess_env
from tests.fakes.factcheck_sites import Article, FakeFactcheckSite

pytestmark = pytest.mark.asyncio(loop_scope="module")
ROOT = Path(__file__).resolve().parent.parent


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path, seeded: SeededDataDir):
    # The article pages are on 127.0.0.1, which the SSRF guard refuses unless the operator allows it.
    settings = isolated_settings(seeded.copy_to(tmp_path_factory.mktemp("feeds") / "data"), model_dir,
                                 fetch_allow_hosts=["127.0.0.1"], fetch_max_bytes=256 * 1024)
    async with build_app(settings) as a:
        yield a


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site():
    fake = await FakeFactcheckSite().start()
    yield fake
    await fake.stop()


def refresher_of(app):
    s = app.settings
    return open_refresher(app.kb, feeds=[], interval_minutes=60, fetch_allow_hosts=s.fetch_allow_hosts,
                          fetch_max_bytes=s.fetch_max_bytes, fetch_timeout_s=5.0)


async def factcheck(app, url: str, claim: str) -> FactCheck | None:
    wanted = FactCheck(claim=claim, url=url).id
    return (await app.db.get_factchecks([wanted])).get(wanted)


# --- the recommended list ------------------------------------------------------------------------------

async def test_the_recommended_list_is_complete_and_documented():
    feeds = load_recommended()
    names = [f.name for f in feeds]
    assert len(names) == len(set(names)) and all(n == n.lower() and " " not in n for n in names)
    assert all(f.url.startswith("https://") and f.homepage.startswith("https://") for f in feeds)
    assert all(f.format in ("rss", "atom") and f.claimreview in ("yes", "no", "unknown") and f.checked for f in feeds)
    assert {lang for f in feeds for lang in f.languages} == {"en", "ru", "uk"}
    for wanted in ("StopFake", "VoxCheck", "Проверено", "Gwara", "Детектор", "The Insider", "AFP", "Reuters",
                   "Full Fact", "Snopes", "PolitiFact", "Lead Stories"):
        assert any(wanted in f.publisher for f in feeds), wanted
    docs = (ROOT / "docs" / "feeds.md").read_text(encoding="utf-8")
    for feed in feeds:  # every feed, its address and each of its own verdict words are documented
        assert f"`{feed.name}`" in docs and feed.url in docs, feed.name
    raw = json.loads((ROOT / "core" / "data" / "recommended_feeds.json").read_text(encoding="utf-8"))
    for entry in raw["feeds"]:
        for words, verdict in entry["verdicts"].items():
            assert Verdict(verdict) and words in docs, (entry["name"], words)


async def test_a_publishers_own_words_read_its_titles_and_others_do_not():
    stopfake = find_recommended("stopfake-en")
    assert stopfake is not None and stopfake.verdict_for("Manipulation") is Verdict.MISLEADING
    assert split_title("Manipulation: Ukraine sells grain to itself", stopfake.verdict_for) == (
        "Ukraine sells grain to itself", Verdict.MISLEADING, "Manipulation")
    assert split_title("Manipulation: Ukraine sells grain to itself")[1] is None  # not a word of the shared table
    snopes = find_recommended("SNOPES")
    assert snopes is not None and snopes.verdict_for("Unfounded") is Verdict.REFUTED
    assert snopes.verdict_for("Mostly False") is Verdict.REFUTED  # the shared table behind its own
    assert find_recommended("https://www.snopes.com/feed/") == snopes and find_recommended("nobody") is None


async def test_references_name_a_recommended_feed_or_an_address():
    assert resolve("stopfake-ru").url == "https://www.stopfake.org/ru/feed/"
    assert resolve("https://checks.example/rss").name == ""
    with pytest.raises(BadRef, match="neither a recommended feed's name"):
        resolve("stopfake")


# --- reading feeds ------------------------------------------------------------------------------------

async def test_an_rss_feed_of_claimreview_articles_fills_the_knowledge_base_once(app, site):
    articles = [
        Article("/en/lemon", "Does hot lemon water cure cancer?",
                "Drinking hot water with lemon every morning cures stage four cancer within a month", "False", 1),
        Article("/en/starlings", "Did 5G masts kill starlings?",
                "5G masts killed hundreds of starlings in a Dutch park in one night", "Unfounded", page="graph"),
        Article("/en/holidays", "Are bank holidays being cancelled?",
                "The government will cancel every bank holiday in England from next year", "Missing context", 2),
        Article("/en/shark", "Did a shark swim down a flooded highway?", "A shark swam down a flooded highway",
                "False", page="broken"),
        Article("/en/moon", "Is the moon hollow?", "The moon is hollow inside", "False", page="huge"),
        Article("/en/bananas", "FALSE: Bananas are radioactive enough to set off airport scanners", page="missing"),
    ]
    site.rss("/en/rss.xml", "Example Checks", articles)
    url = site.base_url + "/en/rss.xml"
    store = FactCheckFeedStore(app.db)
    assert await store.add(url, name="snopes", by="test", now=0.0)  # Snopes' own words: "Unfounded" is false
    before = await app.kb.count()
    async with refresher_of(app) as refresher:
        report = await refresher.refresh_once(only={url})
    read = report.reads[url]
    assert read.status == "ok" and read.pages == 6
    assert read.skipped == {NO_VERDICT: 2}  # the broken JSON-LD and the page cut at the cap
    assert report.added == 4 and await app.kb.count() == before + 4
    lemon = await factcheck(app, site.base_url + "/en/lemon", articles[0].claim)
    assert lemon is not None and lemon.verdict is Verdict.REFUTED and lemon.rating_text == "False"
    assert lemon.publisher == "Example Checks" and lemon.appearances == ["https://social.example/post/1"]
    starlings = await factcheck(app, site.base_url + "/en/starlings", articles[1].claim)
    assert starlings is not None and (starlings.verdict, starlings.rating_text) == (Verdict.REFUTED, "Unfounded")
    holidays = await factcheck(app, site.base_url + "/en/holidays", articles[2].claim)
    assert holidays is not None and holidays.verdict is Verdict.MISLEADING
    bananas = await factcheck(app, site.base_url + "/en/bananas",
                              "Bananas are radioactive enough to set off airport scanners")
    assert bananas is not None and bananas.verdict is Verdict.REFUTED  # the page is gone: its title decides

    result = await app.engine.check("hot lemon water every morning cures stage 4 cancer in a month")
    assert result.matches and result.matches[0].url == site.base_url + "/en/lemon"

    # Unchanged: one 304 and not one article page more.
    pages = sum(site.hits[a.path] for a in articles)
    async with refresher_of(app) as refresher:
        again = await refresher.refresh_once(only={url})
    assert again.reads[url].status == "unchanged" and again.unchanged == 1 and again.fetched == 0
    assert sum(site.hits[a.path] for a in articles) == pages and site.not_modified >= 1
    # A new item: the feed is read again (new ETag) and only the new article's page.
    new = Article("/en/tea", "Does green tea reverse baldness?",
                  "Rubbing green tea on the scalp for a week reverses baldness", "Mostly False", 2)
    site.rss("/en/rss.xml", "Example Checks", [*articles, new])
    async with refresher_of(app) as refresher:
        third = await refresher.refresh_once(only={url})
    assert third.reads[url].pages == 1 and site.hits["/en/tea"] == 1 and third.added == 1
    stored = await store.get(url)
    assert stored is not None and stored.status == "ok" and stored.etag and stored.added == 5 and stored.skipped == 2


async def test_an_atom_feed_without_claimreview_is_read_from_its_russian_and_ukrainian_titles(app, site):
    articles = [
        Article("/ru/voda", "Фейк: В Одессе с понедельника на месяц отключат воду во всех районах города",
                page="plain", lang="ru"),
        Article("/uk/mobilizatsiia", "Маніпуляція: Мобілізацію жінок оголосять з першого квітня", page="plain",
                lang="uk"),
        Article("/ru/chesnok", "Правда ли, что чеснок защищает от гриппа?", page="plain", lang="ru"),
    ]
    site.atom("/ru/atom.xml", "Проверки", articles, lang="ru")
    url = site.base_url + "/ru/atom.xml"
    await FactCheckFeedStore(app.db).add(url, by="test", now=0.0)
    async with refresher_of(app) as refresher:
        report = await refresher.refresh_once(only={url})
    read = report.reads[url]
    assert read.status == "ok" and len(read.factchecks) == 2 and read.skipped == {NO_VERDICT: 1}
    voda = await factcheck(app, site.base_url + "/ru/voda",
                           "В Одессе с понедельника на месяц отключат воду во всех районах города")
    assert voda is not None and (voda.verdict, voda.rating_text, voda.language) == (Verdict.REFUTED, "Фейк", "ru")
    assert voda.publisher == "Проверки"
    mob = await factcheck(app, site.base_url + "/uk/mobilizatsiia", "Мобілізацію жінок оголосять з першого квітня")
    assert mob is not None and (mob.verdict, mob.language) == (Verdict.MISLEADING, "uk")
    result = await app.engine.check("С понедельника в Одессе на месяц отключат воду во всех районах")
    assert result.matches and result.matches[0].url == site.base_url + "/ru/voda"


async def test_refusals_become_statuses_and_a_busy_page_is_read_again(app, site, caplog):
    site.refuse("/gone/rss.xml", 404)
    site.refuse("/busy/rss.xml", 429)
    site.raw("/html/index.html", "<html><body><p>Not a feed at all</p></body></html>", "text/html")
    busy = Article("/slow/article", "Is a comet going to hit Kyiv on Friday?",
                   "A comet will hit Kyiv on Friday afternoon", "False", page="busy")
    site.rss("/slow/rss.xml", "Slow Checks", [busy])
    urls = {k: site.base_url + p for k, p in
            (("gone", "/gone/rss.xml"), ("busy", "/busy/rss.xml"), ("html", "/html/index.html"),
             ("slow", "/slow/rss.xml"))}
    store = FactCheckFeedStore(app.db)
    for u in urls.values():
        await store.add(u, by="test", now=0.0)
    caplog.set_level("INFO")
    async with refresher_of(app) as refresher:
        await refresher.refresh_once(only=set(urls.values()))
        got = {k: await store.get(u) for k, u in urls.items()}
        assert got["gone"].status == "not found" and "HTTP 404" in got["gone"].detail
        assert got["busy"].status == "slowed down" and got["busy"].retry_at is not None
        assert got["html"].status == "not a feed"
        assert got["slow"].status == "ok" and "1 item(s) to read next time" in got["slow"].detail
        assert got["slow"].etag == ""  # kept back while an item waits, so the next read is no 304
        assert sum("fact-check feed" in r.message and "not found" in r.message for r in caplog.records) == 1

        hits = site.hits["/busy/rss.xml"]
        for _ in range(MAX_ATTEMPTS - 1):
            await refresher.refresh_once(only=set(urls.values()))
        assert site.hits["/busy/rss.xml"] == hits, "nothing is asked of a site before its Retry-After"
        assert site.hits["/slow/article"] == MAX_ATTEMPTS and site.hits["/slow/rss.xml"] == MAX_ATTEMPTS
        slow = await store.get(urls["slow"])
        assert slow.status == "ok" and slow.skipped == 1 and slow.etag  # decided by its title, at last
        # A status that does not change logs nothing more.
        assert sum("fact-check feed" in r.message and "not found" in r.message for r in caplog.records) == 1
        rows = {r.service: r for r in feed_rows(app.settings)}
        assert rows[f"feed {urls['gone']}"].status == "warn" and rows[f"feed {urls['slow']}"].status == "ok"


async def test_the_cli_beside_a_running_bot_only_changes_the_list(app, site, capsys):
    """This module's app holds the data dir, as `tipline run` would: `add` records, the running refresher reads."""
    site.rss("/cli/rss.xml", "CLI Checks", [Article("/cli/one", "Is the Eiffel Tower being sold for scrap?",
                                                    "The Eiffel Tower will be sold for scrap metal next year",
                                                    "False", 1)])
    url = site.base_url + "/cli/rss.xml"
    assert await feeds_command("add", [url, "no-such-feed"], app.settings) == 1
    out = capsys.readouterr().out
    assert "neither a recommended feed's name" in out and f"Added {url}: the running tipline reads it within 30 s." in out
    assert await feeds_command("add", [url], app.settings) == 1
    assert "is read already" in capsys.readouterr().out
    refresher = FeedRefresher(app.kb, [], store=FactCheckFeedStore(app.db), reader=object())  # type: ignore[arg-type]
    assert url in [f.url for f in await refresher.due(now=1e12)]
    assert await feeds_command("list", [], app.settings) == 0
    assert f"{url} — not read yet" in capsys.readouterr().out
    assert "fact-checkers' feed(s) are read from their sites" in leaves_machine(app.settings)
    assert await feeds_command("remove", [url], app.settings) == 0
    assert url not in [f.url for f in read_feeds(app.settings.sqlite_path)]
    assert await feeds_command("list", [], app.settings, recommended=True) == 0
    assert "stopfake-ru" in capsys.readouterr().out


async def test_tipline_feeds_add_then_an_offline_check_finds_the_fact_check(tmp_path, model_dir, seeded, site):
    site.rss("/proc/rss.xml", "Process Checks", [
        Article("/proc/salt", "Does salt water cure a cold?", "Gargling sea salt water three times a day cures the "
                "common cold overnight", "False", 1)])
    data = seeded.copy_to(tmp_path / "data")
    env = subprocess_env(model_dir, TIPLINE_DATA_DIR=str(data), TIPLINE_FETCH_ALLOW_HOSTS="127.0.0.1",
                         PYTHONPATH=str(ROOT))

    async def tipline(*argv: str, **extra: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "adapters.main", *argv, env=env | extra,
                                                    cwd=tmp_path, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
        return proc.returncode or 0, out.decode()

    code, out = await tipline("feeds", "add", site.base_url + "/proc/rss.xml", site.base_url + "/proc/missing.xml")
    assert code == 1, out
    assert f"Added {site.base_url}/proc/rss.xml — ok" in out and "1 fact-check(s) read" in out
    assert f"{site.base_url}/proc/missing.xml not added: the site has no feed at this address (HTTP 404; moved or retired?)." in out
    code, out = await tipline("check", "gargling salt water 3 times a day cures a cold overnight",
                              TIPLINE_OFFLINE="true")
    assert code == 0, out
    assert f"{site.base_url}/proc/salt" in out
