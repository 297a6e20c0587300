"""Small helpers shared by the evidence sources: domains, dates, snippet cleaning."""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone

from yarl import URL

_TAGS = re.compile(r"<[^>]{0,500}>")


def domain_of(url: str) -> str:
    """Lower-case host without "www." (Evidence.domain); "" for anything unparseable."""
    try:
        host = URL(url).host or ""
    except (ValueError, TypeError):
        return ""
    return host.lower().rstrip(".").removeprefix("www.")


def clean_snippet(text: object, limit: int = 900) -> str:
    """Search engines hand back snippets with <strong> highlights and entities; judges want plain text."""
    if not isinstance(text, str):
        return ""
    return " ".join(html.unescape(_TAGS.sub("", text[: limit * 4])).split())[:limit]


def parse_datetime(value: object) -> datetime | None:
    """ISO 8601 (with or without zone/Z, date-only), GDELT's 20240101T120000Z, or None. Always aware (UTC)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()[:40]
    when: datetime | None = None
    try:
        when = datetime.strptime(text, "%Y%m%dT%H%M%SZ")
    except ValueError:
        for candidate in (text.replace("Z", "+00:00"), text[:19], text[:10]):
            try:
                when = datetime.fromisoformat(candidate)
                break
            except ValueError:
                continue
    if when is None:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


_SAFE_DOMAIN = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")


def safe_domains(domains: list[str], limit: int = 8) -> list[str]:
    """Domains usable in a site:/domain: filter: bare host names only, so nothing can be injected into
    the provider's query syntax."""
    out: list[str] = []
    for d in domains:
        d = d.strip().lower().removeprefix("www.").rstrip(".")
        if _SAFE_DOMAIN.match(d) and d not in out:
            out.append(d)
    return out[:limit]
