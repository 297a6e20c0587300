"""/watch: the admins' command for watched public Telegram channels (bot/watch.py).

    /watch add @channel [t.me/other …]   watch public channels (no admin rights in them needed); each is read
                                         at once and answered with how that went
    /watch list  (or /watch)             every watched channel with its status
    /watch remove @channel […]           stop watching; what was stored of it is deleted

Rights, as for /track: a configured admin (TIPLINE_ADMINS) anywhere, and a Telegram group's own
administrators in their group (Slack has no per-channel admin role: configured admins only). What is
watched is one list for the whole deployment, feeding every chat's "also reported by", digests and
alerts, as a tracked chat does. Every change and refusal goes to the audit log.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from bot.admins import Admins, ChatAdminCheck
from bot.requests import WatchRequest
from storage.domains import DomainStore
from storage.sqlite import Database

if TYPE_CHECKING:  # bot/router.py routes /watch: a `tipline check` must not load the reader's HTTP client
    from bot.watch import WatchService

log = logging.getLogger(__name__)

WATCH_COMMAND = "watch"
REFUSED = "Only admins can change or list the watched channels."
NOT_AVAILABLE = "Watching channels is not available on this deployment (it needs tracking, which is off here)."
USAGE = ("Usage:\n"
         "/watch add @channel — read a public Telegram channel from its web preview (a t.me link works too; "
         "several at once)\n"
         "/watch add https://outlet.example/rss.xml — read a news outlet's RSS or Atom feed\n"
         "/watch list — the watched channels and feeds and how each was last read\n"
         "/watch remove @channel (or a feed's address) — stop watching it and delete what was stored of it")
_ADD = {"add", "+"}
_REMOVE = {"remove", "rm", "del", "delete", "-"}
_LIST = {"list", "ls", "status"}


def parse(args: str) -> tuple[str, list[str]]:
    """("add" | "remove" | "list" | "usage", the channels named)."""
    words = [w for w in re.split(r"[\s,]+", args.strip()) if w]
    if not words:
        return "list", []
    op, rest = words[0].lower(), words[1:]
    if op in _LIST and not rest:
        return "list", []
    if op in _ADD and rest:
        return "add", rest
    if op in _REMOVE and rest:
        return "remove", rest
    return "usage", []


class WatchCommands:
    def __init__(self, db: Database, service: WatchService | None, admins: Admins):
        self.service = service
        self.admins = admins
        self.audit_log = DomainStore(db)

    async def _allowed(self, req: WatchRequest, is_chat_admin: ChatAdminCheck | None) -> bool:
        return await self.admins.allows(req.platform, req.user_id, req.chat_id, is_chat_admin,
                                        chat_admins=req.user_id is not None)

    async def handle(self, req: WatchRequest, *, is_chat_admin: ChatAdminCheck | None = None) -> str:
        """`is_chat_admin`: whether the sender administers the group the command came from (None: a private
        chat, or a platform without chat admins)."""
        op, names = parse(req.args)
        if op == "usage":
            return USAGE
        if not await self._allowed(req, is_chat_admin):
            await self._audit(req, f"watch.{op}.refused", " ".join(names))
            return REFUSED
        if self.service is None:
            return NOT_AVAILABLE
        if op == "list":
            return await self.service.listing()
        if op == "add":
            lines = await self.service.add(names, by=f"{req.platform}:{req.user_id}")
        else:
            lines = await self.service.remove(names)
        await self._audit(req, f"watch.{op}", " ".join(names)[:500])
        return "\n".join(lines)

    async def _audit(self, req: WatchRequest, action: str, detail: str) -> None:
        await self.audit_log.audit(platform=req.platform, chat_id=req.chat_id, user_id=req.user_id, action=action,
                                   detail=detail)
