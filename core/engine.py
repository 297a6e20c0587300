"""The engine entry point: `Engine.check(text)` runs every stage and returns one `Result`.

This is where a check's verdict is decided, in four stages (`Engine._check`, one line each; the typed
records they hand on are in core/stages.py):

    intake        clean the text, check the LLM budget                             -> Admitted
    claims        the LLM's claims, with the knowledge-base match of the whole
                  message running alongside; offline, the claim gate after it      -> Claimed
    evidence      per claim, concurrently: plan queries -> gather (all sources in
                  parallel, widened while short) -> verify (rank, stance, numbers,
                  score, adjudicate)                                               -> Gathered
    adjudication  aggregate the claims' verdicts, or offline: matching
                  fact-checks only                                                 -> Result

Two paths share it. With an LLM configured (`mode: "llm"`) the message is split into claims and each is
judged against the gathered evidence (core/verdict/verify.py). Without one (`mode: "offline"`) a verdict only
ever comes from a previous fact-check that is the same claim (core/verdict/offline_verdict.py); evidence found by
other sources is listed, unjudged, because offline there is nothing honest to judge it with.
Every stage is timed into `Result.steps` and reported to a `ProgressSink`, so chat adapters can edit
their "Checking…" message in place; the whole check has a deadline and answers with what it has.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from core.llm.budget import BudgetExceeded, MeteredLLM, llm_check
from core.intake.checkability import SURE_NO_CLAIM, ClaimGate, not_checkable_result
from core.intake.claims import Claim, ClaimExtraction, extract_claims
from core.evidence.credibility import DomainRules
from core.encoders.text_embedder import TextEmbedder
from core.evidence.base import ClaimQuery, Evidence, EvidenceSource, SourceReport
from core.evidence.gather import gather_all
from core.evidence.knowledge import match_evidence
from core.i18n import t
from core.intake.message import Intake, intake
from core.intake.language import language_note
from core.llm.client import LLM
from core.matching.matcher import ClaimMatcher
from schema.models import (ClaimOutcome, EvidenceItem, LLMUsage, Result, SourceTrace, Step, Verdict,
                         new_check_id)
from core.verdict.offline_verdict import decide
from core.evidence.queries import key_phrases, offline_queries, plan_queries
from core.stages import Admitted, CheckRun, ClaimEvidence, Claimed, Gathered, NullProgress, ProgressSink
from core.verdict.verify import ClaimVerdict, EvidenceJudgement, aggregate, sufficient, verify_claim
from storage.sqlite import Database

log = logging.getLogger(__name__)

# The sufficiency rule: at least this many relevant pieces before judging, else widen the search.
MIN_EVIDENCE = 2
MAX_ROUNDS = 3


class SourcePolicy(Protocol):
    """The admins' source rules for a chat (bot/domains.py implements it over the domain tables)."""

    async def denied_filter(self, scope: str) -> Callable[[str], bool]: ...

    async def rules(self, scope: str) -> DomainRules: ...


class EvidenceStore(Protocol):
    """Where judged web/news evidence is kept so the knowledge base grows with use."""

    async def add(self, evidence: list[Evidence]) -> int: ...


class Engine:
    def __init__(self, db: Database, matcher: ClaimMatcher, *, max_input_chars: int = 4096,
                 source_policy: SourcePolicy | None = None, embedder: TextEmbedder | None = None,
                 llm: MeteredLLM | None = None, sources: Sequence[EvidenceSource] = (),
                 evidence_store: EvidenceStore | None = None, source_timeout_s: float = 10.0,
                 deadline_s: float = 60.0, evidence_limit: int = 8, claim_gate: ClaimGate | None = None):
        self.db = db
        self.claim_gate = claim_gate
        self.matcher = matcher
        self.max_input_chars = max_input_chars
        self.source_policy = source_policy
        self.embedder = embedder if embedder is not None else matcher.kb.embedder
        self.llm = llm
        self.sources = list(sources)
        # A link exempts a message from the claim gate only when something reads the linked page.
        self.reads_links = any(s.name == "links" for s in self.sources)
        self.evidence_store = evidence_store
        self.source_timeout_s = source_timeout_s
        self.deadline_s = deadline_s
        self.evidence_limit = evidence_limit
        self._background: set[asyncio.Task[None]] = set()

    async def aclose(self) -> None:
        """Wait for background work (evidence indexing) to finish."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    async def check(self, raw: str | bytes, progress: ProgressSink | None = None, *,
                    scope: str = "global", check_id: str | None = None) -> Result:
        """The Result of checking `raw`, not stored: whoever asked stores it once, with what it adds
        (bot/chat.py `CheckService.check`). Raises `core.intake.message.EmptyInput` when there is nothing to
        check; everything else ends in a Result.

        `scope` selects the admins' source rules (global, or a chat's): denied domains are never cited."""
        check_id = check_id or new_check_id()
        with llm_check(check_id):  # LLM spending is booked to this check
            result = await self._check(raw, progress or NullProgress(), scope, check_id)
        if self.llm is not None:
            try:
                spend = await self.llm.spent_for_check(check_id)
                result.usage = LLMUsage(calls=spend.calls, prompt_tokens=spend.prompt_tokens,
                                        completion_tokens=spend.completion_tokens, usd=round(spend.usd, 6))
            except Exception:  # the books are informative; never lose an answer over them
                log.warning("could not read LLM usage for check %s", check_id, exc_info=True)
        return result

    async def _check(self, raw: str | bytes, progress: ProgressSink, scope: str, check_id: str) -> Result:
        """The pipeline, one stage a line. A stage that returns a Result has answered already (nothing to check)."""
        run = CheckRun(check_id, progress)
        admitted = await self._intake(run, raw)
        if isinstance(admitted, Result):
            return admitted
        claimed = await self._claims(run, admitted, scope)
        if isinstance(claimed, Result):
            return claimed
        gathered = await self._evidence(run, claimed, scope)
        result = await self._adjudicate(run, gathered)
        self._remember(gathered.worth_keeping())
        return result

    # --- stages --------------------------------------------------------------------------------

    async def _intake(self, run: CheckRun, raw: str | bytes) -> Admitted | Result:
        """The message cleaned and measured, and the LLM to use; offline, a message with no factual claim
        is answered here."""
        async with run.step("intake") as d:
            msg = intake(raw, self.max_input_chars)
            d.append(f"{len(msg.text)} chars, language {msg.language}, {len(msg.urls)} link(s)")
        run.notes.extend(msg.notes)
        if (note := language_note(msg.language)) is not None:
            run.notes.append(note)
        llm: LLM | None = self.llm
        if llm is not None and await self._over_budget():
            llm = None
            run.notes.append(BudgetExceeded.user_message)

        return Admitted(msg, llm)

    async def _offline_gate(self, run: CheckRun, msg: Intake, matched: bool) -> Result | None:
        """The offline claim gate's NOT_CHECKABLE answer, or None when the message goes on to be checked.
        The gate's e5 vector is the matcher's, cached: a checkable message costs no extra model call. A
        message with a link is never turned away when linked pages are read (the page may carry the claim); a
        link that is a known fact-check has matched `auto` before the gate is asked. A message that `matched`
        a fact-check surely (`auto`, at or above the same-claim decision's `unclaimed` threshold) is turned
        away only when the gate is sure it carries no claim ("Как тебе такое, Илон Маск? 😂"), whatever it
        would say of a claim's wrapping."""
        if self.claim_gate is None or (msg.urls and self.reads_links):
            return None
        t0 = time.perf_counter()
        gate = await self.claim_gate.assess(msg.claim_or_text)
        run.steps.append(Step(name="checkability", ms=round((time.perf_counter() - t0) * 1000, 2),
                              detail=f"p_claim {gate.p_claim:.2f}"))
        if gate.checkable or (matched and gate.p_claim >= SURE_NO_CLAIM):
            return None
        return not_checkable_result(run.check_id, msg.text, msg.language, gate, run.notes, run.steps)

    async def _claims(self, run: CheckRun, admitted: Admitted, scope: str) -> Claimed | Result:
        """The claims to check (the LLM's, else the whole message) and the knowledge base's matches for the
        whole message; a message the LLM reads as opinion or too vague is answered here."""
        msg, llm = admitted.msg, admitted.llm
        # The knowledge-base match needs only the message: it runs while the LLM extracts the claims,
        # so its embedding and search are off the critical path.
        matching = asyncio.create_task(self.matcher.match(msg.claim_or_text, msg.urls))
        extraction: ClaimExtraction | None = None
        if llm is not None:
            async with run.step("claims") as d:
                try:
                    extraction = await extract_claims(msg.text, msg.language, llm)
                except BaseException:
                    matching.cancel()
                    raise
                d.append(f"{extraction.kind}, {len(extraction.claims)} claim(s), {extraction.mode}")
            # Only the LLM's judgement stops a check here: the offline heuristic it falls back to when the
            # LLM fails drops plain statements ("The sky is blue") and must not turn them away.
            if extraction.mode == "llm" and extraction.kind in ("OPINION", "AMBIGUOUS", "NONE") and not msg.urls:
                matching.cancel()
                await asyncio.gather(matching, return_exceptions=True)
                return _not_checkable(run, msg, extraction)
            if extraction.mode != "llm":
                extraction = None  # the whole message is the claim, as offline

        async with run.step("match") as d:
            matches = await matching
            d.append(", ".join(f"{m.similarity:.2f}/{m.tier}" for m in matches) or "no candidates")
            denied = (await self.source_policy.denied_filter(scope)) if self.source_policy else (lambda u: False)
            kept = [m for m in matches if not (m.url and denied(m.url))]
            if len(kept) < len(matches):
                d.append(f"{len(matches) - len(kept)} from denied domains left out")
                run.notes.append(f"{len(matches) - len(kept)} fact-check(s) from domains an admin denied were "
                                 "left out.")
        if extraction is None:
            # Offline (or the LLM failed, so its classification is missing), a message with no factual claim
            # ("hello", an opinion, an advert) is answered NOT_CHECKABLE (core/intake/checkability.py).
            sure = self.matcher.same_claim.unclaimed if self.matcher.same_claim is not None else 0.0
            refused = await self._offline_gate(run, msg, matched=any(m.tier == "auto" and m.similarity >= sure
                                                                     for m in kept))
            if refused is not None:
                return refused
        return Claimed(msg, llm, _claims_of(msg, extraction), kept, denied)

    async def _evidence(self, run: CheckRun, claimed: Claimed, scope: str) -> Gathered:
        """Every claim's evidence searched (and, with an LLM, judged) concurrently, within the deadline."""
        rules = await self.source_policy.rules(scope) if self.source_policy else None
        claims, llm = claimed.claims, claimed.llm
        judged: list[ClaimVerdict] = []
        traces: list[SourceTrace] = []
        found: list[tuple[str, list[Evidence]]] = []
        if llm is not None or any(_stays_local(s) and s.name != "knowledge" for s in self.sources):
            async with run.step("evidence") as d:
                remaining = self.deadline_s - run.elapsed()
                tasks = [asyncio.create_task(self._claim(c, claimed, rules)) for c in claims]
                done, pending = await asyncio.wait(tasks, timeout=max(1.0, remaining))
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.gather(*pending, return_exceptions=True)
                    run.notes.append(f"{len(pending)} of {len(claims)} claim(s) could not be finished before "
                                     f"the {self.deadline_s:.0f} s deadline.")
                for task in tasks:
                    if task in done and not task.cancelled() and task.exception() is None:
                        one = task.result()
                        if one.verdict is not None:
                            judged.append(one.verdict)
                        found.append((one.verdict.claim if one.verdict else claims[0].text, one.evidence))
                        traces += one.traces
                    elif task in done and task.exception() is not None:
                        log.error("claim check failed", exc_info=task.exception())
                d.append(f"{sum(len(e) for _, e in found)} item(s) from "
                         f"{len({tr.source for tr in traces})} source(s); "
                         + ", ".join(f"{tr.source}: {'ok' if tr.ok else tr.error}" for tr in traces[:8]))
            if llm is not None:
                # Offline, web/news evidence is listed but never judged, so a provider being down does
                # not change the answer; it stays in the trace (/evidence) instead of on the card.
                run.notes += _source_notes(traces, {src.name: src.label for src in self.sources})
        return Gathered(claimed, judged, found, traces)

    async def _disputed(self, gathered: Gathered) -> bool:
        """Does the message dispute the fact-check whose rating it would inherit (not one matched by its link)?"""
        top = next((m for m in gathered.claimed.matches if m.tier == "auto"), None)
        if top is None or top.method == "url":
            return False
        return await self.matcher.disputes(gathered.claimed.msg.claim_or_text, top.claim, top.factcheck_id)

    async def _adjudicate(self, run: CheckRun, gathered: Gathered) -> Result:
        """The verdict: aggregated from the claims' verdicts (LLM path), else from matching fact-checks only."""
        async with run.step("verdict") as d:
            if gathered.judged:
                result, detail = _judged_result(run, gathered)
            else:
                result, detail = _offline_result(run, gathered, await self._disputed(gathered))
            d.append(detail)
        result.steps = run.steps
        result.sources = gathered.traces
        return result

    async def _claim(self, claim: Claim, claimed: Claimed, rules: DomainRules | None) -> ClaimEvidence:
        """Queries -> evidence (widened while short) -> verdict, for one claim. Starts as soon as the
        claim exists; each claim runs concurrently with the others."""
        msg, matches, llm, denied = claimed.msg, claimed.matches, claimed.llm, claimed.denied
        lang = msg.language
        plan = await plan_queries(claim.text, lang, llm=llm, entities=claim.entities, when=claim.when,
                                  where=claim.where)
        # Trusted domains become site: filters for the first search stage; "*.gov" style rules can't.
        allow = sorted(d for d in (rules.allow or ()) if isinstance(d, str) and "*" not in d) \
            if rules is not None and not callable(rules.allow) else []
        query = plan.claim_query(claim.text, lang, urls=msg.urls, allow_domains=allow)
        # The whole-message matches are evidence for every claim (ranking drops the irrelevant ones).
        evidence: dict[str, Evidence] = {}
        for m in matches:
            if m.tier != "none" and m.url:
                e = match_evidence(m)
                if claim.text != msg.text:
                    # The matcher judged these against the whole message, not this sub-claim.
                    e = e.model_copy(update={"match_tier": None, "match_probability": None})
                evidence.setdefault(m.url, e)
        traces: list[SourceTrace] = []
        # The knowledge base was already searched with the whole message; search it again only for a
        # sub-claim worded differently.
        sources = [s for s in self.sources if s.name != "knowledge" or claim.text != msg.text]
        if llm is None:
            # Offline only a matching fact-check decides: web/news search and linked pages would be listed,
            # never judged, so the user does not wait on them and nothing from the message leaves the machine.
            sources = [s for s in sources if _stays_local(s)]
        # The sufficiency loop: judge once there are >= MIN_EVIDENCE pieces; stop when the
        # verdict is settled (`sufficient`: enough relevant evidence, not NOT_ENOUGH_EVIDENCE or
        # conflicting); otherwise widen the search and judge again, at most MAX_ROUNDS searches.
        verdict: ClaimVerdict | None = None
        judged_on = 0

        async def judge() -> ClaimVerdict:
            # Ranking and stance read the claim and its planned queries, whatever the last search asked.
            return await verify_claim(query.model_copy(update={"queries": plan.queries}), list(evidence.values()),
                                      embedder=self.embedder, llm=llm, rules=rules, english=plan.english)

        used = set(query.search_queries)
        for round_no in range(1, MAX_ROUNDS + 1):
            found, reports = await gather_all(sources, query, limit=self.evidence_limit,
                                              timeout=self.source_timeout_s)
            traces += [_trace(r, claim.text) for r in reports]
            for e in found:
                if e.url and not denied(e.url):
                    evidence.setdefault(e.url, e)
            if llm is None:
                break  # offline, web evidence is only listed, never judged: one round is enough
            if len(evidence) >= MIN_EVIDENCE:
                verdict = await judge()
                judged_on = len(evidence)
                if sufficient(verdict):
                    break
            web = {src.name for src in sources if src.searches_web}
            if round_no == MAX_ROUNDS or not any(r.ok for r in reports if r.source in web):
                break  # out of rounds, or no search provider answered: asking again only burns the deadline
            # Widen: broader queries (the translation, key phrases, entities) without site filters, and
            # only the sources that can find new things (search, not the knowledge base again).
            wider = offline_queries(claim.text, lang, entities=claim.entities, when=claim.when, where=claim.where)
            wider = ([plan.english] if plan.english else []) + wider + [key_phrases(claim.text, limit=4)]
            new_queries = [q for q in dict.fromkeys(wider) if q and q not in used][:4]
            sources = [s for s in self.sources if s.searches_web]
            if not new_queries or not sources:
                break
            used.update(new_queries)
            query = ClaimQuery(claim=claim.text, queries=new_queries, language=lang, urls=[], allow_domains=[])
        items = list(evidence.values())
        if llm is None:
            return ClaimEvidence(None, items, traces)
        if verdict is None or judged_on != len(items):
            verdict = await judge()
        return ClaimEvidence(verdict, items, traces)

    async def _over_budget(self) -> bool:
        if self.llm is None:
            return False
        try:
            return await self.llm.over_cap()
        except Exception:  # the books being unreadable must not stop the check
            return False

    def _remember(self, gathered: list[tuple[str, list[Evidence]]]) -> None:
        """Index new web/news evidence in the background: the knowledge base grows with use."""
        store = self.evidence_store
        if store is None:
            return
        fresh = [e for _, evs in gathered for e in evs if e.source_type in ("news", "web", "page")]
        if not fresh:
            return

        async def add() -> None:
            try:
                await store.add(fresh)
            except Exception:
                log.warning("could not index %d evidence item(s)", len(fresh), exc_info=True)

        task = asyncio.create_task(add())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _stays_local(source: EvidenceSource) -> bool:
    return not source.searches_web and source.name != "links"


def _claims_of(msg: Intake, extraction: ClaimExtraction | None) -> list[Claim]:
    # Offline, the whole message is the claim: matching was trained and measured on whole messages,
    # and the sentence heuristic would only cut context away.
    if extraction is None or not extraction.claims:
        return [Claim(text=msg.text)]
    return extraction.claims


def _not_checkable(run: CheckRun, msg: Intake, extraction: ClaimExtraction) -> Result:
    """The LLM classified the message as opinion, too vague, or without a claim: say why, search nothing."""
    why = t(f"notcheckable.{extraction.kind}", msg.language)
    reasoning = why + (f" ({extraction.reason})" if extraction.reason else "")
    return Result(id=run.check_id, text=msg.text, language=msg.language, verdict=Verdict.NOT_CHECKABLE,
                  label=t("label.NOT_CHECKABLE", msg.language), confidence=0.9, reasoning=reasoning,
                  mode="llm", notes=run.notes, steps=run.steps)


def _judged_result(run: CheckRun, gathered: Gathered) -> tuple[Result, str]:
    """The claims' verdicts aggregated into the answer, and the verdict step's detail."""
    msg, judged, lang = gathered.claimed.msg, gathered.judged, gathered.claimed.msg.language
    agg = aggregate(judged)
    mode: Literal["offline", "llm"] = "llm" if any(cv.mode == "llm" for cv in judged) else "offline"
    if mode == "offline" and BudgetExceeded.user_message not in run.notes:
        run.notes.append("The language model could not be reached, so this answer follows the offline "
                         "rules: only matching fact-checks decide.")
    result = Result(
        id=run.check_id, text=msg.text, language=lang, verdict=agg.verdict,
        label=t(f"label.{agg.verdict.value}", lang), confidence=agg.confidence,
        reasoning=agg.reasoning, citations=agg.citations, matches=gathered.claimed.matches, mode=mode,
        notes=run.notes + [n for cv in judged for n in _user_notes(cv)],
        claims=[_outcome(cv, lang) for cv in agg.claims] if len(agg.claims) > 1 else [],
        evidence=[_item(j, cv.claim) for cv in judged for j in cv.stances])
    return result, f"{agg.verdict.value} ({agg.confidence:.2f}), {mode}, rule: {agg.rule}"


def _offline_result(run: CheckRun, gathered: Gathered, disputed: bool) -> tuple[Result, str]:
    """Offline (or nothing judged): only a matching fact-check decides; web/news found is listed, unjudged."""
    msg, lang = gathered.claimed.msg, gathered.claimed.msg.language
    decided = decide(msg.claim_or_text, gathered.claimed.matches, language=lang, disputed=disputed)
    extra = [EvidenceItem(url=e.url, title=e.title, domain=e.domain, source=e.source,
                          source_type=e.source_type, claim=claim)
             for claim, evs in gathered.found for e in evs if e.source_type != "factcheck"]
    unjudged = ([f"{len(extra)} web/news item(s) were found but not judged: without an LLM, tipline "
                 "only gives verdicts from matching fact-checks (see /evidence)."] if extra else [])
    result = Result(
        id=run.check_id, text=msg.text, language=lang, verdict=decided.verdict,
        label=t(f"label.{decided.verdict.value}", lang), confidence=decided.confidence,
        reasoning=decided.reasoning, citations=decided.citations, matches=decided.matches,
        mode="offline", notes=run.notes + decided.notes + unjudged, evidence=extra,
        inherited_from=decided.inherited_from)
    return result, f"{decided.verdict.value} ({decided.confidence:.2f}), offline"


def _trace(r: SourceReport, claim: str) -> SourceTrace:
    return r.model_copy(update={"claim": claim})


def _source_notes(traces: list[SourceTrace], labels: dict[str, str]) -> list[str]:
    """One line for the user naming sources that failed on every claim (details stay in the trace)."""
    failed = {tr.source for tr in traces} - {tr.source for tr in traces if tr.ok}
    if not failed:
        return []
    words = ", ".join(dict.fromkeys(labels.get(name, name) for name in sorted(failed)))
    return [f"Could not use {words} this time; the answer is based on the other sources."]


def _user_notes(cv: ClaimVerdict) -> list[str]:
    # verify's notes are a trace for /evidence; only the ones that change what the user should trust
    # go on the card.
    return [n for n in cv.notes if n.lower().startswith(("llm unavailable", "downgraded", "guard"))][:2]


def _outcome(cv: ClaimVerdict, lang: str) -> ClaimOutcome:
    return ClaimOutcome(claim=cv.claim, verdict=cv.verdict, label=t(f"label.{cv.verdict.value}", lang),
                        confidence=cv.confidence, reasoning=cv.reasoning, citations=[c.n for c in cv.citations],
                        score=cv.score)


def _item(j: EvidenceJudgement, claim: str) -> EvidenceItem:
    return EvidenceItem(url=j.url, title=j.title, domain=j.domain, source="", source_type="", stance=j.stance,
                        relevance=j.relevance, credibility=j.credibility, claim=claim)
