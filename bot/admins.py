"""Who is a configured admin (TIPLINE_ADMINS): one rule for every admin command."""

from __future__ import annotations

from collections.abc import Iterable


class Admins:
    """User ids from TIPLINE_ADMINS, optionally prefixed with their platform (`telegram:` / `slack:`)."""

    def __init__(self, ids: Iterable[str] = ()):
        self.ids = frozenset(a.strip() for a in ids if a and a.strip())

    def is_admin(self, platform: str, user_id: object) -> bool:
        if user_id is None:
            return False
        uid = str(user_id)
        return uid in self.ids or f"{platform}:{uid}" in self.ids
