"""Typed failures of evidence sources, each carrying one sentence a user (or the check's trace) can read.

Raised inside core/evidence/, translated into `SourceReport.error` by gather.py; the raw exception text
(host names, stack details) never reaches a chat.
"""

from __future__ import annotations


class EvidenceError(Exception):
    """Base class: `sentence` is safe to show to a user."""

    sentence = "The source could not be used."

    def __init__(self, sentence: str | None = None):
        if sentence:
            self.sentence = sentence
        super().__init__(self.sentence)


class FetchError(EvidenceError):
    """A web page could not be fetched."""

    sentence = "The page could not be fetched."


class BlockedURL(FetchError):
    """The SSRF guard refused a URL: it points at something private, or is not a plain web address."""

    sentence = "The link was not opened because it does not point to a public web address."


class HostNotFound(FetchError):
    sentence = "The link's site could not be found (DNS lookup failed)."


class FetchTimeout(FetchError):
    sentence = "The page took too long to load."


class TooManyRedirects(FetchError):
    sentence = "The page redirected too many times."


class PageTooLarge(FetchError):
    sentence = "The page is too large to read."


class UnsupportedContent(FetchError):
    sentence = "The link is not a web page (it is a file we do not read)."


class HTTPStatusError(FetchError):
    def __init__(self, status: int, sentence: str | None = None):
        self.status = status
        super().__init__(sentence or f"The site answered with an error (HTTP {status}).")


class ConnectFailed(FetchError):
    sentence = "The site could not be reached."


class ProviderError(EvidenceError):
    """A search or fact-check API failed (rate limit, server error, malformed answer)."""

    def __init__(self, provider: str, sentence: str, *, status: int | None = None,
                 retry_after: float | None = None):
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        super().__init__(sentence)
