"""Default source credibility per domain (0–1), and the admins' allow/deny rules on top of it.

The tiers follow the design's table (fact-checkers 0.90–0.95, government/scientific 0.95, wire services
and public broadcasters 0.85–0.90, major newspapers 0.80, academic 0.80–0.90, international news 0.75,
unknown 0.50; docs/decisions/2026-11-29-notes-from-code.md), extended with two tiers: Wikipedia (a
tertiary source: useful, editable by anyone, so below newspapers) and known low-credibility sites
(repeatedly rated false by fact-checkers), which score below "unknown" rather than being excluded —
excluding is the admins' call (deny list).

Admin rules win over defaults: an allowed domain gets the top tier, a denied domain is excluded (`None`)
and must never be cited. Deny is checked first, as in bot/domains.py. Rules are taken as plain
collections of patterns (`example.com`, or `*.gov` for gov and every subdomain) or as predicates, so
core/ does not depend on the bot layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

TOP = 0.95  # the highest default tier; allow-listed domains get it
UNKNOWN = 0.50  # neither boosted nor penalised
LOW = 0.20

FACT_CHECKERS = {  # IFCN signatories and long-standing fact-check desks (the design's table and well-known peers)
    "snopes.com": 0.90, "factcheck.org": 0.95, "politifact.com": 0.95, "fullfact.org": 0.95,
    "leadstories.com": 0.90, "africacheck.org": 0.90, "checkyourfact.com": 0.90, "healthfeedback.org": 0.90,
    "sciencefeedback.co": 0.90, "maldita.es": 0.90, "newtral.es": 0.90, "correctiv.org": 0.90,
    "boomlive.in": 0.90, "altnews.in": 0.90, "factly.in": 0.90, "teyit.org": 0.90, "stopfake.org": 0.90,
    "aosfatos.org": 0.90, "chequeado.com": 0.90, "verafiles.org": 0.90, "rappler.com": 0.85,
    "factcheck.afp.com": 0.95, "fakty.afp.com": 0.95, "misbar.com": 0.90, "poynter.org": 0.90,
}
GOVERNMENT_SCIENTIFIC = {
    "who.int": 0.95, "cdc.gov": 0.95, "nasa.gov": 0.95, "nih.gov": 0.95, "gov.uk": 0.95, "noaa.gov": 0.95,
    "un.org": 0.90, "europa.eu": 0.90, "ecdc.europa.eu": 0.95, "ema.europa.eu": 0.95, "esa.int": 0.95,
    "worldbank.org": 0.90, "imf.org": 0.90, "oecd.org": 0.90, "ipcc.ch": 0.95,
}
WIRE_AND_PUBLIC = {
    "reuters.com": 0.90, "apnews.com": 0.90, "afp.com": 0.90, "bbc.com": 0.85, "bbc.co.uk": 0.85,
    "npr.org": 0.85, "pbs.org": 0.85, "dpa.com": 0.85, "abc.net.au": 0.85, "cbc.ca": 0.85,
}
NEWSPAPERS = {
    "nytimes.com": 0.80, "washingtonpost.com": 0.80, "theguardian.com": 0.80, "wsj.com": 0.80,
    "ft.com": 0.80, "economist.com": 0.80, "bloomberg.com": 0.80, "latimes.com": 0.80, "lemonde.fr": 0.80,
    "spiegel.de": 0.80, "zeit.de": 0.80, "elpais.com": 0.80, "theatlantic.com": 0.75, "usatoday.com": 0.75,
    "cnn.com": 0.75, "nbcnews.com": 0.75, "cbsnews.com": 0.75, "abcnews.go.com": 0.75,
}
ACADEMIC = {
    "nature.com": 0.90, "science.org": 0.90, "thelancet.com": 0.90, "nejm.org": 0.90, "bmj.com": 0.90,
    "pubmed.ncbi.nlm.nih.gov": 0.90, "arxiv.org": 0.80, "scholar.google.com": 0.80, "jamanetwork.com": 0.90,
}
INTERNATIONAL = {"aljazeera.com": 0.75, "dw.com": 0.75, "france24.com": 0.75, "euronews.com": 0.75,
                 "meduza.io": 0.75}
REFERENCE = {"wikipedia.org": 0.70, "britannica.com": 0.80}
LOW_CREDIBILITY = {  # sites fact-checkers repeatedly rate false or that publish state propaganda as news
    "infowars.com": LOW, "naturalnews.com": LOW, "beforeitsnews.com": LOW, "yournewswire.com": LOW,
    "newspunch.com": LOW, "thegatewaypundit.com": LOW, "zerohedge.com": 0.30, "rt.com": 0.25,
    "sputniknews.com": 0.25, "globalresearch.ca": LOW, "worldtruth.tv": LOW, "theonion.com": 0.10,
    "babylonbee.com": 0.10,  # satire: true to itself, never evidence for a factual claim
}
DEFAULT_TIERS: dict[str, float] = {
    **REFERENCE, **INTERNATIONAL, **ACADEMIC, **NEWSPAPERS, **WIRE_AND_PUBLIC, **GOVERNMENT_SCIENTIFIC,
    **FACT_CHECKERS, **LOW_CREDIBILITY,
}
# Suffixes only public institutions can register (gov/scientific bodies sit at the top tier;
# .edu and .ac.* are academic).
SUFFIX_TIERS: list[tuple[str, float]] = [
    ("gov", 0.90), ("mil", 0.85), ("int", 0.85), ("gov.uk", 0.95), ("gc.ca", 0.90), ("gov.au", 0.90),
    ("gouv.fr", 0.90), ("gov.ru", 0.75), ("edu", 0.85), ("ac.uk", 0.85), ("ac.jp", 0.85), ("edu.au", 0.85),
]

Rule = Iterable[str] | Callable[[str], bool]


def domain_of(url_or_host: str) -> str:
    """Lower-case host without `www.` and port: `https://www.BBC.co.uk:443/x` -> `bbc.co.uk`."""
    s = url_or_host.strip()
    host = urlsplit(s).hostname if "://" in s else s.split("/", 1)[0].split(":", 1)[0]
    host = (host or "").lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


# Second-level labels under which registrations happen (bbc.co.uk, abc.net.au): a small list instead of
# the full Public Suffix List, enough to tell "same site" for independence and per-site caps.
_SECOND_LEVEL = {"co", "com", "net", "org", "gov", "ac", "edu", "gob", "gouv", "govt", "nic", "or", "ne", "go"}


def site_of(url_or_host: str) -> str:
    """The registrable site: `en.wikipedia.org` -> `wikipedia.org`, `news.bbc.co.uk` -> `bbc.co.uk`.

    Two pages of one site are not independent sources, whatever their subdomains."""
    labels = domain_of(url_or_host).split(".")
    if len(labels) >= 3 and labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def pattern_matches(host: str, pattern: str) -> bool:
    """`example.com` matches that host only (as bot/domains.py); `*.gov` or `.gov` matches gov and subdomains."""
    p = pattern.strip().lower()
    if p.startswith("*.") or p.startswith("."):
        base = p.lstrip("*").lstrip(".")
        return host == base or host.endswith("." + base)
    return host == domain_of(p)


def _matcher(rule: Rule | None) -> Callable[[str], bool]:
    if rule is None:
        return lambda host: False
    if callable(rule):
        return rule
    patterns = [p for p in rule if p]
    return lambda host: any(pattern_matches(host, p) for p in patterns)


@dataclass
class DomainRules:
    """The admins' rules in force for one chat: `allow`/`deny` as patterns or predicates over a host.

    Build it from bot.domains.effective_rules: `DomainRules(allow=allow_set, deny=deny_set)`.
    """

    allow: Rule | None = None
    deny: Rule | None = None
    _allow: Callable[[str], bool] = field(init=False, repr=False)
    _deny: Callable[[str], bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._allow = _matcher(self.allow)
        self._deny = _matcher(self.deny)

    def denied(self, domain: str) -> bool:
        return bool(self._deny(domain_of(domain)))

    def allowed(self, domain: str) -> bool:
        return bool(self._allow(domain_of(domain)))


def default_credibility(domain: str) -> float:
    """The default tier of a host: exact entry, else its closest listed parent, else a suffix tier."""
    host = domain_of(domain)
    labels = host.split(".")
    # Walk up the parents so en.wikipedia.org and edition.cnn.com inherit their site's tier.
    for i in range(len(labels) - 1):
        parent = ".".join(labels[i:])
        if parent in DEFAULT_TIERS:
            return DEFAULT_TIERS[parent]
    best: tuple[int, float] | None = None
    for suffix, score in SUFFIX_TIERS:  # the longest matching suffix wins (gov.uk over a generic one)
        if host == suffix or host.endswith("." + suffix):
            if best is None or len(suffix) > best[0]:
                best = (len(suffix), score)
    return best[1] if best else UNKNOWN


def credibility(domain: str, rules: DomainRules | None = None) -> float | None:
    """0–1 credibility of a source domain, or None when the admins denied it (never use or cite it)."""
    if rules is not None:
        if rules.denied(domain):
            return None
        if rules.allowed(domain):
            return TOP
    return default_credibility(domain)
