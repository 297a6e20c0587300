"""`tipline watch add|list|remove`: watched public Telegram channels and news feeds from the command line
(bot/watch.py, bot/watch_feeds.py); `login|logout` are the account reader's (adapters/account_cli.py).

With the data dir free, `add` and `remove` do what /watch does in a chat: the app is built, each added
channel is read at once (its preview's first page), a removed one's posts are deleted. While `tipline run`
holds the data dir (embedded Qdrant allows one process), only SQLite rows change: an added channel is
checked with one request (a name that is not found, private or without a preview is refused as in a chat)
and the running poller reads it within `TICK_S`; a removed one stops at once (it leaves digests and
/trending) and the running bot deletes its posts on its next cycle. `list` only reads.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.settings import Settings
from storage.sqlite import Database
from storage.vectors import DataDirInUse

EXIT_FAILED = 1


async def watch_command(action: str, refs: Sequence[str], settings: Settings) -> int:
    if action == "list":
        return await _list(settings)
    if action in ("login", "logout"):
        from adapters.account_cli import account_command

        return await account_command(action, settings)
    from bot.app import build_app
    from bot.watch import build_watch

    try:
        async with build_app(settings) as app:
            service = build_watch(settings, app.corroborator)
            assert service is not None  # a long-running app always has the corroborator
            try:
                lines = await (service.add(refs, by="cli") if action == "add" else service.remove(refs))
            finally:
                await service.aclose()
    except DataDirInUse:
        lines = await (_add_rows(settings, refs) if action == "add" else _remove_rows(settings, refs))
    print("\n".join(lines))
    return EXIT_FAILED if any(" not added" in line or line.startswith("“") for line in lines) else 0


async def _feeds_of(settings: Settings) -> list:
    from storage.watched_feeds import FeedStore

    db = await Database.open(settings.sqlite_path)
    try:
        return await FeedStore(db).feeds()
    finally:
        await db.close()


async def _list(settings: Settings) -> int:
    from bot.watch import STATUS_TEXT, describe
    from storage.watched import WatchStore

    db = await Database.open(settings.sqlite_path)
    try:
        channels = await WatchStore(db).channels()
    finally:
        await db.close()
    from bot.watch_feeds import STATUS_TEXT as FEED_STATUS
    from bot.watch_feeds import describe_feed

    feeds = await _feeds_of(settings)
    if not channels and not feeds:
        print("No channels are watched: `tipline watch add @channel` reads a public channel from its web preview, "
              "`tipline watch add https://outlet.example/rss.xml` a news outlet's feed.")
        return 0
    now = time.time()
    for ch in channels:
        print(describe(ch, now))
    for feed in feeds:
        print(describe_feed(feed, now))
    bad = [f"@{c.name}: {STATUS_TEXT.get(c.status, c.status).split(' (')[0]}" for c in channels
           if c.status not in ("ok", "new")]
    bad += [f"{f.url}: {FEED_STATUS.get(f.status, f.status).split(' (')[0]}" for f in feeds
            if f.status not in ("ok", "new")]
    if bad:
        print(f"{len(bad)} of {len(channels) + len(feeds)} watched source(s) cannot be read now: " + "; ".join(bad))
    return 0


async def _add_rows(settings: Settings, refs: Sequence[str]) -> list[str]:
    """A running bot holds the data dir: check each name with one request and record it for the bot."""
    from bot.watch import PLATFORM, REFUSED_AT_ADD, STATUS_TEXT, TICK_S, account_configured, chat_id_of, session_path
    from core.watch.feed_reader import is_feed_ref
    from core.watch.telegram_preview import NotAChannel, PreviewReader, channel_name
    from storage.messages import MessageStore
    from storage.watched import WatchStore

    lines: list[str] = []
    db = await Database.open(settings.sqlite_path)
    reader = PreviewReader(settings.telegram_preview_url, max_bytes=settings.fetch_max_bytes)
    try:
        store, messages = WatchStore(db), MessageStore(db)
        for ref in refs:
            if is_feed_ref(ref):
                lines.append(await _add_feed_row(settings, db, ref))
                continue
            try:
                name = channel_name(ref)
            except NotAChannel as exc:
                lines.append(f"“{ref}” not added: {'private: ' if exc.private else ''}{exc}.")
                continue
            if not settings.offline:
                outcome = await reader.read(name)
                if outcome.status == "no_preview" and account_configured(settings) and session_path(settings).exists():
                    pass  # the running tipline reads it through the account (which one process holds)
                elif outcome.status in REFUSED_AT_ADD:
                    lines.append(f"@{name} not added: {STATUS_TEXT[outcome.status]} [{outcome.detail}].")
                    continue
            if not await store.add(name, by="cli", now=time.time()):
                lines.append(f"@{name} is already watched.")
                continue
            await messages.set_flag(PLATFORM, chat_id_of(name), "tracking", True, by="cli", kind="channel",
                                    handle=chat_id_of(name))
            lines.append(f"Watching @{name}: the running tipline reads it within {TICK_S:g} s"
                         + (" (not while TIPLINE_OFFLINE=true)." if settings.offline else "."))
    finally:
        await reader.aclose()
        await db.close()
    return lines


async def _add_feed_row(settings: Settings, db: Database, ref: str) -> str:
    """A feed, while a running bot holds the data dir: checked with one request, recorded for the bot."""
    from bot.watch import TICK_S
    from bot.watch_feeds import PLATFORM, REFUSED_AT_ADD, STATUS_TEXT, chat_id_of
    from core.evidence.ssrf import SSRFGuard
    from core.watch.feed_reader import FeedReader, NotAFeed, feed_url
    from storage.messages import MessageStore
    from storage.watched_feeds import FeedStore

    try:
        url = feed_url(ref)
    except NotAFeed as exc:
        return f"“{ref}” not added: {exc}."
    title = ""
    if not settings.offline:
        reader = FeedReader(SSRFGuard(settings.fetch_allow_hosts), max_bytes=settings.fetch_max_bytes)
        try:
            outcome = await reader.read(url)
        finally:
            await reader.aclose()
        if outcome.status in REFUSED_AT_ADD:
            return f"{url} not added: {STATUS_TEXT[outcome.status]} [{outcome.detail}]."
        title = outcome.page.title if outcome.page else ""
    if not await FeedStore(db).add(url, by="cli", now=time.time()):
        return f"{url} is already watched."
    await MessageStore(db).set_flag(PLATFORM, chat_id_of(url), "tracking", True, by="cli", kind="channel",
                                    title=title, handle=title)
    return (f"Watching {url}: the running tipline reads it within {TICK_S:g} s"
            + (" (not while TIPLINE_OFFLINE=true)." if settings.offline else "."))


async def _remove_rows(settings: Settings, refs: Sequence[str]) -> list[str]:
    from bot.watch import PLATFORM, chat_id_of
    from bot.watch_feeds import PLATFORM as FEED_PLATFORM
    from bot.watch_feeds import chat_id_of as feed_chat
    from core.watch.feed_reader import NotAFeed, feed_url, is_feed_ref
    from core.watch.telegram_preview import NotAChannel, channel_name
    from storage.watched_feeds import FeedStore
    from storage.messages import MessageStore
    from storage.watched import WatchStore

    lines: list[str] = []
    db = await Database.open(settings.sqlite_path)
    try:
        store, messages = WatchStore(db), MessageStore(db)
        for ref in refs:
            if is_feed_ref(ref):
                try:
                    url = feed_url(ref)
                except NotAFeed as exc:
                    lines.append(f"“{ref}” is not a feed: {exc}.")
                    continue
                if not await FeedStore(db).mark_removed(url):
                    lines.append(f"{url} is not watched.")
                    continue
                if await messages.chat(FEED_PLATFORM, feed_chat(url)) is not None:
                    await messages.set_flag(FEED_PLATFORM, feed_chat(url), "tracking", False, by="cli", kind="channel")
                lines.append(f"Stopped watching {url}; the running tipline deletes its stored items on its next cycle.")
                continue
            try:
                name = channel_name(ref)
            except NotAChannel as exc:
                lines.append(f"“{ref}” is not a channel: {exc}.")
                continue
            if not await store.mark_removed(name):
                lines.append(f"@{name} is not watched.")
                continue
            if await messages.chat(PLATFORM, chat_id_of(name)) is not None:
                await messages.set_flag(PLATFORM, chat_id_of(name), "tracking", False, by="cli", kind="channel")
            lines.append(f"Stopped watching @{name}; the running tipline deletes its stored posts on its next cycle.")
    finally:
        await db.close()
    return lines
