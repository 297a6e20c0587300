"""`tipline watch add|list|remove`: watched public Telegram channels from the command line (bot/watch.py);
`login|logout` are the account reader's (adapters/account_cli.py).

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


async def _list(settings: Settings) -> int:
    from bot.watch import STATUS_TEXT, describe
    from storage.watched import WatchStore

    db = await Database.open(settings.sqlite_path)
    try:
        channels = await WatchStore(db).channels()
    finally:
        await db.close()
    if not channels:
        print("No channels are watched: `tipline watch add @channel` reads a public channel from its web preview.")
        return 0
    now = time.time()
    for ch in channels:
        print(describe(ch, now))
    bad = [ch for ch in channels if ch.status not in ("ok", "new")]
    if bad:
        print(f"{len(bad)} of {len(channels)} channel(s) cannot be read now: "
              + "; ".join(f"@{c.name}: {STATUS_TEXT.get(c.status, c.status).split(' (')[0]}" for c in bad))
    return 0


async def _add_rows(settings: Settings, refs: Sequence[str]) -> list[str]:
    """A running bot holds the data dir: check each name with one request and record it for the bot."""
    from bot.watch import PLATFORM, REFUSED_AT_ADD, STATUS_TEXT, TICK_S, account_configured, chat_id_of, session_path
    from core.telegram_preview import NotAChannel, PreviewReader, channel_name
    from storage.messages import MessageStore
    from storage.watched import WatchStore

    lines: list[str] = []
    db = await Database.open(settings.sqlite_path)
    reader = PreviewReader(settings.telegram_preview_url, max_bytes=settings.fetch_max_bytes)
    try:
        store, messages = WatchStore(db), MessageStore(db)
        for ref in refs:
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


async def _remove_rows(settings: Settings, refs: Sequence[str]) -> list[str]:
    from bot.watch import PLATFORM, chat_id_of
    from core.telegram_preview import NotAChannel, channel_name
    from storage.messages import MessageStore
    from storage.watched import WatchStore

    lines: list[str] = []
    db = await Database.open(settings.sqlite_path)
    try:
        store, messages = WatchStore(db), MessageStore(db)
        for ref in refs:
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
