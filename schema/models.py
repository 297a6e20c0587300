"""The engine's boundary types: what goes into the knowledge base and what a check returns.

Every adapter renders the same `Result`; `docs/result.schema.json` is generated from it
(`tipline schema`), so change the model and the schema together.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, timezone
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from schema.text import safe_text


class Verdict(str, Enum):
    SUPPORTED = "SUPPORTED"
    REFUTED = "REFUTED"
    MISLEADING = "MISLEADING"
    MIXED = "MIXED"
    NOT_ENOUGH_EVIDENCE = "NOT_ENOUGH_EVIDENCE"
    NOT_CHECKABLE = "NOT_CHECKABLE"

    @property
    def label(self) -> str:
        """What people read: short, plain words rather than the machine name."""
        return VERDICT_LABELS[self]


VERDICT_LABELS: dict[Verdict, str] = {
    Verdict.SUPPORTED: "True",
    Verdict.REFUTED: "False",
    Verdict.MISLEADING: "Misleading",
    Verdict.MIXED: "Mixed",
    Verdict.NOT_ENOUGH_EVIDENCE: "Unverified",
    Verdict.NOT_CHECKABLE: "Not checkable",
}

# A fixed namespace so that the same fact-check always gets the same point id, on every machine:
# re-ingesting a file updates points instead of duplicating them.
_FACTCHECK_NS = uuid.UUID("6f1c2b8e-4f0a-4d5e-9a57-3b0e8c1d2a90")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class FactCheck(BaseModel):
    """One previously fact-checked claim, shaped after schema.org ClaimReview."""

    claim: str = Field(description="The claim as the fact-checker stated it (claimReviewed).")
    title: str = Field(default="", description="Headline of the fact-check article.")
    url: str = Field(default="", description="URL of the fact-check article.")
    publisher: str = ""
    published_at: date | None = None
    rating_text: str = Field(default="", description="The fact-checker's own rating words.")
    verdict: Verdict = Verdict.NOT_ENOUGH_EVIDENCE
    language: str = "en"
    claimant: str = ""
    appearances: list[str] = Field(
        default_factory=list, description="URLs where the claim was seen (itemReviewed.appearance)."
    )
    source_id: str = Field(default="", description="An id from the source data set, if it has one.")

    @field_validator("claim", "title", "url", "publisher", "rating_text", "claimant", "source_id")
    @classmethod
    def _safe(cls, value: str) -> str:
        # Whatever parser built it (CSV, JSON with "\ud800" escapes, a feed), storage and the models
        # only ever see valid text.
        return safe_text(value)

    @field_validator("appearances")
    @classmethod
    def _safe_urls(cls, value: list[str]) -> list[str]:
        return [safe_text(v) for v in value]

    @property
    def id(self) -> str:
        return str(uuid.uuid5(_FACTCHECK_NS, f"{self.url.strip()}\n{self.claim.strip()}"))


MatchTier = Literal["auto", "suggest", "none"]  # the matcher's confidence band (core/matching/matcher.py Thresholds.tier)


class Match(BaseModel):
    """A previously fact-checked claim that may be the one the user is asking about."""

    factcheck_id: str
    claim: str
    title: str = ""
    url: str = ""
    publisher: str = ""
    published_at: date | None = None
    rating_text: str = ""
    verdict: Verdict
    similarity: float = Field(ge=0.0, le=1.0, description="Calibrated probability that this is the same claim.")
    # "decided": the same-claim decision (core/matching/same_claim.py) set the tier and its probability is the similarity.
    method: Literal["url", "hybrid", "decided"] = "hybrid"
    tier: MatchTier = "none"


class Citation(BaseModel):
    n: int
    url: str
    title: str = ""
    publisher: str = ""
    published_at: date | None = None
    snippet: str = ""
    rating: str = ""


class Step(BaseModel):
    """One stage of the check, for the trace users can open with /evidence."""

    name: str
    ms: float
    detail: str = ""


class ReportedBy(BaseModel):
    """One other chat/channel (or news outlet) that carried the same story."""

    name: str = Field(description="What to show: '@handle', a chat title, or a news domain.")
    platform: str = Field(default="", description="telegram, slack, or news.")
    chat_id: str = ""
    link: str = Field(default="", description="Permalink to the message, where the platform allows one.")
    at: datetime | None = Field(default=None, description="When that chat first carried the story.")
    credibility: float = Field(default=0.5, ge=0.0, le=1.0)
    score: float = Field(default=0.0, ge=0.0, le=1.0, description="Same-story probability with the checked text.")


class AlsoReported(BaseModel):
    """Same-story messages from other tracked chats within the corroboration window."""

    items: list[ReportedBy] = Field(default_factory=list, description="Best first: credibility, then earliest.")
    total: int = Field(default=0, description="How many other chats carried the story (items may be fewer).")
    first_seen_at: datetime | None = None
    first_seen_in: ReportedBy | None = None
    outlets: list[str] = Field(default_factory=list, description="News domains among the check's sources.")
    agreement: float = Field(default=0.0, ge=0.0, le=1.0, description="Mean same-story score of the direct matches.")
    tier: Literal["high", "medium", "low"] = "low"
    note: str = ""


class Repetition(BaseModel):
    """The same (near-identical) text was checked before: the stored verdict was reused."""

    times_this_week: int = Field(description="Checks of this text in the last 7 days, this one included.")
    first_check_id: str
    reused: bool = True


class ClaimOutcome(BaseModel):
    """One sub-claim of the message and what the evidence said about it (the card's breakdown)."""

    claim: str
    verdict: Verdict
    label: str
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str = ""
    citations: list[int] = Field(default_factory=list, description="Numbers of Result.citations it cites.")
    score: int | None = Field(default=None, description="The 0-100 truth score (high = supported, low = refuted), when evidence was judged.")


class EvidenceItem(BaseModel):
    """One piece of evidence the engine looked at, as judged (for /evidence and the Sources button)."""

    url: str
    title: str = ""
    domain: str = ""
    source: str = Field(default="", description="Which evidence source found it.")
    source_type: str = ""
    stance: Literal["supports", "refutes", "neutral", "unjudged"] = "unjudged"
    relevance: float | None = None
    credibility: float | None = None
    claim: str = Field(default="", description="The sub-claim it was judged against.")


class SourceTrace(BaseModel):
    """What one evidence source did for one claim: `gather_all` reports it, the Result keeps it."""

    source: str
    ok: bool
    ms: float
    found: int = 0
    error: str = ""
    notes: list[str] = Field(default_factory=list,
                             description="Problems with single items that did not fail the source, e.g. one "
                                         "link of three that could not be opened.")
    claim: str = Field(default="", description="The claim it searched for (set by the engine).")


class LLMUsage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = Field(default=0.0, description="Estimated from the configured per-token prices.")


class Result(BaseModel):
    id: str = Field(description="Short id users can quote to see the full trace.")
    created_at: datetime = Field(default_factory=utcnow)
    text: str = Field(description="The text that was checked, after intake.")
    language: str = "en"
    verdict: Verdict
    label: str
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str
    citations: list[Citation] = Field(default_factory=list)
    matches: list[Match] = Field(default_factory=list)
    mode: Literal["offline", "llm"] = "offline"
    notes: list[str] = Field(default_factory=list, description="Things the user should know (truncation, degraded sources).")
    steps: list[Step] = Field(default_factory=list)
    claims: list[ClaimOutcome] = Field(default_factory=list, description="Per sub-claim, when there are several.")
    evidence: list[EvidenceItem] = Field(default_factory=list, description="Everything judged, best first.")
    sources: list[SourceTrace] = Field(default_factory=list, description="Each evidence source's run.")
    usage: LLMUsage | None = Field(default=None, description="LLM tokens and estimated cost of this check.")
    also_reported: AlsoReported | None = Field(default=None, description="Other chats/outlets with the same story.")
    repetition: Repetition | None = Field(default=None, description="Set when a stored verdict was reused.")
    image_text: str = Field(default="", description="The text read from an attached image (OCR), checked with the "
                            "caption; empty when no image was read.")
    inherited_from: str | None = Field(default=None, description="The url of the previous fact-check whose rating "
                                       "is this verdict (offline answers), or None when no rating was inherited.")


def new_check_id() -> str:
    # Short enough to type into /evidence, random enough not to collide in one deployment.
    return uuid.uuid4().hex[:10]
