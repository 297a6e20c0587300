"""Which outside services a check sent something to, for the card: "offline mode" only when none.

Every evidence source except the two local ones (the knowledge base and the evidence index, both in
the data dir) sends text from the message off the machine: search queries to GDELT, SearxNG, Brave and
Fact Check Tools, the message's links to their sites. A source that ran is named even when it failed
or answered from the cache: the card errs towards saying more, never claims "offline" wrongly. A new
source is outside until it is added to LOCAL.
"""

from __future__ import annotations

from schema.models import Result, SourceTrace

LOCAL = frozenset({"knowledge", "evidence_index"})
NAMES = {"gdelt": "GDELT", "searxng": "SearxNG", "brave": "Brave Search", "factcheck_api": "Google Fact Check Tools"}
LINKS = "links"  # the linked pages: named in the reply's language (card.linked_pages)


def _reached_out(trace: SourceTrace) -> bool:
    if trace.source in LOCAL:
        return False
    if trace.source == LINKS:  # runs for every claim, but opens something only when the message has links
        return trace.found > 0 or not trace.ok or bool(trace.notes)
    return True


def outside_sources(result: Result) -> list[str]:
    """The source names (SourceTrace.source) that reached outside the machine, once each, in run order."""
    return list(dict.fromkeys(s.source for s in result.sources if _reached_out(s)))
