"""Telethon, the MTProto client of the account reader (core/watch/account_reader.py) and of `tipline watch login`:
the only module that imports it. Telethon is the optional `account` extra (`pip install 'tipline[account]'`),
so nothing imports this module unless an operator configured the account (TIPLINE_TELEGRAM_API_ID/_HASH).

Two requests read channels, both raw, so no Telethon convenience sends anything more:
`contacts.resolveUsername` (once per name, kept) and `messages.getHistory` (with `min_id`, `offset_id`).
Telethon's own flood sleep is off (`flood_sleep_threshold=0`): a FLOOD_WAIT comes back here as
`AccountFlood` and pauses every account request (the reader's rule, not a silent sleep inside one call).
Updates are not received (`receive_updates=False`): the account subscribes to nothing.

Telethon errors become the reader's `AccountError`s here, so nothing above knows Telethon. The client is
made by a factory (`telethon_client`); tests pass an in-process stand-in of the same methods that answers
with Telethon's real TL types and raises its real errors (the MTProto wire itself is not exercised).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any, Protocol

from telethon import TelegramClient, errors
from telethon.tl import functions, types

from core.watch.account_reader import AccountFlood, AccountLoggedOut, AccountRefused, Resolved
from core.watch.telegram_preview import MAX_TEXT, NotAChannel, PreviewPost, channel_name, post_link

log = logging.getLogger(__name__)

SESSION_FILE = "telegram-account.session"  # in the data dir, mode 0600


class TelegramLike(Protocol):
    """The part of Telethon's `TelegramClient` tipline calls."""

    async def connect(self) -> None: ...
    def disconnect(self) -> Any: ...
    async def is_user_authorized(self) -> bool: ...
    async def __call__(self, request: Any) -> Any: ...
    async def send_code_request(self, phone: str) -> Any: ...
    async def sign_in(self, phone: str | None = None, code: str | None = None, *, password: str | None = None,
                      phone_code_hash: str | None = None) -> Any: ...
    async def get_me(self) -> Any: ...
    async def log_out(self) -> bool: ...


ClientFactory = Callable[[Path, int, str], TelegramLike]


def telethon_client(session: Path, api_id: int, api_hash: str) -> TelegramLike:
    """A Telethon client on `session`: no automatic flood sleep, no updates, one retry."""
    client: Any = TelegramClient(str(session), api_id, api_hash, flood_sleep_threshold=0, receive_updates=False,
                                 request_retries=1, connection_retries=1, timeout=15, device_model="tipline",
                                 system_version="server", app_version="tipline")
    return client  # type: ignore[no-any-return]


def private_file(path: Path) -> None:
    """Create `path` (or keep it) readable by its owner only: the session is the account's key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


async def _disconnect(client: TelegramLike) -> None:
    result = client.disconnect()
    if hasattr(result, "__await__"):
        await result


def _translated(exc: BaseException) -> BaseException:
    """Telethon's error as the reader's."""
    if isinstance(exc, errors.FloodError):
        seconds = getattr(exc, "seconds", None)
        return AccountFlood(float(seconds) if seconds else 60.0)
    if isinstance(exc, (errors.UnauthorizedError, errors.AuthKeyError)):
        return AccountLoggedOut(type(exc).__name__.removesuffix("Error"))
    if isinstance(exc, (errors.UsernameNotOccupiedError, errors.UsernameInvalidError)):
        return AccountRefused("not_found", "no one has this name")
    if isinstance(exc, (errors.ChannelPrivateError, errors.ChannelBannedError)):
        return AccountRefused("private", "the channel is private, or the account was banned from it")
    if isinstance(exc, (errors.ChannelInvalidError, errors.PeerIdInvalidError)):
        return AccountRefused("stale", "the kept channel id no longer works")
    if isinstance(exc, errors.RPCError):
        return AccountRefused("unreachable", f"Telegram answered {exc.code} {exc.message}")
    return exc


def _restriction(chat: Any) -> str:
    reasons = getattr(chat, "restriction_reason", None) or []
    if not getattr(chat, "restricted", False):
        return ""
    text = "; ".join(str(getattr(r, "text", "")) for r in reasons if getattr(r, "text", ""))
    return (text or "restricted by Telegram")[:200]


class TelethonChannels:
    """`ChannelSource` over Telethon (core/watch/account_reader.py). The client is made on the first `start` and
    only when the session file exists: without a login nothing connects."""

    def __init__(self, session: Path, api_id: int, api_hash: str, factory: ClientFactory = telethon_client):
        self.session = session
        self.api_id = api_id
        self.api_hash = api_hash
        self.factory = factory
        self._client: TelegramLike | None = None
        self._refused_mtime: float | None = None  # the session file that was not authorised

    async def start(self) -> bool:
        if self._client is not None:
            return True
        if not self.session.exists():
            return False
        mtime = self.session.stat().st_mtime
        if self._refused_mtime == mtime:
            return False  # the same session Telegram refused: nothing new to try until a new login
        os.chmod(self.session, 0o600)
        client = self.factory(self.session, self.api_id, self.api_hash)
        try:
            await client.connect()
            authorised = await client.is_user_authorized()
        except errors.RPCError as exc:
            await _disconnect(client)
            raise _translated(exc) from exc
        if not authorised:
            self._refused_mtime = mtime
            await _disconnect(client)
            return False
        self._client = client
        return True

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await _disconnect(client)

    async def _call(self, request: Any) -> Any:
        if self._client is None:
            raise AccountLoggedOut("not connected")
        try:
            return await self._client(request)
        except errors.RPCError as exc:
            translated = _translated(exc)
            if isinstance(translated, AccountLoggedOut):
                self._refused_mtime = self.session.stat().st_mtime if self.session.exists() else None
                await self.aclose()
            raise translated from exc

    async def resolve(self, name: str) -> Resolved:
        result = await self._call(functions.contacts.ResolveUsernameRequest(username=name))
        peer = result.peer
        if not isinstance(peer, types.PeerChannel):
            return Resolved("not_channel")
        chat = next((c for c in result.chats if getattr(c, "id", None) == peer.channel_id), None)
        if isinstance(chat, types.ChannelForbidden):
            raise AccountRefused("private", "the account cannot see this channel")
        if not isinstance(chat, types.Channel) or chat.access_hash is None:
            return Resolved("not_found")
        if not chat.broadcast:
            return Resolved("not_channel", chat.id, chat.access_hash, chat.title or "")
        return Resolved("channel", chat.id, chat.access_hash, chat.title or "", _restriction(chat))

    async def history(self, name: str, peer_id: int, access_hash: int, *, min_id: int, offset_id: int,
                      limit: int) -> Sequence[PreviewPost]:
        result = await self._call(functions.messages.GetHistoryRequest(
            peer=types.InputPeerChannel(channel_id=peer_id, access_hash=access_hash), offset_id=offset_id,
            offset_date=None, add_offset=0, limit=limit, max_id=0, min_id=min_id, hash=0))
        return posts_of(name, result)


def posts_of(name: str, result: Any) -> list[PreviewPost]:
    """A getHistory answer's messages as the preview's posts of channel `name` (text, time, views, forward)."""
    chats = {getattr(c, "id", None): c for c in getattr(result, "chats", [])}
    users = {getattr(u, "id", None): u for u in getattr(result, "users", [])}
    posts: list[PreviewPost] = []
    for m in getattr(result, "messages", []):
        if not isinstance(m, (types.Message, types.MessageService)):
            continue  # messageEmpty: a deleted post
        service = isinstance(m, types.MessageService)
        text = "" if service else (m.message or "")[:MAX_TEXT]
        at = m.date.astimezone(UTC) if m.date is not None else None
        name_from, link = _forward(m.fwd_from, chats, users) if not service else ("", "")
        posts.append(PreviewPost(name, int(m.id), text.strip(), at, m.views if not service else None,
                                 forwarded_from=name_from, forwarded_link=link, service=service))
    return posts


def _forward(fwd: Any, chats: dict[Any, Any], users: dict[Any, Any]) -> tuple[str, str]:
    """(the name shown after "Forwarded from", the original post's link when it is a public channel's)."""
    if fwd is None:
        return "", ""
    origin = fwd.from_id
    if isinstance(origin, types.PeerChannel):
        chat = chats.get(origin.channel_id)
        title = getattr(chat, "title", "") or "a channel"
        username = getattr(chat, "username", None) or ""
        try:
            public = channel_name(username) if username else ""
        except NotAChannel:
            public = ""
        return title, post_link(public, int(fwd.channel_post)) if public and fwd.channel_post else ""
    if isinstance(origin, types.PeerUser):
        user = users.get(origin.user_id)
        shown = " ".join(x for x in (getattr(user, "first_name", ""), getattr(user, "last_name", "")) if x)
        return shown or "a user", ""
    return (fwd.from_name or "a hidden user"), ""


# --- logging in -------------------------------------------------------------------------------------


class LoginFailed(Exception):
    """One sentence for the operator: why the login stopped."""


@dataclass(frozen=True)
class LoggedIn:
    who: str  # "Name (@username)"
    already: bool = False


Ask = Callable[[str], str]
TRIES = 3  # a code or a password typed wrong is asked again this many times in all


async def login(session: Path, api_id: int, api_hash: str, *, ask: Ask, ask_secret: Ask,
                factory: ClientFactory = telethon_client) -> LoggedIn:
    """Log the account in on `session` (created 0600): phone, the code Telegram sends, the 2FA password
    when the account has one. Raises `LoginFailed` with the reason; a half-done login leaves no session."""
    existed = session.exists()
    private_file(session)
    client = factory(session, api_id, api_hash)
    done = False
    try:
        try:
            await client.connect()
            if await client.is_user_authorized():
                done = True
                return LoggedIn(_who(await client.get_me()), already=True)
            phone = _given(ask("Phone number of the dedicated account (with the country code, e.g. +380…): "),
                           "phone number")
            sent = await client.send_code_request(phone)
            await _code(client, phone, getattr(sent, "phone_code_hash", None), ask, ask_secret)
            me = await client.get_me()
            done = True
            return LoggedIn(_who(me))
        except errors.FloodError as exc:
            seconds = getattr(exc, "seconds", None)
            raise LoginFailed(f"Telegram asks to wait {seconds or 'a while'} s before another login attempt.") from exc
        except errors.ApiIdInvalidError as exc:
            raise LoginFailed("Telegram refused TIPLINE_TELEGRAM_API_ID / TIPLINE_TELEGRAM_API_HASH: check them at "
                              "my.telegram.org (API development tools).") from exc
        except (errors.PhoneNumberInvalidError, errors.PhoneNumberUnoccupiedError) as exc:
            raise LoginFailed("Telegram does not know that phone number: write it with the country code, "
                              "e.g. +380501234567.") from exc
        except errors.PhoneNumberBannedError as exc:
            raise LoginFailed("Telegram has banned that phone number: it cannot be used.") from exc
        except (errors.PhoneCodeExpiredError, errors.PhoneCodeInvalidError) as exc:
            raise LoginFailed("The login code was wrong or expired: run `tipline watch login` again for a new "
                              "one.") from exc
        except errors.PasswordHashInvalidError as exc:
            raise LoginFailed(f"The two-step verification password was wrong {TRIES} times: login "
                              "stopped.") from exc
        except errors.RPCError as exc:
            raise LoginFailed(f"Telegram refused the login: {exc.message or type(exc).__name__}.") from exc
        except (OSError, TimeoutError, ConnectionError) as exc:
            raise LoginFailed(f"Telegram's servers could not be reached ({type(exc).__name__}).") from exc
        except (EOFError, KeyboardInterrupt) as exc:
            raise LoginFailed("Login cancelled.") from exc
    finally:
        await _disconnect(client)
        if done:
            private_file(session)
        elif not existed:
            session.unlink(missing_ok=True)


async def _code(client: TelegramLike, phone: str, code_hash: str | None, ask: Ask, ask_secret: Ask) -> None:
    for attempt in range(1, TRIES + 1):
        code = _given(ask("The code Telegram sent (in the Telegram app, or by SMS): "), "code")
        try:
            await client.sign_in(phone=phone, code=code, phone_code_hash=code_hash)
            return
        except errors.PhoneCodeInvalidError:
            if attempt == TRIES:
                raise
            print("That code is not right; try again.")
        except errors.SessionPasswordNeededError:
            await _password(client, ask_secret)
            return


async def _password(client: TelegramLike, ask_secret: Ask) -> None:
    for attempt in range(1, TRIES + 1):
        password = ask_secret("The account's two-step verification password: ")
        if not password:
            raise LoginFailed("No password given: login cancelled.")
        try:
            await client.sign_in(password=password)
            return
        except errors.PasswordHashInvalidError:
            if attempt == TRIES:
                raise
            print("That password is not right; try again.")


def _given(answer: str, what: str) -> str:
    answer = (answer or "").strip()
    if not answer:
        raise LoginFailed(f"No {what} given: login cancelled.")
    return answer


def _who(me: Any) -> str:
    name = " ".join(x for x in (getattr(me, "first_name", ""), getattr(me, "last_name", "")) if x) or "the account"
    username = getattr(me, "username", None)
    return f"{name} (@{username})" if username else name


async def logout(session: Path, api_id: int, api_hash: str, *, factory: ClientFactory = telethon_client) -> str:
    """End the session at Telegram and delete the file; one sentence saying what was done."""
    if not session.exists():
        return "No account is logged in."
    client = factory(session, api_id, api_hash)
    ended = False
    try:
        await client.connect()
        if await client.is_user_authorized():
            ended = bool(await client.log_out())
    except (errors.RPCError, OSError, TimeoutError, ConnectionError) as exc:
        log.info("watch logout: Telegram could not be told (%s)", exc)
    finally:
        await _disconnect(client)
        session.unlink(missing_ok=True)
    if ended:
        return "Logged out: the session is ended at Telegram and its file deleted."
    return ("The session file is deleted, but Telegram could not be told: end the session \"tipline\" in the "
            "account's Settings > Devices.")
