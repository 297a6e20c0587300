"""Run the bot: build the app, start every configured chat adapter, stop cleanly on a signal.

    import asyncio
    from bot.run import run
    from bot.settings import Settings
    asyncio.run(run(Settings()))

Adapters: Telegram long polling (`TIPLINE_TELEGRAM_TOKEN`) and Slack over HTTP (`POST /slack/events`
on `TIPLINE_HTTP_HOST`:`TIPLINE_HTTP_PORT`, enabled by `TIPLINE_SLACK_BOT_TOKEN` and
`TIPLINE_SLACK_SIGNING_SECRET`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import AsyncExitStack, suppress
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


def slack_config(settings: Settings) -> Any | None:
    """The Slack adapter's config from settings, or None unless both the bot token and signing secret are set."""
    token = _secret(settings.slack_bot_token)
    secret = _secret(settings.slack_signing_secret)
    if not token or not secret:
        if token or secret:
            log.warning("slack: both TIPLINE_SLACK_BOT_TOKEN and TIPLINE_SLACK_SIGNING_SECRET are needed; "
                        "Slack is not started")
        return None
    # Imported only when configured, so a deployment without Slack doesn't load slack-bolt.
    from adapters.slack import SlackConfig

    return SlackConfig(bot_token=token, signing_secret=secret,
                       api_url=settings.slack_api_url or None,
                       host=settings.http_host, port=settings.http_port)


async def run(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM). Raises `NoAdapterConfigured` if nothing is set up."""
    tg_config = telegram_config(settings)
    sl_config = slack_config(settings)
    if tg_config is None and sl_config is None:
        raise NoAdapterConfigured("no chat adapter is configured: set TIPLINE_TELEGRAM_TOKEN "
                                  "(a token from @BotFather) to run the Telegram bot, or "
                                  "TIPLINE_SLACK_BOT_TOKEN and TIPLINE_SLACK_SIGNING_SECRET to run the Slack bot")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        async with build_app(settings) as app, AsyncExitStack() as adapters:
            if tg_config is not None:
                from adapters.telegram import TelegramBot

                tg_bot = TelegramBot(tg_config, app.engine)
                await tg_bot.start()
                adapters.push_async_callback(tg_bot.stop)
            if sl_config is not None:
                from adapters.slack import SlackBot

                sl_bot = SlackBot(sl_config, app.engine)
                await sl_bot.start()
                adapters.push_async_callback(sl_bot.stop)
            try:
                await stop.wait()
            finally:
                log.info("stopping")
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
