"""What every evidence source returns, and the protocol it implements.

Sources (knowledge base, fact-check API, web and news search, linked pages) all hand back `Evidence`;
ranking and judging never need to know which source an item came from beyond `source_type`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from schema.models import SourceTrace, Verdict

SourceType = Literal["factcheck", "news", "web", "page", "knowledge"]


class ClaimQuery(BaseModel):
    """One claim to find evidence for, with the search queries planned for it."""

    claim: str
    queries: list[str] = Field(default_factory=list, description="2-4 search queries; the claim itself if empty.")
    language: str = "en"
    urls: list[str] = Field(default_factory=list, description="Links from the message, for link expansion.")
    allow_domains: list[str] = Field(default_factory=list, description="Trusted domains, for site-filtered search.")

    @property
    def search_queries(self) -> list[str]:
        return self.queries or [self.claim]


class Evidence(BaseModel):
    url: str
    title: str = ""
    snippet: str = Field(default="", description="The passage judged against the claim.")
    publisher: str = ""
    domain: str = Field(default="", description="Lower-case host without www.")
    published_at: datetime | None = None
    source: str = Field(description="Name of the EvidenceSource that found it.")
    source_type: SourceType = "web"
    language: str = ""
    rating: str = Field(default="", description="A fact-checker's own rating words, for fact-check items.")
    verdict: Verdict | None = Field(default=None, description="That rating, normalised.")
    retrieval_score: float = 0.0
    match_tier: Literal["auto", "suggest"] | None = Field(
        default=None, description="Knowledge-base items: the claim matcher's tier for this claim.")
    match_probability: float | None = Field(
        default=None, description="Knowledge-base items: calibrated probability that it is the same claim.")


# One line of the trace: what a source did for one claim (the model the Result keeps, too).
SourceReport = SourceTrace


class EvidenceSource(Protocol):
    name: str
    label: str  # what users read when it fails: "news search", "the linked pages"
    # True for providers that search the web: rate-limited and circuit-broken (core/evidence/resilient.py),
    # and the ones a wider query can make find more (the engine's widening).
    searches_web: bool

    async def gather(self, query: ClaimQuery, *, limit: int) -> list[Evidence]:
        """Raise on failure; the caller times each source out, records the error and carries on."""
        ...


@runtime_checkable
class NotingSource(EvidenceSource, Protocol):
    """A source that can also say what went wrong with single items (link expansion: per-link errors).
    gather_all() prefers `gather_noted` when a source has it and copies the notes into its SourceReport."""

    async def gather_noted(self, query: ClaimQuery, *, limit: int) -> tuple[list[Evidence], list[str]]:
        ...
