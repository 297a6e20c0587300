"""Run the bot: build the app, start every configured chat adapter, stop cleanly on a signal.

    import asyncio
    from bot.run import run
    from bot.settings import Settings
    asyncio.run(run(Settings()))

Today the only adapter is Telegram long polling, enabled by `TIPLINE_TELEGRAM_TOKEN`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import suppress
from typing import Any

from bot.app import SetupError, build_app
from bot.settings import Settings

log = logging.getLogger(__name__)


class NoAdapterConfigured(SetupError):
    """No chat adapter has its credentials set."""


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    return value.get_secret_value() if hasattr(value, "get_secret_value") else str(value)


def telegram_config(settings: Settings) -> Any | None:
    """The Telegram adapter's config from settings, or None when no token is set."""
    token = _secret(settings.telegram_token)
    if not token:
        return None
    # Imported only when configured, so a deployment without Telegram doesn't load PTB.
    from adapters.telegram import TelegramConfig

    return TelegramConfig(token=token, base_url=settings.telegram_api_url or None)


async def run(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM). Raises `NoAdapterConfigured` if nothing is set up."""
    tg_config = telegram_config(settings)
    if tg_config is None:
        raise NoAdapterConfigured("no chat adapter is configured: set TIPLINE_TELEGRAM_TOKEN "
                                  "(a token from @BotFather) to run the Telegram bot")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        async with build_app(settings) as app:
            from adapters.telegram import TelegramBot

            bot = TelegramBot(tg_config, app.engine)
            await bot.start()
            try:
                await stop.wait()
            finally:
                log.info("stopping")
                await bot.stop()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
