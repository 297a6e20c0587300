"""GET a provider's JSON API and turn every way it can fail into one typed `ProviderError`.

Provider base URLs come from the operator's settings and are trusted (no SSRF guard); the session is the
registry's plain one. Errors keep `status` and `retry_after` and chain the aiohttp error (`raise … from`),
so core/evidence/resilient.py can decide retries; `sentence` is what the trace shows.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from core.evidence.errors import ProviderError

MAX_RESPONSE_BYTES = 5 * 1024 * 1024


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # HTTP-date form: the resilience layer parses those itself from the header if it needs to


async def get_text(session: aiohttp.ClientSession, provider: str, url: str, *, params: dict[str, str],
                   headers: dict[str, str] | None = None, timeout_s: float = 8.0) -> str:
    try:
        async with session.get(url, params=params, headers=headers or {},
                               # `connect` bounds DNS + TCP + TLS together: an offline machine or a dead resolver fails
                               # in seconds, not after the whole budget.
                               timeout=aiohttp.ClientTimeout(total=timeout_s, connect=min(4.0, timeout_s),
                                                             sock_connect=min(3.0, timeout_s)),
                               allow_redirects=True) as resp:
            if resp.status == 429:
                raise ProviderError(provider, f"{provider} is rate-limiting us (HTTP 429).", status=429,
                                    retry_after=_retry_after(resp.headers.get("Retry-After")))
            if resp.status >= 500:
                raise ProviderError(provider, f"{provider} had a server error (HTTP {resp.status}).",
                                    status=resp.status, retry_after=_retry_after(resp.headers.get("Retry-After")))
            if resp.status >= 400:
                which = "the API key was refused" if resp.status in (401, 403) else "the request was refused"
                raise ProviderError(provider, f"{provider}: {which} (HTTP {resp.status}).", status=resp.status)
            if resp.content_length is not None and resp.content_length > MAX_RESPONSE_BYTES:
                raise ProviderError(provider, f"{provider} sent an answer too large to read.")
            body = await resp.content.read(MAX_RESPONSE_BYTES + 1)
            if len(body) > MAX_RESPONSE_BYTES:
                raise ProviderError(provider, f"{provider} sent an answer too large to read.")
            return body.decode(resp.charset or "utf-8", errors="replace")
    except aiohttp.ClientConnectorDNSError as exc:
        raise ProviderError(provider, f"{provider} could not be found (DNS lookup failed; offline?).") from exc
    except aiohttp.ConnectionTimeoutError as exc:
        raise ProviderError(provider, f"{provider} could not be reached (connection timed out).") from exc
    except TimeoutError as exc:  # before ClientConnectionError: aiohttp's read timeout is both
        raise ProviderError(provider, f"{provider} took longer than {timeout_s:g} s to answer.") from exc
    except aiohttp.ClientConnectionError as exc:
        raise ProviderError(provider, f"{provider} could not be reached.") from exc
    except aiohttp.ClientPayloadError as exc:
        raise ProviderError(provider, f"{provider}'s answer was cut off.") from exc


async def get_json(session: aiohttp.ClientSession, provider: str, url: str, *, params: dict[str, str],
                   headers: dict[str, str] | None = None, timeout_s: float = 8.0) -> Any:
    text = await get_text(session, provider, url, params=params, headers=headers, timeout_s=timeout_s)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ProviderError(provider, f"{provider} sent an answer that is not valid JSON.") from exc
