"""What `tipline run` does when it cannot start the way it was asked to: one sentence instead of
"unexpected error (NetworkError…)", and no restart loop when nothing is configured.

A container with `restart: unless-stopped` and no token used to exit at once and be started again, for
ever, each time loading nothing and printing the same line. Now, when it runs as a service (no
terminal), it says what to configure, answers /healthz with 503 and that sentence (so `docker compose
ps` shows it unhealthy), and waits for SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from bot.app import SetupError
from bot.settings import Settings

log = logging.getLogger(__name__)

TELEGRAM_API = "https://api.telegram.org/bot"


def telegram_start_error(exc: Exception, base_url: str | None) -> Exception:
    """The sentence for a Telegram bot that could not start (getMe, setMyCommands, the webhook), or
    `exc` itself when it is none of the failures a user can fix."""
    from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError

    where = (base_url or TELEGRAM_API).removesuffix("/bot")
    if isinstance(exc, InvalidToken):
        return SetupError("Telegram does not accept the bot token in TIPLINE_TELEGRAM_TOKEN: copy it again from "
                          "@BotFather (/mybots, then API Token)")
    if isinstance(exc, BadRequest) and "webhook" in str(exc).lower():
        return SetupError(f"Telegram refused the webhook TIPLINE_TELEGRAM_WEBHOOK_URL ({exc.message}): it must be "
                          "a public HTTPS URL on port 443, 80, 88 or 8443")
    if isinstance(exc, Forbidden):
        return SetupError(f"Telegram refused the bot ({exc.message}); check TIPLINE_TELEGRAM_TOKEN with @BotFather")
    if isinstance(exc, NetworkError):  # TimedOut is one too
        return SetupError(f"cannot reach the Telegram Bot API at {where} ({exc.message or type(exc).__name__}); "
                          "check the network, HTTPS_PROXY if you need a proxy, or TIPLINE_TELEGRAM_API_URL")
    return exc


def slack_start_error(exc: Exception, api_url: str | None) -> Exception:
    """The sentence for Slack's Socket Mode that could not connect, or `exc` itself."""
    import aiohttp
    from slack_sdk.errors import SlackApiError

    if isinstance(exc, ValueError) and "xapp-" in str(exc):
        return SetupError(str(exc))
    if isinstance(exc, SlackApiError):
        error = exc.response.get("error") if exc.response is not None else None
        return SetupError(f"Slack refused TIPLINE_SLACK_APP_TOKEN ({error or exc}): create an app-level token with "
                          "the connections:write scope under Basic Information, App-Level Tokens")
    if isinstance(exc, (aiohttp.ClientError, TimeoutError)):
        return SetupError(f"cannot reach Slack at {api_url or 'https://slack.com/api/'} ({type(exc).__name__}); "
                          "check the network, HTTPS_PROXY if you need a proxy, or TIPLINE_SLACK_API_URL")
    return exc


async def wait_for_configuration(settings: Settings, stop: asyncio.Event, sentence: str) -> None:
    """Say `sentence` (what to configure) in the log and on /healthz (503) until `stop` is set."""
    log.error("tipline run: %s; waiting (restart it once this is set)", sentence)

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "unconfigured", "error": sentence}, status=503)

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, settings.http_host, settings.http_port).start()
        except OSError as exc:
            log.warning("http: cannot listen on %s:%s (%s)", settings.http_host, settings.http_port,
                        exc.strerror or exc)
        await stop.wait()
    finally:
        await runner.cleanup()
