"""`tipline feeds add|list|remove|refresh`: the fact-checkers' feeds that fill the knowledge base (docs/feeds.md).

Nothing is fetched until an operator asks. `add` takes names from the recommended list
(core/data/recommended_feeds.json; `--recommended` for all of them) or any feed's address. With the data dir
free, each added feed is read at once and its fact-checks land in the knowledge base; a feed that turns out
not to exist, to refuse tipline or not to be a feed is refused with its reason (one that is only down for now
is kept and read again on schedule). While `tipline run` holds the data dir (embedded Qdrant allows one
process), only the list changes, and the running bot reads a new feed within `TICK_S`. `list` and `remove`
only touch SQLite, so they work beside a running bot; a removed feed's fact-checks stay in the knowledge base.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.settings import Settings
from core.watch.recommended_feeds import find_recommended, load_recommended
from storage.sqlite import Database
from storage.vectors import DataDirInUse

EXIT_FAILED = 1
EXIT_USAGE = 2
REFUSED = ("not found", "refused", "not a feed", "too large")  # a first read that says the address is wrong


@dataclass(frozen=True)
class FeedRef:
    url: str
    name: str = ""  # its name in the recommended list, if it is there


class BadRef(ValueError):
    """`str(exc)` says, in one sentence, why the text names no feed."""


def resolve(ref: str) -> FeedRef:
    """A recommended feed's name (or address), or any http(s) address; BadRef otherwise."""
    text = ref.strip().strip("<>")
    found = find_recommended(text)
    if found is not None:
        return FeedRef(found.url, found.name)
    if text.lower().startswith(("http://", "https://")) and len(text) > 10 and " " not in text:
        return FeedRef(text)
    raise BadRef(f"“{ref}” is neither a recommended feed's name (see `tipline feeds list --recommended`) "
                 "nor a feed's http(s) address.")


async def feeds_command(action: str, refs: Sequence[str], settings: Settings, *, recommended: bool = False) -> int:
    if action == "list":
        return _list_recommended() if recommended else _list(settings)
    if action == "remove":
        return await _remove(settings, refs)
    if action == "add":
        if recommended:
            refs = [f.name for f in load_recommended()] + list(refs)
        if not refs:
            print("Name the feeds to add (`tipline feeds add stopfake-ru snopes`, or an address), or add every "
                  "recommended one with `tipline feeds add --recommended`.")
            return EXIT_USAGE
        return await _add(settings, refs)
    return await _refresh(settings)


def _list_recommended() -> int:
    for feed in load_recommended():
        print(f"{feed.name:18} {feed.publisher} ({', '.join(feed.languages)}) {feed.url}")
    print("Add them all with `tipline feeds add --recommended`, or some by name; what each is: docs/feeds.md.")
    return 0


def _list(settings: Settings) -> int:
    from bot.feeds import describe_feed
    from storage.factcheck_feeds import read_feeds

    feeds = read_feeds(settings.sqlite_path)
    if not feeds:
        print("No fact-checkers' feeds are read: `tipline feeds add --recommended` adds the curated list "
              "(`tipline feeds list --recommended` shows it), `tipline feeds add <address>` any other.")
        return 0
    now = time.time()
    for feed in feeds:
        print(describe_feed(feed, now) + (" (not read: TIPLINE_OFFLINE=true)" if settings.offline else ""))
    return 0


async def _remove(settings: Settings, refs: Sequence[str]) -> int:
    from storage.factcheck_feeds import FactCheckFeedStore

    lines: list[str] = []
    failed = False
    db = await Database.open(settings.sqlite_path)
    try:
        store = FactCheckFeedStore(db)
        for ref in refs:
            try:
                feed = resolve(ref)
            except BadRef as exc:
                lines.append(str(exc))
                failed = True
                continue
            if await store.remove(feed.url):
                lines.append(f"Stopped reading {feed.name or feed.url}; the fact-checks it brought stay in the "
                             "knowledge base.")
            else:
                lines.append(f"{feed.name or feed.url} is not among the feeds read.")
                failed = True
    finally:
        await db.close()
    print("\n".join(lines))
    return EXIT_FAILED if failed else 0


async def _add(settings: Settings, refs: Sequence[str]) -> int:
    resolved: list[FeedRef] = []
    lines: list[str] = []
    for ref in refs:
        try:
            feed = resolve(ref)
        except BadRef as exc:
            lines.append(str(exc))
            continue
        if feed.url not in (f.url for f in resolved):
            resolved.append(feed)
    failed = bool(lines)
    try:
        added, read_lines, refused = await _add_and_read(settings, resolved)
    except DataDirInUse:
        added, read_lines, refused = await _add_rows(settings, resolved)
    lines += read_lines
    print("\n".join(lines))
    return EXIT_FAILED if failed or refused or not added and resolved else 0


async def _add_rows(settings: Settings, feeds: Sequence[FeedRef]) -> tuple[int, list[str], int]:
    """A running bot holds the data dir: record the feeds; it reads them within TICK_S."""
    from bot.feeds import TICK_S
    from storage.factcheck_feeds import FactCheckFeedStore

    lines: list[str] = []
    added = 0
    db = await Database.open(settings.sqlite_path)
    try:
        store = FactCheckFeedStore(db)
        for feed in feeds:
            if await store.add(feed.url, name=feed.name, by="cli", now=time.time()):
                added += 1
                lines.append(f"Added {_label(feed)}: the running tipline reads it within {TICK_S:g} s"
                             + (" (not while TIPLINE_OFFLINE=true)." if settings.offline else "."))
            else:
                lines.append(f"{_label(feed)} is read already.")
    finally:
        await db.close()
    return added, lines, 0


async def _add_and_read(settings: Settings, feeds: Sequence[FeedRef]) -> tuple[int, list[str], int]:
    from bot.app import build_app
    from bot.feeds import describe_feed, open_refresher
    from storage.factcheck_feeds import FactCheckFeedStore

    lines: list[str] = []
    async with build_app(settings) as app:
        store = FactCheckFeedStore(app.db)
        new = []
        for feed in feeds:
            if await store.add(feed.url, name=feed.name, by="cli", now=time.time()):
                new.append(feed)
            else:
                lines.append(f"{_label(feed)} is read already.")
        if settings.offline:
            lines += [f"Added {_label(f)}; nothing is read while TIPLINE_OFFLINE=true." for f in new]
            return len(new), lines, 0
        if not new:
            return 0, lines, 0
        async with open_refresher(app.kb, feeds=[], interval_minutes=settings.feed_refresh_minutes,
                                  fetch_allow_hosts=settings.fetch_allow_hosts, fetch_max_bytes=settings.fetch_max_bytes,
                                  fetch_timeout_s=settings.fetch_timeout_s) as refresher:
            report = await refresher.refresh_once(only={f.url for f in new})
        refused = 0
        now = time.time()
        for feed in new:
            read = report.reads.get(feed.url)
            stored = await store.get(feed.url)
            if read is not None and read.status in REFUSED:
                await store.remove(feed.url)
                refused += 1
                lines.append(f"{_label(feed)} not added: {read.detail}" + ("" if read.detail.endswith((".", "?")) else "."))
            elif stored is not None:
                lines.append("Added " + describe_feed(stored, now))
        if report.fetched:
            lines.append(f"Knowledge base: {report.added} new fact-check(s) of {report.fetched} read.")
    return len(new) - refused, lines, refused


async def _refresh(settings: Settings) -> int:
    """Read every stored feed now (the data dir must be free)."""
    from bot.app import build_app
    from bot.feeds import describe_feed, open_refresher
    from storage.factcheck_feeds import FactCheckFeedStore

    if settings.offline:
        print("Nothing is read while TIPLINE_OFFLINE=true.")
        return EXIT_FAILED
    try:
        async with build_app(settings) as app:
            store = FactCheckFeedStore(app.db)
            stored = await store.feeds()
            if not stored:
                print("No fact-checkers' feeds to read: add some with `tipline feeds add`.")
                return 0
            async with open_refresher(app.kb, feeds=[], interval_minutes=settings.feed_refresh_minutes,
                                      fetch_allow_hosts=settings.fetch_allow_hosts,
                                      fetch_max_bytes=settings.fetch_max_bytes,
                                      fetch_timeout_s=settings.fetch_timeout_s) as refresher:
                report = await refresher.refresh_once(only={f.url for f in stored})
            now = time.time()
            for feed in await store.feeds():
                print(describe_feed(feed, now))
            print(f"Knowledge base: {report.added} new fact-check(s) of {report.fetched} read.")
            return EXIT_FAILED if report.failed else 0
    except DataDirInUse:
        print("tipline run holds the data dir and reads the feeds itself every TIPLINE_FEED_REFRESH_MINUTES.")
        return EXIT_FAILED


def _label(feed: FeedRef) -> str:
    return feed.name or feed.url
