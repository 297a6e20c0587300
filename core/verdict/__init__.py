"""Verdict: evidence -> stances -> features -> a verdict with reasoning and citations; or, offline, the
verdict a matching fact-check allows.

Public API:

    from core.verdict.verify import verify_claim, aggregate, ClaimVerdict  # one claim, then one message
    from core.verdict.stance import judge_stances, Stance                 # supports / refutes / neutral
    from core.verdict.scoring import compute_features, decide             # the verdict policy over features
    from core.verdict.adjudicate import adjudicate, MAX_CITATIONS         # the paragraph and its citations
    from core.verdict.offline_verdict import decide                       # no LLM, no web: matches only

Which evidence the judge sees (ranking) and how credible a site is (credibility) live with the evidence
(core/evidence/).
"""
