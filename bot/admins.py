"""Who may run an admin command: a configured admin (TIPLINE_ADMINS) anywhere, or this chat's own admin."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

log = logging.getLogger(__name__)

# Whether the sender administers the chat a command came from; asked only when a rule needs it.
ChatAdminCheck = Callable[[], Awaitable[bool]]


class Admins:
    """User ids from TIPLINE_ADMINS, optionally prefixed with their platform (`telegram:` / `slack:`)."""

    def __init__(self, ids: Iterable[str] = ()):
        self.ids = frozenset(a.strip() for a in ids if a and a.strip())

    def is_admin(self, platform: str, user_id: object) -> bool:
        if user_id is None:
            return False
        uid = str(user_id)
        return uid in self.ids or f"{platform}:{uid}" in self.ids

    async def allows(self, platform: str, user_id: object, chat_id: object, is_chat_admin: ChatAdminCheck | None,
                     *, chat_admins: bool = True) -> bool:
        """The one admin rule: a configured admin anywhere; else, where the command lets a chat's own admins
        act (`chat_admins`) and the platform can tell (`is_chat_admin`), whether the sender administers this
        chat. A platform that cannot answer counts as no."""
        if self.is_admin(platform, user_id):
            return True
        if not chat_admins or is_chat_admin is None:
            return False
        try:
            return await is_chat_admin()
        except Exception:
            log.warning("could not check chat admin rights of %s in %s", user_id, chat_id, exc_info=True)
            return False
