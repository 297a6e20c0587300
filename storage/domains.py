"""Domain allow/deny rules and the audit trail of admin actions (tables from migration 2).

A rule belongs to a scope: "global" or a chat ("telegram:<chat id>", "slack:<channel id>"). A domain
has at most one rule per scope (allow or deny). Writes go through `Database.transaction()`, so they
are serialised with every other write; reads use the shared connection.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from storage.sqlite import Database

Rule = Literal["allow", "deny"]
GLOBAL = "global"


@dataclass(frozen=True)
class DomainRule:
    scope: str
    domain: str
    rule: Rule
    added_by: str | None
    added_at: str | None


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: str
    platform: str | None
    chat_id: str | None
    user_id: str | None
    action: str
    detail: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class DomainStore:
    def __init__(self, db: Database):
        self.db = db

    async def get(self, scope: str, domain: str) -> Rule | None:
        cur = await self.db._conn.execute("SELECT rule FROM domain_rules WHERE scope = ? AND domain = ?",
                                          (scope, domain))
        row = await cur.fetchone()
        return row[0] if row else None

    async def set_rule(self, scope: str, domain: str, rule: Rule, added_by: str | None = None) -> Rule | None:
        """Add (or switch) the rule for `domain` in `scope`; returns the rule it had before, if any."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("SELECT rule FROM domain_rules WHERE scope = ? AND domain = ?",
                                     (scope, domain))
            row = await cur.fetchone()
            previous: Rule | None = row[0] if row else None
            if previous != rule:
                await conn.execute(
                    "INSERT INTO domain_rules (scope, domain, rule, added_by, added_at) VALUES (?,?,?,?,?) "
                    "ON CONFLICT(scope, domain) DO UPDATE SET rule = excluded.rule, added_by = excluded.added_by, "
                    "added_at = excluded.added_at",
                    (scope, domain, rule, added_by, _now()))
        return previous

    async def remove(self, scope: str, domain: str, rule: Rule) -> bool:
        """Remove `domain` from the `rule` list of `scope`; False if it was not on that list."""
        async with self.db.transaction() as conn:
            cur = await conn.execute("DELETE FROM domain_rules WHERE scope = ? AND domain = ? AND rule = ?",
                                     (scope, domain, rule))
            return cur.rowcount > 0

    async def rules(self, scopes: Iterable[str]) -> list[DomainRule]:
        scopes = list(dict.fromkeys(scopes))
        if not scopes:
            return []
        cur = await self.db._conn.execute(
            f"SELECT scope, domain, rule, added_by, added_at FROM domain_rules "
            f"WHERE scope IN ({','.join('?' * len(scopes))}) ORDER BY scope, rule, domain", scopes)
        return [DomainRule(r[0], r[1], r[2], r[3], r[4]) for r in await cur.fetchall()]

    # --- audit -------------------------------------------------------------------------------

    async def audit(self, *, platform: str | None, chat_id: object, user_id: object, action: str,
                    detail: str = "") -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO audit (at, platform, chat_id, user_id, action, detail) VALUES (?,?,?,?,?,?)",
                (_now(), platform, None if chat_id is None else str(chat_id),
                 None if user_id is None else str(user_id), action, detail))

    async def audit_entries(self, limit: int = 100) -> list[AuditEntry]:
        """The newest entries first."""
        cur = await self.db._conn.execute(
            "SELECT id, at, platform, chat_id, user_id, action, detail FROM audit ORDER BY id DESC LIMIT ?",
            (limit,))
        return [AuditEntry(*r) for r in await cur.fetchall()]
