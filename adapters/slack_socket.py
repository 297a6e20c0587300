"""Slack Socket Mode: the same bolt app and listeners as HTTP mode, fed over a WebSocket instead.

For workspaces that cannot expose a public URL. With `TIPLINE_SLACK_APP_TOKEN` (an `xapp-` token with
`connections:write`) the bot asks `apps.connections.open` for a WebSocket URL, receives events, slash
commands and interactions as envelopes, and acknowledges each one; everything after that is the
HTTP adapter's code (`adapters/slack.py`), so replies, threading and escaping are identical.
The Web API base URL comes from the bot's client, so a test server or proxy works here too.
"""

from __future__ import annotations

import logging

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from adapters.slack import SlackBot

log = logging.getLogger(__name__)


class SlackSocketMode:
    def __init__(self, bot: SlackBot, app_token: str, *, ping_interval: float = 10.0):
        if not app_token.startswith("xapp-"):
            raise ValueError("TIPLINE_SLACK_APP_TOKEN must be an app-level token starting with xapp-")
        self.bot = bot
        self.handler = AsyncSocketModeHandler(bot.app, app_token, web_client=bot.client,
                                              ping_interval=ping_interval)

    async def start(self) -> None:
        await self.handler.connect_async()
        log.info("slack: connected in Socket Mode")

    async def stop(self) -> None:
        await self.handler.close_async()
