"""Staged web search (the seeds' order): trusted outlets first, fact-checkers second, broad last.

    found = await staged_search(provider_search, site_filter, query, limit=8, enough=3)

`provider_search(q, count)` is one provider call; `site_filter(domains)` renders that provider's
operator ("(site:a OR site:b)" for SearxNG/Brave, "(domain:a OR domain:b)" for GDELT).
1. trusted: the first query restricted to `query.allow_domains` (skipped when there are none);
2. fact-checkers: the first query restricted to FACTCHECK_DOMAINS;
3. broad: up to three planned queries, unrestricted, in parallel —
each later stage only when fewer than `enough` distinct URLs are in hand. Scores keep stages apart (the
provider's rank moves a score by at most 10%), so a trusted outlet outranks any broad result.
A failing stage ends the search: what earlier stages found is returned, else the error propagates
(a provider that is down or rate-limiting us gains nothing from two more requests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from core.evidence.base import ClaimQuery, Evidence
from core.evidence.text import safe_domains

FACTCHECK_DOMAINS = ("snopes.com", "politifact.com", "factcheck.org", "fullfact.org", "factcheck.afp.com",
                     "leadstories.com")
STAGE_WEIGHTS = {"trusted": 1.0, "factcheckers": 0.9, "broad": 0.7}

Search = Callable[[str, int], Awaitable[list[Evidence]]]
SiteFilter = Callable[[list[str]], str]


def plan_stages(query: ClaimQuery, site_filter: SiteFilter,
                factcheckers: tuple[str, ...] = FACTCHECK_DOMAINS) -> list[tuple[str, list[str]]]:
    first = query.search_queries[0]
    stages: list[tuple[str, list[str]]] = []
    trusted = safe_domains(query.allow_domains, limit=6)
    if trusted:
        stages.append(("trusted", [f"{first} {site_filter(trusted)}"]))
    stages.append(("factcheckers", [f"{first} {site_filter(list(factcheckers))}"]))
    stages.append(("broad", list(dict.fromkeys(query.search_queries))[:3]))
    return stages


async def staged_search(search: Search, site_filter: SiteFilter, query: ClaimQuery, *, limit: int,
                        enough: int = 3) -> list[Evidence]:
    found: dict[str, Evidence] = {}
    for stage, queries in plan_stages(query, site_filter):
        if len(found) >= min(enough, limit):
            break
        try:
            batches = await asyncio.gather(*(search(q, limit) for q in queries))
        except Exception:
            if found:
                break
            raise
        weight = STAGE_WEIGHTS[stage]
        for batch in batches:
            for rank, item in enumerate(batch):
                if item.url and item.url not in found:
                    found[item.url] = item.model_copy(update={
                        "retrieval_score": round(weight * (1.0 - 0.1 * rank / len(batch)), 4)})
    return list(found.values())[:limit]
