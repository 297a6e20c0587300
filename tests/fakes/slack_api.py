"""A fake Slack Web API: a real aiohttp server on 127.0.0.1, port 0, Slack's wire format.

Point slack_sdk at it with `AsyncWebClient(base_url=fake.base_url, token=...)` (the trailing slash
matters). It serves `auth.test`, `chat.postMessage`, `chat.update`, `chat.postEphemeral`, `reactions.add` and
`reactions.remove` (the bot's reactions are in `reactions`), accepts form or JSON bodies as
slack_sdk sends them, records every call with its decoded parameters and the bearer token, and
answers `{"ok": true, ...}` with realistic `channel`/`ts` values so messages can be edited.

Channels in `not_in_channel` answer chat.postMessage with Slack's `not_in_channel` error (the bot is
not a member). `response_url(name)` is a slash command's / shortcut's response URL served here:
what is POSTed to it is recorded in `responses[name]`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackFake

TEAM_ID = "T0TIPLINE"
BOT_USER_ID = "U0TIPBOT"
BOT_ID = "B0TIPBOT"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeSlack(LoopbackFake):
    token: str = "xoxb-test-token"
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    not_in_channel: set[str] = field(default_factory=set)
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # file id -> (file object as files.info returns it, bytes served at its url_private_download)
    files: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)
    downloads: list[tuple[str, str | None]] = field(default_factory=list)  # (file id, Authorization header)
    reactions: set[tuple[str, str, str]] = field(default_factory=set)  # the bot's: (channel, message ts, name)
    scopes: set[str] = field(default_factory=lambda: {"reactions:write", "channels:history"})  # of the token: without it, missing_scope

    def __post_init__(self) -> None:
        self._seq = itertools.count(100)
        self._changed = asyncio.Condition()

    # --- lifecycle -------------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_post("/response/{name}", self._response)
        app.router.add_get("/files-pri/{team}-{file}/{name}", self._download)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/response/{name}"

    def add_file(self, data: bytes, mimetype: str, name: str, *, size: int | None = None) -> dict[str, Any]:
        """A file a user uploaded; returns its file object, as events carry it in `files` (`size`: what
        Slack reports, when a test wants it to differ from the bytes)."""
        file_id = f"F0{len(self.files):08d}"
        base = f"http://127.0.0.1:{self.port}/files-pri/{TEAM_ID}-{file_id}/{name}"
        obj = {"id": file_id, "created": int(time.time()), "timestamp": int(time.time()), "name": name,
               "title": name, "mimetype": mimetype, "filetype": name.rsplit(".", 1)[-1], "user": "U0ALICE",
               "size": len(data) if size is None else size, "mode": "hosted", "is_external": False,
               "url_private": base, "url_private_download": base + "?download=1"}
        self.files[file_id] = (obj, data)
        return obj

    async def _download(self, request: web.Request) -> web.Response:
        """url_private: the bytes with a bot token that has files:read; without one Slack answers a sign-in
        page (200, text/html), which is what a client that forgot the token gets here too."""
        found = self.files.get(request.match_info["file"])
        auth = request.headers.get("Authorization")
        self.downloads.append((request.match_info["file"], auth))
        async with self._changed:
            self._changed.notify_all()
        if found is None:
            return web.Response(status=404, text="file_not_found")
        if auth != f"Bearer {self.token}":
            return web.Response(text="<html>sign in to Slack</html>", content_type="text/html")
        obj, data = found
        return web.Response(body=data, content_type=obj["mimetype"])

    # --- what tests inspect ----------------------------------------------------------------

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def posts_in_thread(self, channel: str, thread_ts: str) -> list[Call]:
        return [c for c in self.called("chat.postMessage")
                if c.params.get("channel") == channel and c.params.get("thread_ts") == thread_ts]

    def updates_of(self, channel: str, ts: str) -> list[Call]:
        return [c for c in self.called("chat.update") if c.params.get("channel") == channel
                and c.params.get("ts") == ts]

    # --- the API ---------------------------------------------------------------------------

    @staticmethod
    def _decode(value: Any) -> Any:
        if isinstance(value, str) and value[:1] in "[{":
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query.items())
        if request.can_read_body:
            if request.content_type == "application/json":
                params.update(await request.json())
            else:
                params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        return {k: self._decode(v) for k, v in params.items()}

    def _ts(self) -> str:
        return f"{int(time.time())}.{next(self._seq):06d}"

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.pop("token", None)
        if token != self.token:
            result: dict[str, Any] = {"ok": False, "error": "invalid_auth"}
        elif method == "auth.test":
            result = {"ok": True, "url": "https://tipline-test.slack.com/", "team": "Tipline Test",
                      "user": "tipline", "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID,
                      "is_enterprise_install": False}
        elif method == "chat.postMessage":
            result = self._post(params)
        elif method == "chat.update":
            result = self._update(params)
        elif method in ("conversations.replies", "conversations.history"):
            result = self._read(method == "conversations.replies", params)
        elif method in ("reactions.add", "reactions.remove"):
            result = self._react(method == "reactions.add", params)
        elif method == "files.info":
            found = self.files.get(str(params.get("file") or ""))
            result = {"ok": True, "file": found[0]} if found else {"ok": False, "error": "file_not_found"}
        elif method == "chat.postEphemeral":
            if not params.get("channel") or not params.get("user"):
                result = {"ok": False, "error": "channel_not_found" if not params.get("channel") else "user_not_found"}
            elif not params.get("text") and not params.get("blocks"):
                result = {"ok": False, "error": "no_text"}
            else:
                result = {"ok": True, "message_ts": self._ts()}
        else:
            result = {"ok": False, "error": "unknown_method"}
        self.calls.append(Call(method, params, token, result))
        async with self._changed:
            self._changed.notify_all()
        return web.json_response(result)

    async def _response(self, request: web.Request) -> web.Response:
        # Slack's response_url takes JSON and answers a plain "ok" (errors as text, e.g. "no_text").
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if not body.get("text") and not body.get("blocks"):
            return web.Response(status=400, text="no_text")
        self.responses.setdefault(request.match_info["name"], []).append(body)
        async with self._changed:
            self._changed.notify_all()
        return web.Response(text="ok")

    def _message(self, params: dict[str, Any], ts: str) -> dict[str, Any]:
        msg = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "app_id": "A0TIPLINE", "ts": ts,
               "team": TEAM_ID, "text": params.get("text", "")}
        if params.get("blocks"):
            msg["blocks"] = params["blocks"]
        if params.get("thread_ts"):
            msg["thread_ts"] = params["thread_ts"]
        if isinstance(params.get("metadata"), dict):  # returned only to readers asking include_all_metadata
            msg["metadata"] = params["metadata"]
        return msg

    def _read(self, replies: bool, params: dict[str, Any]) -> dict[str, Any]:
        """conversations.replies (a thread: its root, then replies oldest first, `cursor` pages of `limit`)
        and conversations.history (the channel's messages newest first); message metadata only with
        `include_all_metadata`, as Slack does; the *:history scope or `missing_scope`."""
        channel = str(params.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if "channels:history" not in self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": "channels:history",
                    "provided": ",".join(sorted(self.scopes))}
        if replies and not params.get("ts"):
            return {"ok": False, "error": "thread_not_found"}
        mine = [(ts, m) for (c, ts), m in self.messages.items() if c == channel]
        if replies:
            root = str(params["ts"])
            found = sorted(((ts, m) for ts, m in mine if ts == root or m.get("thread_ts") == root),
                           key=lambda x: float(x[0]))
        else:
            found = sorted(((ts, m) for ts, m in mine if m.get("thread_ts") in (None, ts)),
                           key=lambda x: -float(x[0]))
        with_meta = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
        out = [m if with_meta else {k: v for k, v in m.items() if k != "metadata"} for _, m in found]
        limit = int(params.get("limit") or 100)
        start = int(params.get("cursor") or 0)
        page = out[start:start + limit]
        more = start + limit < len(out)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _post(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if channel in self.not_in_channel:
            return {"ok": False, "error": "not_in_channel"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        ts = self._ts()
        msg = self._message(params, ts)
        self.messages[(channel, ts)] = msg
        return {"ok": True, "channel": channel, "ts": ts, "message": msg}

    def _react(self, add: bool, params: dict[str, Any]) -> dict[str, Any]:
        """reactions.add / reactions.remove on a message (channel + timestamp) for the bot user: Slack's
        `already_reacted` / `no_reaction` when it is already there / not there."""
        if "reactions:write" not in self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": "reactions:write",
                    "provided": ",".join(sorted(self.scopes)) or "chat:write"}
        if not params.get("name"):
            return {"ok": False, "error": "invalid_name"}
        if not params.get("channel") or not params.get("timestamp"):
            return {"ok": False, "error": "no_item_specified"}
        key = (str(params["channel"]), str(params["timestamp"]), str(params["name"]))
        if add and key in self.reactions:
            return {"ok": False, "error": "already_reacted"}
        if not add and key not in self.reactions:
            return {"ok": False, "error": "no_reaction"}
        (self.reactions.add if add else self.reactions.discard)(key)
        return {"ok": True}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (params.get("channel"), params.get("ts"))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        msg = self._message(params, key[1])
        if "thread_ts" in self.messages[key]:
            msg["thread_ts"] = self.messages[key]["thread_ts"]
        if "metadata" in self.messages[key] and "metadata" not in msg:  # an edit keeps it unless replaced
            msg["metadata"] = self.messages[key]["metadata"]
        self.messages[key] = msg  # type: ignore[index]
        return {"ok": True, "channel": key[0], "ts": key[1], "text": msg["text"], "message": msg}
