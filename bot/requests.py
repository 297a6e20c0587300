"""What the chat adapters hand the bot: an incoming message and the requests it is routed into.

A leaf: plain values that nothing in bot/ needs to build, so every other module (the router, the
commands, the check service, the queue, the card) can import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

from schema.text import safe_text
from storage.domains import GLOBAL

ChatKind = Literal["private", "group", "channel"]

def chat_scope(platform: str, chat_id: object) -> str:
    """Whose source rules apply in a group chat: that chat's own."""
    return f"{platform}:{chat_id}"


@dataclass(frozen=True)
class ImageRef:
    """An image on a platform, as a message carries it: enough to download it later."""

    platform: str
    file_id: str
    mime: str = ""  # as the platform declares it; "" when it does not (Telegram photos are JPEG)
    size: int | None = None  # bytes, when the platform says
    name: str = ""

    @classmethod
    def from_payload(cls, value: Any) -> ImageRef | None:
        """Back from the queue's JSON (`dataclasses.asdict`), or None for anything else."""
        if isinstance(value, ImageRef) or value is None:
            return value
        if isinstance(value, dict) and value.get("platform") and value.get("file_id"):
            size = value.get("size")
            return cls(platform=str(value["platform"]), file_id=str(value["file_id"]),
                       mime=str(value.get("mime") or ""), size=size if isinstance(size, int) else None,
                       name=str(value.get("name") or ""))
        return None


@dataclass(frozen=True)
class IncomingMessage:
    """One chat message, platform-neutral. `text` is the message text or a media caption; `image` a
    photo or image file attached to it (read by OCR when the message is checked)."""

    platform: str
    chat_id: int | str
    chat_kind: ChatKind
    message_id: int | str
    text: str
    thread_id: int | str | None = None
    sender_id: int | str | None = None
    forwarded_from: str | None = None
    reply_to: IncomingMessage | None = None
    is_admin_hint: bool = False
    received_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    raw: Any = field(default=None, repr=False, compare=False)
    chat_title: str = ""  # a group's or channel's name, and its public @handle where it has one
    chat_handle: str = ""
    image: ImageRef | None = None
    language: str = ""  # the sender's interface language where the platform says it (Telegram's language_code)

    def __post_init__(self) -> None:
        # Made safe where it enters, before the durable queue stores it (SQLite refuses lone surrogates).
        for name in ("text", "forwarded_from", "chat_title", "chat_handle"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, safe_text(value))


@dataclass(frozen=True)
class CheckRequest:
    """Check `text` (and the text read from `image`, if any); answer as a reply to message `target_id`
    (the checked message)."""

    text: str
    chat_id: int | str
    target_id: int | str
    thread_id: int | str | None = None
    forwarded_from: str | None = None
    requested_by: int | str | None = None
    scope: str = GLOBAL  # whose source rules apply: global, or a group chat's own
    image: ImageRef | None = None
    # Where it came from ("telegram", "slack"): with `requested_by`, whose check it is (the stored check
    # keeps their pseudonym, for /forget me). Set by ChatApp and the queue's workers, not by the adapters.
    platform: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", safe_text(self.text))
        # The durable queue stores the request as JSON: the image comes back as a dict.
        object.__setattr__(self, "image", ImageRef.from_payload(self.image))
        if self.forwarded_from is not None:
            object.__setattr__(self, "forwarded_from", safe_text(self.forwarded_from))


@dataclass(frozen=True)
class Info:
    """Answer with a fixed text (/start, /help, usage hints)."""

    kind: Literal["start", "help", "usage"]
    chat_id: int | str
    target_id: int | str
    thread_id: int | str | None = None
    language: str = ""  # the asker's interface language, for the texts that have one


@dataclass(frozen=True)
class EvidenceRequest:
    """Show the stored evidence and trace of check `check_id` ("" = no id given: usage)."""

    check_id: str
    chat_id: int | str
    target_id: int | str
    thread_id: int | str | None = None


@dataclass(frozen=True)
class DomainsRequest:
    """A domains command from a chat: `args` in the `/domains` form, answered as a reply to `target_id`."""

    platform: str
    chat_id: int | str
    target_id: int | str
    user_id: int | str | None
    scope: str  # GLOBAL or chat_scope(platform, chat_id)
    args: str
    thread_id: int | str | None = None


@dataclass(frozen=True)
class ChatCommandRequest:
    """A chat-administration command from a chat, answered as a reply to `target_id`. ChatApp picks the
    handler by the exact subclass."""

    platform: str
    chat_id: int | str
    chat_kind: str  # "private" | "group" | "channel"
    target_id: int | str
    user_id: int | str | None
    command: str
    args: str = ""
    thread_id: int | str | None = None


@dataclass(frozen=True)
class ChatSettingsRequest(ChatCommandRequest):
    """/track, /auto, /forget or /stats (`command` one of CHAT_COMMANDS)."""

    title: str = ""
    handle: str = ""


@dataclass(frozen=True)
class DigestRequest(ChatCommandRequest):
    """/digest, /trending or /alerts (`command` one of DIGEST_COMMANDS)."""


@dataclass(frozen=True)
class ReviewRequest:
    """/review: the checks waiting for a verdict, or `<id> <rating> <url>` recording one."""

    platform: str
    chat_id: int | str
    target_id: int | str
    user_id: int | str | None
    args: str
    thread_id: int | str | None = None


@dataclass(frozen=True)
class WatchRequest:
    """A /watch command, answered as a reply to `target_id`."""

    platform: str
    chat_id: int | str
    target_id: int | str
    user_id: int | str | None
    args: str = ""
    thread_id: int | str | None = None


Action = (CheckRequest | Info | DomainsRequest | EvidenceRequest | ChatSettingsRequest | ReviewRequest | DigestRequest
          | WatchRequest | None)


class Addressed(Protocol):
    """What every routed request carries: where it came from and which message to answer."""

    @property
    def chat_id(self) -> int | str: ...

    @property
    def target_id(self) -> int | str: ...

    @property
    def thread_id(self) -> int | str | None: ...
