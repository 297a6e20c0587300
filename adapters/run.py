"""The composition root of `tipline run`: settings -> app (storage, engine) -> chat app -> adapters,
each built once; every configured adapter started, everything stopped cleanly on a signal.

    import asyncio
    from adapters.run import run
    from bot.settings import Settings
    asyncio.run(run(Settings()))

Adapters: Telegram long polling (`TIPLINE_TELEGRAM_TOKEN`); one HTTP server on
`TIPLINE_HTTP_HOST`:`TIPLINE_HTTP_PORT` carrying Slack (`POST /slack/events`, enabled by
`TIPLINE_SLACK_BOT_TOKEN` and `TIPLINE_SLACK_SIGNING_SECRET`), the REST API (`/v1/checks`, enabled by
`TIPLINE_API_TOKEN`) and `/healthz`, and the Telegram webhook in webhook mode.

Every check request goes through one durable job queue (bot/queue.py) and its one `CheckService`,
shared by all adapters through the one `ChatApp` (bot/chat_app.py): it is
persisted before the platform is acknowledged and worked off by `TIPLINE_WORKERS` workers; checks
left unfinished by a crash are resumed at the next start. Shutdown order on SIGTERM: stop taking
updates/events, let running checks finish (or put them back in line), then close the adapters.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack, suppress
from typing import Any

from adapters.banner import Started, banner, tipline_version
from adapters.startup import slack_start_error, telegram_start_error, wait_for_configuration
from bot.app import App, SetupError, build_app, edge_dir
from bot.chat_app import ChatApp, build_chat
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

    webhook_secret = _secret(settings.telegram_webhook_secret)
    if settings.telegram_webhook_url and not webhook_secret:
        raise SetupError("TIPLINE_TELEGRAM_WEBHOOK_URL needs TIPLINE_TELEGRAM_WEBHOOK_SECRET (1-256 characters "
                         "A-Z, a-z, 0-9, _ and -): without it anyone could post fake updates to the webhook")
    return TelegramConfig(token=token, base_url=settings.telegram_api_url or None,
                          webhook_url=settings.telegram_webhook_url or None, webhook_secret=webhook_secret)


def slack_config(settings: Settings) -> Any | None:
    """The Slack adapter's config from settings, or None unless the bot token and either the signing
    secret (HTTP mode) or an app-level token (Socket Mode) are set."""
    token = _secret(settings.slack_bot_token)
    secret = _secret(settings.slack_signing_secret)
    app_token = _secret(settings.slack_app_token)
    if not token or not (secret or app_token):
        if token or secret:
            log.warning("slack: TIPLINE_SLACK_BOT_TOKEN plus TIPLINE_SLACK_SIGNING_SECRET (HTTP) or "
                        "TIPLINE_SLACK_APP_TOKEN (Socket Mode) are needed; Slack is not started")
        return None
    # Socket Mode authenticates the WebSocket instead of signing requests; the secret is then unused.
    secret = secret or "unused-in-socket-mode"
    # Imported only when configured, so a deployment without Slack doesn't load slack-bolt.
    from adapters.slack import SlackConfig

    return SlackConfig(bot_token=token, signing_secret=secret,
                       api_url=settings.slack_api_url or None,
                       host=settings.http_host, port=settings.http_port)


NOTHING_CONFIGURED = ("no chat adapter is configured: set TIPLINE_TELEGRAM_TOKEN (a token from @BotFather) to run "
                      "the Telegram bot, TIPLINE_SLACK_BOT_TOKEN and TIPLINE_SLACK_SIGNING_SECRET to run the Slack "
                      "bot, or TIPLINE_API_TOKEN to serve the REST API (docs/deploy.md)")


async def run(settings: Settings, stop: asyncio.Event | None = None, *, wait_unconfigured: bool = False,
              announce: Callable[[list[str]], None] | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM). With nothing set up, raises `NoAdapterConfigured`, or
    with `wait_unconfigured` (a service: no terminal) says so on /healthz and waits, so a supervisor's
    restart policy does not turn the missing setting into a restart loop. `announce` hears the start-up
    banner (adapters/banner.py)."""
    tg_config = telegram_config(settings)
    sl_config = slack_config(settings)
    api_token = _secret(settings.api_token)
    stop = stop or asyncio.Event()
    unconfigured = tg_config is None and sl_config is None and not api_token
    if unconfigured and not wait_unconfigured:
        raise NoAdapterConfigured(NOTHING_CONFIGURED)
    loop = asyncio.get_running_loop()
    installed: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        if unconfigured:
            await wait_for_configuration(settings, stop, NOTHING_CONFIGURED)
            return
        if announce is not None:  # at once: loading the models and the knowledge base takes seconds
            announce([f"tipline {tipline_version()}: starting; loading the models and the knowledge base "
                      f"in {settings.data_dir}…"])
        # Loaded beside the models, in a thread: every request's intake reads the language, and the first
        # one would otherwise load the classifier on the event loop (core/intake/language.py `preload`).
        from core.intake.language import preload

        languages = asyncio.ensure_future(asyncio.to_thread(preload))
        async with build_app(settings) as app, AsyncExitStack() as adapters:
            await languages
            # Callbacks run in reverse: intake stops first, then the queue drains, then adapters close.
            chat = build_chat(settings, app)
            adapters.push_async_callback(chat.aclose)
            queue = chat.queue
            assert queue is not None
            attach_retention(app, chat, stop, adapters)
            attach_background(settings, app, chat, stop, adapters)
            tg_bot = None
            if tg_config is not None:
                from adapters.telegram import TelegramBot

                from bot.admins import Admins
                from bot.factcheck_files import FactCheckFiles

                tg_bot = TelegramBot(tg_config, chat, files=FactCheckFiles(app.kb, Admins(settings.admins)))
                adapters.push_async_callback(tg_bot.stop)
            adapters.push_async_callback(queue.stop)
            await queue.start()
            if queue.resumed:
                log.info("resuming %d checks left unfinished by the last run", queue.resumed)
            socket_mode = sl_config is not None and bool(_secret(settings.slack_app_token))
            # The HTTP server also serves /healthz and /metrics, so it always starts; it is only
            # required when something arrives over HTTP (Slack HTTP mode, the REST API, a webhook).
            # It listens before Telegram starts: setWebhook makes Telegram deliver at once, and a
            # refused connection there showed up as a lost first delivery in CI.
            needed = (sl_config is not None and not socket_mode) or bool(api_token) or \
                (tg_config is not None and bool(tg_config.webhook_url))
            listening = await _start_http(settings, app, chat, None if socket_mode else sl_config, api_token,
                                          adapters, telegram=tg_bot, required=needed)
            if tg_bot is not None:
                try:
                    await tg_bot.start()
                except Exception as exc:
                    raise telegram_start_error(exc, tg_bot.config.base_url) from exc
                adapters.push_async_callback(tg_bot.stop_intake)
            if socket_mode:
                try:
                    await _start_slack_socket(settings, chat, sl_config, adapters)
                except Exception as exc:
                    raise slack_start_error(exc, settings.slack_api_url) from exc
            if announce is not None:
                announce(banner(settings, await started(settings, app, tg_bot, sl_config, socket_mode,
                                                        api_token, listening)))
            try:
                await stop.wait()
            finally:
                log.info("stopping")
    finally:
        for number in installed:
            loop.remove_signal_handler(number)


def attach_retention(app: App, chat: ChatApp, stop: asyncio.Event, stack: AsyncExitStack) -> None:
    """The periodic deletion of checks (with their votes) and tracked messages past their retention
    (TIPLINE_CHECK_RETENTION_DAYS, TIPLINE_RETENTION_DAYS; bot/personal.py)."""
    tasks = [asyncio.create_task(chat.privacy.run_retention(stop), name="tipline-check-retention")]
    if app.corroborator is not None:
        tasks.append(asyncio.create_task(app.corroborator.run_retention(stop), name="tipline-retention"))

    async def end_retention() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    stack.push_async_callback(end_retention)


def attach_background(settings: Settings, app: App, chat: ChatApp, stop: asyncio.Event,
                      stack: AsyncExitStack) -> None:
    """The queue-depth gauge, feed refresh, cache expiry, digests and alerts, the watched channels' poller,
    as background tasks."""
    from bot.feeds import open_refresher
    from storage.cache import TTLCache

    queue = chat.queue
    assert queue is not None
    tasks: list[asyncio.Task[None]] = []

    async def housekeeping() -> None:
        cache = TTLCache(app.db)
        while not stop.is_set():
            try:
                if app.metrics is not None:
                    app.metrics.set_queue_depth(await queue.store.pending_count())
                await cache.purge_expired()
            except Exception:
                log.warning("housekeeping failed", exc_info=True)
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 15)

    tasks.append(asyncio.create_task(housekeeping(), name="tipline-housekeeping"))
    if app.metrics is not None:  # event-loop stalls, on /metrics (what /healthz and every reply wait behind)
        tasks.append(asyncio.create_task(app.metrics.watch_event_loop(stop), name="tipline-loop-lag"))
    if chat.digests is not None:  # scheduled digests and alerts (bot/digest_schedule.py)
        tasks.append(asyncio.create_task(chat.digests.run(stop), name="tipline-digests"))
    if not settings.offline:  # TIPLINE_FEEDS and the fact-checkers' feeds `tipline feeds add` stored (docs/feeds.md)
        async def refresh_feeds() -> None:
            async with open_refresher(app.kb, feeds=settings.feeds, interval_minutes=settings.feed_refresh_minutes,
                                      fetch_allow_hosts=settings.fetch_allow_hosts,
                                      fetch_max_bytes=settings.fetch_max_bytes,
                                      fetch_timeout_s=settings.fetch_timeout_s) as refresher:
                await refresher.run_forever(stop)

        tasks.append(asyncio.create_task(refresh_feeds(), name="tipline-feeds"))
    from bot.watch import build_watch

    watch = build_watch(settings, app.corroborator)
    if watch is not None:  # watched public channels (/watch): their poller, and the service /watch reaches
        chat.attach_watch(watch)
        tasks.append(asyncio.create_task(watch.run(stop), name="tipline-watch"))

    async def end() -> None:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    stack.push_async_callback(end)


async def _start_slack_socket(settings: Settings, chat: ChatApp, sl_config: Any, stack: AsyncExitStack) -> None:
    from adapters.slack import SlackBot
    from adapters.slack_socket import SlackSocketMode

    slack = SlackBot(sl_config, chat)
    app_token = _secret(settings.slack_app_token) or ""
    if not app_token.startswith("xapp-"):
        raise SetupError("TIPLINE_SLACK_APP_TOKEN must be an app-level token starting with xapp-")
    # The SDK retries a refused app token for ever, logging each time: asked once first, a wrong token
    # stops `tipline run` with a sentence (adapters/startup.py) instead of a silent hang.
    await slack.client.apps_connections_open(app_token=app_token)
    socket = SlackSocketMode(slack, app_token)
    await socket.start()
    stack.push_async_callback(socket.stop)


async def _start_http(settings: Settings, app: App, chat: ChatApp, sl_config: Any, api_token: str | None,
                      stack: AsyncExitStack, *, telegram: Any = None, required: bool = True) -> bool:
    """One aiohttp server for everything that arrives over HTTP (Slack events, REST API, health).
    False when it is not `required` and the port was taken."""
    from aiohttp import web

    from adapters.http_api import HttpApi

    if sl_config is not None:
        from adapters.slack import SlackBot

        web_app = SlackBot(sl_config, chat).web_app()
    else:
        web_app = web.Application()
    from adapters.http_errors import add_json_errors

    add_json_errors(web_app)
    HttpApi(chat, api_token, count_factchecks=app.kb.count, wait_s=settings.api_wait_s).add_routes(web_app)
    from adapters.ingest_api import IngestApi

    IngestApi(app.kb, api_token).add_routes(web_app)  # POST /v1/factchecks: fact-checks added while running
    if telegram is not None and telegram.config.webhook_url:
        telegram.add_webhook_route(web_app)
    if app.metrics is not None:
        from bot.metrics_http import add_metrics_routes

        add_metrics_routes(web_app, app.metrics)
    runner = web.AppRunner(web_app, shutdown_timeout=5.0)
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    site = web.TCPSite(runner, settings.http_host, settings.http_port)
    try:
        await site.start()
    except OSError as exc:
        if not required:
            log.warning("http: cannot listen on %s:%s (%s); /healthz and /metrics are off (set TIPLINE_HTTP_PORT)",
                        settings.http_host, settings.http_port, exc.strerror or exc)
            return False
        raise SetupError(f"cannot listen on {settings.http_host}:{settings.http_port} ({exc.strerror or exc}); "
                         "set TIPLINE_HTTP_PORT to a free port") from exc
    log.info("http: listening on %s:%s", settings.http_host, settings.http_port)
    return True


async def started(settings: Settings, app: App, tg_bot: Any, sl_config: Any, socket_mode: bool,
                  api_token: str | None, listening: bool) -> Started:
    """What this run started, for the banner."""
    telegram = None
    if tg_bot is not None:
        how = f"webhook {tg_bot.config.webhook_url}" if tg_bot.config.webhook_url else "long polling"
        telegram = f"{how} as @{tg_bot.username}"
    slack = None if sl_config is None else "Socket Mode" if socket_mode else "HTTP mode"
    return Started(factchecks=await app.kb.count(), evidence_sources=app.sources.names if app.sources else [],
                   llm=app.llm is not None,
                   vectors=settings.qdrant_url or f"embedded, {edge_dir(settings)}",
                   telegram=telegram, slack=slack, rest_api=bool(api_token),
                   http=f"http://{settings.http_host}:{settings.http_port}" if listening else None)
