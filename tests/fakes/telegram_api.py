"""A fake Telegram Bot API server: a real aiohttp server on 127.0.0.1, port 0, real wire format.

Point python-telegram-bot at it with `ApplicationBuilder().base_url(fake.base_url)`. Tests queue
updates (`fake.queue_message(...)`), the bot long-polls them with getUpdates, and every call the bot
makes is recorded (`fake.calls`) with its decoded parameters. Sent messages get realistic Message
objects back, so the bot can edit them. `sendChatAction` ("typing…") is answered True and recorded too.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackFake

BOT_USER = {"id": 777000111, "is_bot": True, "first_name": "Tipline", "username": "tipline_bot",
            "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False}

# sendChatAction's `action` values (Bot API reference)
CHAT_ACTIONS = {"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
                "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note"}
_RAW_STRINGS = {"text", "caption", "parse_mode", "message_thread_id_raw", "secret_token"}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str
    result: Any = None


_UPDATE_IDS = itertools.count(1)


@dataclass
class FakeTelegram(LoopbackFake):
    token: str = "123:ABC"
    calls: list[Call] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    messages: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    # chat id -> {user id: "creator" | "administrator"}; everyone else is a plain "member"
    chat_admins: dict[int, dict[int, str]] = field(default_factory=dict)
    webhook: dict[str, Any] | None = None  # set by setWebhook: url, secret_token, allowed_updates
    # file_id -> (file_path, bytes): what users sent, served by getFile and /file/bot<token>/<file_path>
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    downloads: list[str] = field(default_factory=list)  # file paths downloaded, in order
    # Flood control as Telegram answers it: (method, params) -> seconds to wait, or None to serve the call.
    # A positive answer is a 429 with `parameters.retry_after`, recorded in `calls` like any other answer.
    flood: Callable[[str, dict[str, Any]], int | None] | None = None

    def __post_init__(self) -> None:
        # Telegram never gives two updates one id; a fake started again (tests sharing a job queue's database)
        # goes on counting, so the queue's idempotency keys stay distinct.
        self._update_ids = _UPDATE_IDS
        self._message_ids = itertools.count(1000)
        self._changed = asyncio.Condition()

    # --- lifecycle -------------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    # --- what tests queue ------------------------------------------------------------------

    @staticmethod
    def private_chat(user_id: int = 4242) -> dict[str, Any]:
        return {"id": user_id, "type": "private", "first_name": "Alice", "username": "alice"}

    @staticmethod
    def group_chat(chat_id: int = -1001234567890, *, forum: bool = False) -> dict[str, Any]:
        chat = {"id": chat_id, "type": "supergroup", "title": "Family <group>"}
        if forum:
            chat["is_forum"] = True
        return chat

    def make_message(self, text: str | None = None, *, chat: dict[str, Any] | None = None,
                     sender: dict[str, Any] | None = None, caption: str | None = None,
                     reply_to: dict[str, Any] | None = None, thread_id: int | None = None,
                     forward_origin: dict[str, Any] | None = None, entities: bool = True,
                     photo: bytes | None = None, document: tuple[bytes, str, str] | None = None) -> dict[str, Any]:
        """A user's message. `photo`: image bytes sent as a photo (Telegram lists several sizes; the
        largest is these bytes); `document`: (bytes, mime type, file name) sent as a file."""
        chat = chat or self.private_chat()
        sender = sender or {"id": 4242, "is_bot": False, "first_name": "Alice", "username": "alice"}
        msg: dict[str, Any] = {"message_id": next(self._message_ids), "date": int(time.time()), "chat": chat,
                               "from": sender}
        if text is not None:
            msg["text"] = text
            if entities and text.startswith("/"):
                cmd = text.split()[0]
                msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(cmd.encode("utf-16-le")) // 2}]
        if caption is not None:
            msg["caption"] = caption
            if photo is None and document is None:
                msg["photo"] = [{"file_id": "AgAD", "file_unique_id": "AQAD", "width": 90, "height": 90}]
        if photo is not None:
            big = self.add_file(photo, "photos", ".jpg")
            small = self.add_file(photo[: len(photo) // 4], "photos", ".jpg")  # the thumbnail Telegram makes
            msg["photo"] = [{**small, "width": 90, "height": 60}, {**big, "width": 1280, "height": 853}]
        if document is not None:
            data, mime, name = document
            msg["document"] = {**self.add_file(data, "documents", "." + name.rsplit(".", 1)[-1]),
                               "mime_type": mime, "file_name": name}
        if reply_to is not None:
            msg["reply_to_message"] = reply_to
        if thread_id is not None:
            msg["message_thread_id"] = thread_id
            msg["is_topic_message"] = True
        if forward_origin is not None:
            msg["forward_origin"] = forward_origin
        self.messages[(chat["id"], msg["message_id"])] = msg
        return msg

    def add_file(self, data: bytes, folder: str, suffix: str) -> dict[str, Any]:
        """Store a file users sent; its File fields (file_id, file_unique_id, file_size) as in a message."""
        n = len(self.files)
        file_id = f"BQACAgIAAxkBAAI{n:04d}"
        self.files[file_id] = (f"{folder}/file_{n}{suffix}", data)
        return {"file_id": file_id, "file_unique_id": f"AgADuniq{n}", "file_size": len(data)}

    async def queue_message(self, message: dict[str, Any]) -> int:
        key = "channel_post" if message["chat"]["type"] == "channel" else "message"
        update: dict[str, Any] = {"update_id": next(self._update_ids), key: message}
        async with self._changed:
            self.updates.append(update)
            self._changed.notify_all()
        return update["update_id"]

    async def press_button(self, message: dict[str, Any], data: str, *,
                           sender: dict[str, Any] | None = None) -> str:
        """Queue a callback_query update: `sender` pressed an inline button with `data` under `message`."""
        query_id = f"cbq{next(self._update_ids)}"
        sender = sender or {"id": 4242, "is_bot": False, "first_name": "Alice", "username": "alice"}
        update = {"update_id": next(self._update_ids),
                  "callback_query": {"id": query_id, "from": sender, "chat_instance": "ci-1", "data": data,
                                     "message": self.messages.get((message["chat"]["id"], message["message_id"]),
                                                                  message)}}
        async with self._changed:
            self.updates.append(update)
            self._changed.notify_all()
        return query_id

    async def send_user_message(self, text: str | None = None, **kw: Any) -> dict[str, Any]:
        msg = self.make_message(text, **kw)
        await self.queue_message(msg)
        return msg

    # --- what tests inspect ----------------------------------------------------------------

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def replies_to(self, message_id: int) -> list[Call]:
        return [c for c in self.called("sendMessage")
                if (c.params.get("reply_parameters") or {}).get("message_id") == message_id]

    def edits_of(self, message_id: int) -> list[Call]:
        return [c for c in self.called("editMessageText") if c.params.get("message_id") == message_id]

    def answer_to(self, message_id: int, placeholder: str) -> Call | None:
        """The bot's answer to `message_id`: its reply, or an edit of it, that is no longer `placeholder`."""
        for sent in self.replies_to(message_id):
            for e in self.edits_of(sent.result["message_id"]) or [sent]:
                if not e.params["text"].startswith(placeholder):
                    return e
        return None

    # --- the API ---------------------------------------------------------------------------

    @staticmethod
    def _decode(key: str, value: str) -> Any:
        if key in _RAW_STRINGS:
            return value
        try:
            return json.loads(value)
        except ValueError:
            return value

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = {k: self._decode(k, v) for k, v in request.query.items()}
        if request.can_read_body:
            ctype = request.content_type
            if ctype == "application/json":
                params.update(await request.json())
            else:  # PTB: form-encoded, every non-string value JSON-encoded
                form = await request.post()
                params.update({k: self._decode(k, v) for k, v in form.items() if isinstance(v, str)})
        return params

    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        if token != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        params = await self._params(request)
        handler = getattr(self, f"api_{method}", None)
        wait = self.flood(method, params) if self.flood is not None else None
        if wait:
            body, status = {"ok": False, "error_code": 429, "description": f"Too Many Requests: retry after {wait}",
                            "parameters": {"retry_after": wait}}, 429
        elif handler is None:
            body, status = {"ok": False, "error_code": 404, "description": "Not Found: method not found"}, 404
        else:
            try:
                body, status = {"ok": True, "result": await handler(params)}, 200
            except _ApiError as exc:
                body, status = {"ok": False, "error_code": 400, "description": exc.description}, 400
        if method != "getUpdates":
            async with self._changed:
                self.calls.append(Call(method, params, token, body.get("result", body)))
                self._changed.notify_all()
        return web.json_response(body, status=status)

    async def api_getFile(self, params: dict[str, Any]) -> Any:
        found = self.files.get(str(params.get("file_id") or ""))
        if found is None:
            raise _ApiError("Bad Request: invalid file_id")
        path, data = found
        if len(data) > 20 * 1024 * 1024:
            raise _ApiError("Bad Request: file is too big")  # the Bot API's download limit
        return {"file_id": params["file_id"], "file_unique_id": "AgADuniq", "file_size": len(data), "file_path": path}

    async def _download(self, request: web.Request) -> web.Response:
        """https://api.telegram.org/file/bot<token>/<file_path>: the bytes, or 404 as Telegram answers."""
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        path = request.match_info["path"]
        for stored, data in self.files.values():
            if stored == path:
                self.downloads.append(path)
                async with self._changed:
                    self._changed.notify_all()
                return web.Response(body=data, content_type="application/octet-stream")
        return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)

    async def api_getMe(self, params: dict[str, Any]) -> Any:
        return BOT_USER

    webhook_error: str | None = None  # set: getWebhookInfo reports it as the last delivery error

    async def api_getWebhookInfo(self, params: dict[str, Any]) -> Any:
        """WebhookInfo: url ("" in polling mode), pending_update_count, and the last delivery error if any."""
        info: dict[str, Any] = {"url": (self.webhook or {}).get("url", ""), "has_custom_certificate": False,
                                "pending_update_count": len(self.updates)}
        if self.webhook_error:
            info.update(last_error_date=int(time.time()) - 60, last_error_message=self.webhook_error)
        return info

    async def api_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = None
        return True

    async def api_setWebhook(self, params: dict[str, Any]) -> Any:
        url = params.get("url") or ""
        if not url.startswith("https://"):
            raise _ApiError("Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise _ApiError("Bad Request: secret token contains unallowed characters")
        self.webhook = {"url": url, "secret_token": secret, "allowed_updates": params.get("allowed_updates")}
        return True

    async def api_setMyCommands(self, params: dict[str, Any]) -> Any:
        return True

    async def api_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        if not params.get("callback_query_id"):
            raise _ApiError("Bad Request: query is too old and response timeout expired or query ID is invalid")
        return True

    async def api_getUpdates(self, params: dict[str, Any]) -> Any:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        async with self._changed:
            # Confirming an offset drops the older updates, as Telegram does.
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            if not self.updates and timeout > 0:
                try:
                    await asyncio.wait_for(self._wait_update(), timeout)
                except TimeoutError:
                    pass
            return self.updates[:limit]

    async def _wait_update(self) -> None:
        while not self.updates:
            await self._changed.wait()

    def _chat(self, chat_id: Any) -> dict[str, Any]:
        for (cid, _), msg in self.messages.items():
            if str(cid) == str(chat_id):
                return msg["chat"]
        raise _ApiError("Bad Request: chat not found")

    @staticmethod
    def _member(user_id: int, status: str) -> dict[str, Any]:
        user = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
        if status == "creator":
            return {"status": "creator", "user": user, "is_anonymous": False}
        if status == "administrator":
            rights = dict.fromkeys(("can_be_edited", "is_anonymous", "can_manage_chat", "can_delete_messages",
                                    "can_manage_video_chats", "can_restrict_members", "can_promote_members",
                                    "can_change_info", "can_invite_users", "can_post_stories",
                                    "can_edit_stories", "can_delete_stories"), False)
            return {"status": "administrator", "user": user, **rights, "can_manage_chat": True}
        return {"status": "member", "user": user}

    async def api_getChatMember(self, params: dict[str, Any]) -> Any:
        chat_id, user_id = int(params["chat_id"]), int(params["user_id"])
        self._chat(chat_id)
        return self._member(user_id, self.chat_admins.get(chat_id, {}).get(user_id, "member"))

    async def api_getChatAdministrators(self, params: dict[str, Any]) -> Any:
        chat_id = int(params["chat_id"])
        self._chat(chat_id)
        return [self._member(uid, st) for uid, st in self.chat_admins.get(chat_id, {}).items()]

    async def api_sendMessage(self, params: dict[str, Any]) -> Any:
        text = params.get("text") or ""
        if not text.strip():
            raise _ApiError("Bad Request: message text is empty")
        if _visible_len(text, params.get("parse_mode")) > 4096:
            raise _ApiError("Bad Request: message is too long")
        chat = self._chat(params["chat_id"])
        msg: dict[str, Any] = {"message_id": next(self._message_ids), "date": int(time.time()), "chat": chat,
                               "from": {k: BOT_USER[k] for k in ("id", "is_bot", "first_name", "username")},
                               "text": text}
        rp = params.get("reply_parameters")
        if rp:
            original = self.messages.get((chat["id"], rp["message_id"]))
            if original is None and not rp.get("allow_sending_without_reply"):
                raise _ApiError("Bad Request: message to be replied not found")
            if original is not None:
                msg["reply_to_message"] = original
        if params.get("message_thread_id") is not None:
            msg["message_thread_id"] = params["message_thread_id"]
            msg["is_topic_message"] = True
        self.messages[(chat["id"], msg["message_id"])] = msg
        return msg

    async def api_sendChatAction(self, params: dict[str, Any]) -> Any:
        # Bot API: chat_id, action (one of CHAT_ACTIONS), optional message_thread_id; returns True.
        if params.get("action") not in CHAT_ACTIONS:
            raise _ApiError("Bad Request: wrong parameter action in request")
        self._chat(params.get("chat_id"))
        return True

    async def api_editMessageText(self, params: dict[str, Any]) -> Any:
        key = (int(params["chat_id"]), int(params["message_id"]))
        msg = self.messages.get(key)
        if msg is None:
            raise _ApiError("Bad Request: message to edit not found")
        if msg.get("text") == params.get("text"):
            raise _ApiError("Bad Request: message is not modified: specified new message content and reply "
                            "markup are exactly the same as a current content and reply markup of the message")
        if _visible_len(params.get("text") or "", params.get("parse_mode")) > 4096:
            raise _ApiError("Bad Request: MESSAGE_TOO_LONG")
        msg = {**msg, "text": params.get("text"), "edit_date": int(time.time())}
        if params.get("reply_markup"):
            msg["reply_markup"] = params["reply_markup"]
        self.messages[key] = msg
        return msg


def _visible_len(text: str, parse_mode: str | None) -> int:
    """Telegram's length: UTF-16 code units of the text after HTML parsing."""
    if (parse_mode or "").upper() == "HTML":
        text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return len(text.encode("utf-16-le")) // 2


class _ApiError(Exception):
    def __init__(self, description: str):
        super().__init__(description)
        self.description = description
