"""SSRF guard for URLs that come from messages and web pages.

    guard = SSRFGuard(settings.fetch_allow_hosts)
    checked = await guard.check("https://example.org/a")   # -> CheckedURL(url, host, addresses)
    # raises BlockedURL (with a user-facing `.sentence`) or HostNotFound

Rules, in order:
1. Only http/https, a host, no odd characters in it (percent-escapes, spaces, backslashes).
2. A host in the operator's allow list (`TIPLINE_FETCH_ALLOW_HOSTS`) is trusted as is: intranets and
   the test suite's loopback fakes. Production default is an empty list.
3. Names that are private by convention (`localhost`, `*.localhost`, `*.local`, `*.internal`, ...) are
   refused without asking DNS; so are IPv4 addresses written in legacy numeric forms (`2130706433`,
   `0x7f000001`, `0177.0.0.1`, `127.1`), which resolvers map onto addresses a reader does not see.
4. Every address the host resolves to must be public (`classify_address`); one private answer refuses
   the whole host, so a name with a public and a private record cannot be used to reach the private one.

Connections must go to the addresses checked here, not to a second DNS answer (DNS rebinding):
`GuardedResolver` plugs this guard into aiohttp so the connector only ever dials checked addresses.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from core.evidence.errors import BlockedURL, HostNotFound

__all__ = ["BlockedURL", "CheckedURL", "GuardedResolver", "SSRFGuard", "classify_address", "legacy_ipv4"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# (network, why) — checked before the generic `is_global` test so refusals name the real reason.
_NAMED_NETWORKS: list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]] = [
    (ipaddress.ip_network("169.254.169.254/32"), "a cloud metadata address"),
    (ipaddress.ip_network("fd00:ec2::254/128"), "a cloud metadata address"),
    (ipaddress.ip_network("100.100.100.200/32"), "a cloud metadata address"),  # Alibaba
    (ipaddress.ip_network("0.0.0.0/8"), "an unspecified address"),
    (ipaddress.ip_network("127.0.0.0/8"), "a loopback address"),
    (ipaddress.ip_network("10.0.0.0/8"), "a private network address"),
    (ipaddress.ip_network("172.16.0.0/12"), "a private network address"),
    (ipaddress.ip_network("192.168.0.0/16"), "a private network address"),
    (ipaddress.ip_network("100.64.0.0/10"), "a carrier-grade NAT address"),
    (ipaddress.ip_network("169.254.0.0/16"), "a link-local address"),
    (ipaddress.ip_network("192.0.0.0/24"), "a reserved address"),
    (ipaddress.ip_network("198.18.0.0/15"), "a reserved address"),
    (ipaddress.ip_network("224.0.0.0/4"), "a multicast address"),
    (ipaddress.ip_network("240.0.0.0/4"), "a reserved address"),
    (ipaddress.ip_network("::/128"), "an unspecified address"),
    (ipaddress.ip_network("::1/128"), "a loopback address"),
    (ipaddress.ip_network("fc00::/7"), "a private network address"),
    (ipaddress.ip_network("fe80::/10"), "a link-local address"),
    (ipaddress.ip_network("fec0::/10"), "a private network address"),  # deprecated site-local
    (ipaddress.ip_network("ff00::/8"), "a multicast address"),
]

# DNS-suffix conventions for names that only mean something inside a network.
_PRIVATE_SUFFIXES = ("localhost", "local", "internal", "intranet", "lan", "home.arpa", "localdomain",
                     "corp", "home", "private")
_PRIVATE_NAMES = {"metadata", "metadata.google.internal", "instance-data"}

_HOST_CHARS = re.compile(r"^[a-z0-9._-]+$")
_NUMERIC_PART = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries, for the forms that route to it."""
    if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d
        return ip.ipv4_mapped
    packed = ip.packed
    if packed[:12] == bytes(12) and ip not in (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1")):
        return ipaddress.IPv4Address(packed[12:])  # deprecated IPv4-compatible ::a.b.c.d
    if packed[:12] == bytes.fromhex("0064ff9b0000000000000000"):  # NAT64 64:ff9b::/96
        return ipaddress.IPv4Address(packed[12:])
    if ip.sixtofour is not None:  # 2002:AABB:CCDD::/48
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def classify_address(ip: IPAddress | str) -> str | None:
    """Why an address must not be fetched ("a loopback address", ...), or None when it is public."""
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        inner = _embedded_ipv4(ip)
        if inner is not None:
            reason = classify_address(inner)
            if reason:
                return reason
    for network, reason in _NAMED_NETWORKS:
        if ip.version == network.version and ip in network:
            return reason
    # Everything the registries mark as not globally reachable (documentation, benchmarking, ...).
    if not ip.is_global or ip.is_multicast:
        return "a reserved address"
    return None


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address inet_aton would read from a non-dotted-quad numeric host, else None.

    "2130706433", "0x7f000001", "0177.0.0.1", "127.1" all mean 127.0.0.1 to the C resolver.
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_NUMERIC_PART.match(p) for p in parts):
        return None
    try:
        values = [int(p, 16) if p.startswith("0x") else int(p, 8) if len(p) > 1 and p.startswith("0") else int(p)
                  for p in parts]
    except ValueError:
        return None  # "08" etc.: not a number inet_aton accepts, and not a name either
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (5 - len(values)) + last
    return ipaddress.IPv4Address(number)


@dataclass(frozen=True)
class CheckedURL:
    url: URL
    host: str
    port: int
    addresses: tuple[str, ...]  # empty when the host is allow-listed (resolved normally at connect time)
    allow_listed: bool = False


Resolve = Callable[[str, int], Awaitable[list[str]]]


async def system_resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _refuse(url: str, why: str) -> BlockedURL:
    err = BlockedURL(f"The link was not opened: it points to {why}.")
    err.url = url  # type: ignore[attr-defined]
    return err


class SSRFGuard:
    def __init__(self, allow_hosts: Iterable[str] = (), *, resolve: Resolve | None = None,
                 dns_timeout_s: float = 3.0):
        self.allow_hosts = frozenset(h.strip().lower().rstrip(".") for h in allow_hosts if h.strip())
        # `resolve` is injectable for a stub DNS in tests of the rebinding logic; default is the OS resolver.
        self._resolve = resolve or system_resolve
        self.dns_timeout_s = dns_timeout_s

    def is_allow_listed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.allow_hosts

    def check_syntax(self, url: str | URL) -> tuple[URL, str, int]:
        """Everything that can be decided without DNS. Returns (url, host, port)."""
        text = str(url)
        try:
            parsed = url if isinstance(url, URL) else URL(text.strip())
        except (ValueError, TypeError) as exc:
            raise BlockedURL("The link was not opened: it is not a valid web address.") from exc
        if parsed.scheme not in ("http", "https"):
            raise BlockedURL("The link was not opened: only http and https links are read.")
        host = (parsed.raw_host or "").lower()  # IDNA names in their punycode (DNS) form
        if not host:
            raise BlockedURL("The link was not opened: it has no host name.")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        bare = host.rstrip(".")
        if self.is_allow_listed(bare):
            return parsed, bare, port
        try:
            literal = ipaddress.ip_address(bare.strip("[]").split("%", 1)[0])
        except ValueError:
            literal = None
        if literal is not None:
            reason = classify_address(literal)
            if reason:
                raise _refuse(text, reason)
            return parsed, bare, port
        if legacy_ipv4(bare) is not None:
            raise BlockedURL("The link was not opened: its address is written in a disguised numeric form.")
        if not _HOST_CHARS.match(bare) or ".." in bare:
            raise BlockedURL("The link was not opened: its host name is not valid.")
        if bare in _PRIVATE_NAMES or any(bare == s or bare.endswith("." + s) for s in _PRIVATE_SUFFIXES):
            raise _refuse(text, "a local or internal host name")
        if "." not in bare:
            raise _refuse(text, "a single-label (intranet) host name")
        return parsed, bare, port

    async def resolve_checked(self, host: str, port: int) -> list[str]:
        """Resolve `host` and return its addresses, refusing it if any of them is not public."""
        try:
            async with asyncio.timeout(self.dns_timeout_s):
                addresses = await self._resolve(host, port)
        except (OSError, TimeoutError, UnicodeError) as exc:
            raise HostNotFound() from exc
        if not addresses:
            raise HostNotFound()
        for address in addresses:
            reason = classify_address(address)
            if reason:
                raise _refuse(host, f"{reason} (after looking up its name)")
        return addresses

    async def check(self, url: str | URL) -> CheckedURL:
        parsed, host, port = self.check_syntax(url)
        if self.is_allow_listed(host):
            return CheckedURL(parsed, host, port, (), allow_listed=True)
        try:
            ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
            return CheckedURL(parsed, host, port, (host.strip("[]"),))
        except ValueError:
            pass
        return CheckedURL(parsed, host, port, tuple(await self.resolve_checked(host, port)))


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that only hands the connector addresses the guard accepted.

    aiohttp dials exactly what the resolver returns, so the address checked is the address connected
    to: a DNS answer that changes between the check and the connection cannot slip a private address in.
    (IP-literal hosts never reach a resolver; `SSRFGuard.check` covers them before each request.)
    """

    def __init__(self, guard: SSRFGuard):
        self.guard = guard

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        if self.guard.is_allow_listed(host):
            addresses = await system_resolve(host, port)
        else:
            self.guard.check_syntax(URL.build(scheme="http", host=host, port=port or None))
            addresses = await self.guard.resolve_checked(host, port)
        results: list[ResolveResult] = []
        for address in addresses:
            fam = socket.AF_INET6 if ":" in address else socket.AF_INET
            results.append({"hostname": host, "host": address, "port": port, "family": fam,
                            "proto": 0, "flags": socket.AI_NUMERICHOST})
        return results

    async def close(self) -> None:
        return None
