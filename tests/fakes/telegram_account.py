"""An in-process stand-in for Telethon's `TelegramClient` (the methods core/watch/mtproto.py calls), answering with
Telethon's real TL types and raising its real errors, for the account reader and `tipline watch login`.

No MTProto server that runs locally could be installed here (PyPI has clients, proxies and a MITM tool; the
Python test servers found are GitHub-only experiments that also need Telethon's built-in server keys
replaced), so the MTProto wire itself is not exercised: everything above `client(request)` is.

    tg = FakeAccountTelegram(api_id=1, api_hash="h", phone="+380501112233", code="12345", password="pw")
    tg.channel("kanal", "Канал", posts=30)            # a public broadcast channel, posts 1..30
    tg.post("kanal", "text", views=1200, forward=("other", 7))
    tg.user("person"); tg.group("chat")                # names that are not channels
    tg.fail(errors.FloodWaitError(None, capture=300))  # the next request raises it
    factory = tg.factory                               # core/watch/mtproto.py ClientFactory
    tg.requests                                        # [TL request objects], in order
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from telethon import errors
from telethon.tl import functions, types
from telethon.tl.types import contacts
from telethon.tl.types import messages as tl_messages


@dataclass
class AccountPost:
    id: int
    text: str
    at: datetime
    views: int | None = None
    forward: tuple[str, int] | None = None  # (channel name, post id) it repeats
    hidden_forward: str = ""  # a forward from a hidden user: the name shown
    service: bool = False


@dataclass
class AccountChannel:
    name: str
    id: int
    access_hash: int
    title: str
    broadcast: bool = True
    restricted: str = ""
    private: bool = False  # history answers CHANNEL_PRIVATE
    posts: list[AccountPost] = field(default_factory=list)


class FakeAccountTelegram:
    def __init__(self, *, api_id: int = 1, api_hash: str = "0123456789abcdef", phone: str = "+380501112233",
                 code: str = "12345", password: str = "", first_name: str = "Tipline Reader",
                 username: str = "tipline_reader"):
        self.api_id, self.api_hash, self.phone, self.code, self.password = api_id, api_hash, phone, code, password
        self.first_name, self.username = first_name, username
        self.channels: dict[str, AccountChannel] = {}
        self.users: dict[str, int] = {}
        self.authorized: set[Path] = set()
        self.requests: list[Any] = []
        self.failures: list[BaseException] = []
        self.connects = 0
        self.logins = 0
        self._ids = 1000

    # --- the world ---------------------------------------------------------------------------------

    def _id(self) -> int:
        self._ids += 1
        return self._ids

    def channel(self, name: str, title: str = "", *, posts: int = 0, broadcast: bool = True) -> AccountChannel:
        ch = self.channels.get(name.lower())
        if ch is None:
            ch = AccountChannel(name, self._id(), self._id() * 7919, title or f"Канал {name}", broadcast)
            self.channels[name.lower()] = ch
        now = datetime.now(UTC)
        for i in range(posts):
            self.post(name, f"Сводка №{len(ch.posts) + 1}: новости канала {name}", views=100 * (i + 1),
                      at=now - timedelta(minutes=3 * (posts - i)))
        return ch

    def group(self, name: str) -> AccountChannel:
        return self.channel(name, broadcast=False)

    def user(self, name: str) -> None:
        self.users[name.lower()] = self._id()

    def post(self, name: str, text: str, *, views: int | None = None, at: datetime | None = None,
             forward: tuple[str, int] | None = None, hidden_forward: str = "", service: bool = False) -> AccountPost:
        ch = self.channels[name.lower()]
        p = AccountPost(len(ch.posts) + 1, text, at or datetime.now(UTC), views, forward, hidden_forward, service)
        ch.posts.append(p)
        return p

    def fail(self, exc: BaseException, times: int = 1) -> None:
        self.failures.extend([exc] * times)

    def factory(self, session: Path, api_id: int, api_hash: str) -> FakeClient:
        return FakeClient(self, session, api_id, api_hash)

    def of(self, kind: type) -> list[Any]:
        return [r for r in self.requests if isinstance(r, kind)]

    # --- answers -----------------------------------------------------------------------------------

    def _tl_channel(self, ch: AccountChannel) -> types.Channel:
        reasons = [types.RestrictionReason(platform="all", reason="other", text=ch.restricted)] if ch.restricted \
            else None
        return types.Channel(id=ch.id, title=ch.title, photo=types.ChatPhotoEmpty(), date=datetime.now(UTC),
                             broadcast=ch.broadcast or None, megagroup=(not ch.broadcast) or None,
                             access_hash=ch.access_hash, username=ch.name, restricted=bool(ch.restricted) or None,
                             restriction_reason=reasons)

    def answer(self, request: Any) -> Any:
        self.requests.append(request)
        if self.failures:
            raise self.failures.pop(0)
        if isinstance(request, functions.contacts.ResolveUsernameRequest):
            return self._resolve(request)
        if isinstance(request, functions.messages.GetHistoryRequest):
            return self._history(request)
        raise errors.RPCError(request, "METHOD_NOT_EXPECTED_BY_THE_FAKE", 400)

    def _resolve(self, request: Any) -> contacts.ResolvedPeer:
        name = request.username.lower()
        if name in self.users:
            uid = self.users[name]
            return contacts.ResolvedPeer(peer=types.PeerUser(uid), chats=[],
                                         users=[types.User(id=uid, access_hash=uid * 3, first_name=name, username=name)])
        ch = self.channels.get(name)
        if ch is None:
            raise errors.UsernameNotOccupiedError(request)
        return contacts.ResolvedPeer(peer=types.PeerChannel(ch.id), chats=[self._tl_channel(ch)], users=[])

    def _history(self, request: Any) -> tl_messages.ChannelMessages:
        peer = request.peer
        ch = next((c for c in self.channels.values() if c.id == peer.channel_id), None)
        if ch is None or ch.access_hash != peer.access_hash:
            raise errors.ChannelInvalidError(request)
        if ch.private:
            raise errors.ChannelPrivateError(request)
        chosen = [p for p in ch.posts if p.id > request.min_id and (not request.offset_id or p.id < request.offset_id)]
        chosen = sorted(chosen, key=lambda p: -p.id)[:request.limit]  # newest first, as Telegram answers
        chats = {ch.id: self._tl_channel(ch)}
        out: list[Any] = []
        for p in chosen:
            if p.service:
                out.append(types.MessageService(id=p.id, peer_id=types.PeerChannel(ch.id), date=p.at, post=True,
                                                action=types.MessageActionPinMessage()))
                continue
            fwd = None
            if p.forward is not None:
                origin = self.channels[p.forward[0].lower()]
                chats[origin.id] = self._tl_channel(origin)
                fwd = types.MessageFwdHeader(date=p.at, from_id=types.PeerChannel(origin.id), channel_post=p.forward[1])
            elif p.hidden_forward:
                fwd = types.MessageFwdHeader(date=p.at, from_name=p.hidden_forward)
            out.append(types.Message(id=p.id, peer_id=types.PeerChannel(ch.id), date=p.at, message=p.text, post=True,
                                     views=p.views, fwd_from=fwd))
        return tl_messages.ChannelMessages(pts=1, count=len(ch.posts), messages=out, topics=[],
                                           chats=list(chats.values()), users=[])


class FakeClient:
    """What `TelegramClient(session, api_id, api_hash)` is to core/watch/mtproto.py."""

    def __init__(self, tg: FakeAccountTelegram, session: Path, api_id: int, api_hash: str):
        self.tg, self.session, self.api_id, self.api_hash = tg, Path(session), api_id, api_hash
        self.connected = False
        self._code_sent = ""
        self._needs_password = False

    async def connect(self) -> None:
        if self.tg.failures and isinstance(self.tg.failures[0], (OSError, ConnectionError)):
            raise self.tg.failures.pop(0)
        self.tg.connects += 1
        self.connected = True
        if not self.session.exists():  # Telethon's SQLite session makes the file on connect
            self.session.write_bytes(b"")

    def disconnect(self) -> None:
        self.connected = False

    async def is_user_authorized(self) -> bool:
        return self.session in self.tg.authorized and self.session.exists()

    async def __call__(self, request: Any) -> Any:
        assert self.connected, "a request before connect()"
        if self.session not in self.tg.authorized:
            raise errors.AuthKeyUnregisteredError(request)
        return self.tg.answer(request)

    async def send_code_request(self, phone: str) -> Any:
        request = functions.auth.SendCodeRequest(phone, self.api_id, self.api_hash, types.CodeSettings())
        self.tg.requests.append(request)
        if self.tg.failures:
            raise self.tg.failures.pop(0)
        if (self.api_id, self.api_hash) != (self.tg.api_id, self.tg.api_hash):
            raise errors.ApiIdInvalidError(request)
        if phone.replace(" ", "") != self.tg.phone:
            raise errors.PhoneNumberInvalidError(request)
        self._code_sent = "hash-" + phone[-4:]
        return types.auth.SentCode(type=types.auth.SentCodeTypeApp(length=5), phone_code_hash=self._code_sent)

    async def sign_in(self, phone: str | None = None, code: str | None = None, *, password: str | None = None,
                      phone_code_hash: str | None = None) -> Any:
        if password is not None:
            request: Any = functions.auth.CheckPasswordRequest(types.InputCheckPasswordEmpty())
            if not self._needs_password or password != self.tg.password:
                raise errors.PasswordHashInvalidError(request)
            return self._logged_in()
        request = functions.auth.SignInRequest(phone or "", phone_code_hash or "", code)
        self.tg.requests.append(request)
        if phone_code_hash != self._code_sent or not self._code_sent:
            raise errors.PhoneCodeExpiredError(request)
        if code != self.tg.code:
            raise errors.PhoneCodeInvalidError(request)
        if self.tg.password:
            self._needs_password = True
            raise errors.SessionPasswordNeededError(request)
        return self._logged_in()

    def _logged_in(self) -> types.User:
        self.tg.authorized.add(self.session)
        self.tg.logins += 1
        self.session.write_bytes(b"SQLite format 3\x00 (a logged-in session)")  # Telethon saves the auth key
        return self._me()

    def _me(self) -> types.User:
        return types.User(id=777, is_self=True, first_name=self.tg.first_name, username=self.tg.username)

    async def get_me(self) -> Any:
        return self._me() if self.session in self.tg.authorized else None

    async def log_out(self) -> bool:
        self.tg.authorized.discard(self.session)
        self.session.unlink(missing_ok=True)  # Telethon deletes its session file on log_out
        return True
