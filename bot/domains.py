"""Trusted (allow) and blocked (deny) source domains: the admin commands and the rules the engine reads.

Commands (platform-neutral; the adapters only recognise them and check chat-admin rights):

    /domains list
    /domains allow add|remove <domain>
    /domains deny add|remove <domain>
    /enrichment domains add|remove|list [<domain>]     (alias: the allow list)

Scopes: rules changed in a private chat (Telegram private chat, Slack DM or slash command) are global;
rules changed in a Telegram group belong to that chat ("telegram:<chat id>"). Global changes need a
configured admin (`Settings.admins`, TIPLINE_ADMINS); chat changes also accept the chat's own
administrators. Every change and every refusal is written to the `audit` table.

For the engine (core/evidence/credibility.py consumes this): `effective_rules(db, scope)` gives the
(allow, deny) domain sets in force for a chat, and `domain_matches(domain, rules)` tests a source's
host against one set. Denied domains are never cited; allowed domains get the top credibility tier.
Check deny first: a domain that matches both (e.g. allow `*.gov`, deny `bad.gov`) is denied.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.admins import Admins, ChatAdminCheck
from bot.requests import DomainsRequest, chat_scope  # noqa: F401 (chat_scope: used by importers)
from core.evidence.credibility import DomainRules
from storage.domains import GLOBAL, DomainStore, Rule
from storage.sqlite import Database

log = logging.getLogger(__name__)

REFUSED = "Only admins can change trusted domains."
USAGE = (
    "Usage:\n"
    "/domains list\n"
    "/domains allow add <domain> · /domains allow remove <domain>\n"
    "/domains deny add <domain> · /domains deny remove <domain>\n"
    "A domain is written like example.com; *.gov (or .gov) covers gov and every subdomain."
)
LIST_NAMES = {"allow": "trusted domains", "deny": "blocked domains"}

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


class InvalidDomain(ValueError):
    """`str(exc)` says why, as the end of the sentence "… is not a valid domain: <why>"."""


def normalize_domain(raw: str, *, single_label_ok: bool = False) -> str:
    """`https://www.Example.COM/path` -> `example.com`; `bücher.de` -> `xn--bcher-kva.de`; `.gov` -> `*.gov`.

    Strips scheme, credentials, path, query, port and a leading `www.`, lowercases and IDNA-encodes.
    Raises `InvalidDomain` for IP addresses, single labels (`localhost`), spaces, characters not
    allowed in host names, and labels over 63 characters.
    """
    s = raw.strip().lower()
    if not s:
        raise InvalidDomain("it is empty")
    s = _SCHEME.sub("", s)
    s = re.split(r"[/?#]", s, maxsplit=1)[0]
    s = s.rsplit("@", 1)[-1]
    suffix = False
    if s.startswith("*."):
        suffix, s = True, s[2:]
    elif s.startswith("."):
        suffix, s = True, s[1:]
    if s.startswith("[") or s.count(":") > 1:
        raise InvalidDomain("IP addresses can't be listed, only domain names")
    s = s.split(":", 1)[0].rstrip(".")
    if not s:
        raise InvalidDomain("it has no host name")
    if any(c.isspace() for c in s):
        raise InvalidDomain("it contains a space")
    try:
        ipaddress.ip_address(s)
    except ValueError:
        pass
    else:
        raise InvalidDomain("IP addresses can't be listed, only domain names")
    if s.startswith("www.") and not suffix:
        s = s[4:]
    labels = s.split(".")
    if any(not label for label in labels):
        raise InvalidDomain("it has an empty part between dots")
    out = []
    for label in labels:
        try:
            ascii_label = label.encode("idna").decode("ascii")
        except UnicodeError:
            if len(label) > 63:
                raise InvalidDomain(f"the part “{label[:20]}…” is longer than 63 characters") from None
            raise InvalidDomain(f"“{label}” contains characters that aren't allowed in domain names") from None
        ascii_label = ascii_label.lower()
        if len(ascii_label) > 63:
            raise InvalidDomain(f"the part “{label[:20]}…” is longer than 63 characters")
        if not _LABEL.match(ascii_label):
            raise InvalidDomain(f"“{label}” contains characters that aren't allowed in domain names")
        out.append(ascii_label)
    host = ".".join(out)
    if len(host) > 253:
        raise InvalidDomain("it is longer than 253 characters")
    if out[-1].isdigit():
        raise InvalidDomain("IP addresses can't be listed, only domain names")
    if len(out) < 2 and not suffix and not single_label_ok:
        raise InvalidDomain(f"“{host}” is a single name, not a domain (write *.{host} for a whole top-level domain)")
    return ("*." if suffix else "") + host


def domain_matches(domain: str, rules: Iterable[str]) -> bool:
    """Does a source's host (or URL) fall under any of `rules`?

    A plain rule (`example.com`) matches that host only (`www.` is ignored); a suffix rule (`*.gov`)
    matches `gov` itself and every subdomain. Hosts that are not valid domains never match.
    """
    try:
        host = normalize_domain(domain, single_label_ok=True)
    except InvalidDomain:
        return False
    if host.startswith("*."):
        host = host[2:]
    for rule in rules:
        if rule.startswith("*."):
            base = rule[2:]
            if host == base or host.endswith("." + base):
                return True
        elif host == rule:
            return True
    return False


async def effective_rules(db: Database, scope: str) -> tuple[set[str], set[str]]:
    """(allow, deny) in force for `scope`: the global rules plus the chat's, the chat's winning a tie."""
    rules = await DomainStore(db).rules([GLOBAL, scope])
    merged: dict[str, Rule] = {}
    for r in sorted(rules, key=lambda r: r.scope != GLOBAL):  # global first, then the chat overrides
        merged[r.domain] = r.rule
    return ({d for d, r in merged.items() if r == "allow"}, {d for d, r in merged.items() if r == "deny"})


class DomainPolicy:
    """The engine's `SourcePolicy`: which sources a chat's admins (and the global admins) denied."""

    def __init__(self, db: Database):
        self.db = db

    async def rules(self, scope: str) -> DomainRules:
        """Allow and deny patterns in force for `scope`, for ranking (allowed = top credibility tier)."""
        allow, deny = await effective_rules(self.db, scope)
        return DomainRules(allow=frozenset(allow), deny=frozenset(deny))

    async def denied_filter(self, scope: str) -> Callable[[str], bool]:
        _, deny = await effective_rules(self.db, scope)
        if not deny:
            return lambda url: False
        return lambda url: domain_matches(url, deny)


# ---------------------------------------------------------------------------------------------
# Recognising and parsing the commands

_DOMAINS_CMD = re.compile(r"^/(?P<cmd>domains|enrichment)(?:@(?P<bot>[A-Za-z0-9_]{3,64}))?(?=\s|$)(?P<rest>.*)$",
                          re.IGNORECASE | re.DOTALL)
_BARE = re.compile(r"^domains(?=\s|$)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def command_args(text: str, *, bot_username: str | None = None, bare: bool = False) -> str | None:
    """The arguments of a domains command in `text`, normalised to the `/domains` form, else None.

    `/enrichment domains add x` becomes `allow add x`; with `bare=True` (Slack DMs) `domains list`
    without the slash counts too. A command addressed to another bot (`/domains@other`) is None.
    """
    text = text.strip()
    m = _DOMAINS_CMD.match(text)
    if m:
        if m["bot"] and bot_username and m["bot"].lower() != bot_username.lower():
            return None
        rest = m["rest"].strip()
        if m["cmd"].lower() == "enrichment":
            words = rest.split(None, 1)
            if not words or words[0].lower() != "domains":
                return "help"
            return enrichment_args(words[1] if len(words) > 1 else "")
        return rest
    if bare and (b := _BARE.match(text)):
        return b["rest"].strip()
    return None


def enrichment_args(rest: str) -> str:
    """`add x` / `remove x` / `list` of the `/enrichment domains` alias -> the `/domains` form."""
    words = rest.split()
    if words and words[0].lower() in ("add", "remove"):
        return "allow " + rest.strip()
    return rest.strip() or "help"


@dataclass(frozen=True)
class Parsed:
    op: str  # "list" | "add" | "remove" | "usage"
    rule: Rule | None = None
    domain: str | None = None  # as typed


def parse(args: str) -> Parsed:
    words = args.split()
    if len(words) == 1 and words[0].lower() == "list":
        return Parsed("list")
    if len(words) == 3 and words[0].lower() in ("allow", "deny") and words[1].lower() in ("add", "remove"):
        rule: Rule = "allow" if words[0].lower() == "allow" else "deny"
        return Parsed(words[1].lower(), rule, words[2])
    return Parsed("usage")


# ---------------------------------------------------------------------------------------------
# Executing them


class DomainCommands:
    """Runs domains commands against the database; returns the sentence to answer with."""

    def __init__(self, db: Database, admins: Iterable[str] = ()):
        self.store = DomainStore(db)
        self.admins = Admins(admins)
        self.is_admin = self.admins.is_admin

    async def _may_change(self, req: DomainsRequest, is_chat_admin: ChatAdminCheck | None) -> bool:
        # Global rules are for configured admins only; a group's own, also for its admins.
        return await self.admins.allows(req.platform, req.user_id, req.chat_id, is_chat_admin,
                                        chat_admins=req.scope != GLOBAL and req.user_id is not None)

    async def _audit(self, req: DomainsRequest, action: str, detail: str) -> None:
        await self.store.audit(platform=req.platform, chat_id=req.chat_id, user_id=req.user_id, action=action,
                               detail=detail)

    async def handle(self, req: DomainsRequest, *, is_chat_admin: ChatAdminCheck | None = None) -> str:
        cmd = parse(req.args)
        if cmd.op == "usage":
            return USAGE
        if cmd.op == "list":
            return await self.listing(req.scope)
        assert cmd.rule is not None and cmd.domain is not None
        if not await self._may_change(req, is_chat_admin):
            await self._audit(req, "domains.refused", f"scope={req.scope} {cmd.rule} {cmd.op} {cmd.domain}")
            return REFUSED
        try:
            domain = normalize_domain(cmd.domain)
        except InvalidDomain as exc:
            return f"“{cmd.domain}” is not a valid domain: {exc}."
        where = "the global" if req.scope == GLOBAL else "this chat's"
        name = LIST_NAMES[cmd.rule]
        if cmd.op == "add":
            previous = await self.store.set_rule(req.scope, domain, cmd.rule,
                                                 None if req.user_id is None else str(req.user_id))
            if previous == cmd.rule:
                return f"{domain} is already on {where} {name}."
            await self._audit(req, f"domains.{cmd.rule}.add", f"scope={req.scope} domain={domain}"
                              + (f" replaced={previous}" if previous else ""))
            if previous:
                return f"Moved {domain} from {where} {LIST_NAMES[previous]} to {where} {name}."
            return f"Added {domain} to {where} {name}."
        if await self.store.remove(req.scope, domain, cmd.rule):
            await self._audit(req, f"domains.{cmd.rule}.remove", f"scope={req.scope} domain={domain}")
            return f"Removed {domain} from {where} {name}."
        return f"{domain} is not on {where} {name}."

    async def listing(self, scope: str) -> str:
        rules = await self.store.rules([GLOBAL, scope])
        sections = [(GLOBAL, "Global")] + ([] if scope == GLOBAL else [(scope, "This chat")])
        lines: list[str] = []
        for sc, title in sections:
            for rule in ("allow", "deny"):
                names = [r.domain for r in rules if r.scope == sc and r.rule == rule]
                lines.append(f"{title} {LIST_NAMES[rule]}: {', '.join(names) if names else 'none'}")
        return "\n".join(lines)
