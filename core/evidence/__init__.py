"""Evidence for a claim: the shared types (base.py) and one module per source.

Public API (what the engine needs):

    from core.evidence.registry import EvidenceSources
    from core.evidence.gather import gather_all
    from core.evidence.base import ClaimQuery

    async with EvidenceSources(settings, matcher=app.matcher) as ev:      # owns the HTTP sessions
        evidence, reports = await gather_all(ev.sources, ClaimQuery(claim=..., queries=[...], urls=[...],
                                             allow_domains=[...], language="en"),
                                             limit=8, timeout=settings.source_timeout_s)

`reports` has one SourceReport per source (ok, ms, found, error sentence, per-item notes); gather_all never
raises. Modules: knowledge.py (previous fact-checks via ClaimMatcher), factcheck_api.py (Google Fact Check
Tools), searxng.py / brave.py (web, staged via staged.py), gdelt.py (news), links.py (link expansion over
fetch.py + html_extract.py, SSRF-guarded by ssrf.py), evidence_index.py (the growing `evidence` collection).
Typed errors with user-facing sentences live in errors.py. Around the sources: queries.py plans the
search queries (`plan_queries`), ranking.py picks and orders what the judge sees (`shortlist`,
`rank_shortlist`), credibility.py holds the domains' default credibility and the admins' rules
(`DomainRules`), resilience.py the rate limits, retries and circuit breakers resilient.py wraps a
source in.
"""
