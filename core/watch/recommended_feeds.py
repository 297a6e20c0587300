"""The curated list of fact-checkers' feeds (core/data/recommended_feeds.json, docs/feeds.md) and each
publisher's own verdict words.

    feeds = load_recommended()                    # [RecommendedFeed, …], in the file's order
    feed = find_recommended("stopfake-ru")        # or None
    feed.verdict_for("Фейк")                      # Verdict.REFUTED: the publisher's words, then core/ingest/ratings.py

Nothing here fetches anything: the list is what an operator may add (`tipline feeds add --recommended`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal

from core.ingest.ratings import match_rating, rating_key
from schema.models import Verdict

DATA_FILE = "recommended_feeds.json"


@dataclass(frozen=True)
class RecommendedFeed:
    name: str  # short, lowercase: what `tipline feeds add <name>` takes
    publisher: str
    homepage: str
    url: str
    languages: tuple[str, ...]
    format: Literal["rss", "atom"]
    claimreview: Literal["yes", "no", "unknown"]  # do its article pages carry ClaimReview JSON-LD?
    checked: str  # what the URL and the verdict words rest on
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # rating_key(words) -> verdict

    def verdict_for(self, words: str, *, exact: bool = True) -> Verdict | None:
        """The verdict the publisher's words mean: its own table first, then the shared one (core/ingest/ratings.py)."""
        key = rating_key(words)
        if not key:
            return None
        return self.verdicts.get(key) or match_rating(words, exact=exact)


def _parse(raw: dict) -> RecommendedFeed:
    verdicts = {rating_key(words): Verdict(value) for words, value in (raw.get("verdicts") or {}).items()}
    return RecommendedFeed(name=raw["name"], publisher=raw["publisher"], homepage=raw["homepage"], url=raw["url"],
                           languages=tuple(raw["languages"]), format=raw["format"], claimreview=raw["claimreview"],
                           checked=raw["checked"], verdicts=verdicts)


def load_recommended() -> list[RecommendedFeed]:
    """Every recommended feed; a malformed data file raises (it ships with the package and is tested)."""
    text = resources.files("core").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return [_parse(raw) for raw in json.loads(text)["feeds"]]


def find_recommended(ref: str) -> RecommendedFeed | None:
    """The recommended feed named `ref` (its name, case-insensitive) or at exactly its URL, else None."""
    wanted = ref.strip().lower()
    for feed in load_recommended():
        if wanted in (feed.name, feed.url.lower()):
            return feed
    return None
