"""Claim matching: has this already been fact-checked?

1. Exact URL: a link in the message that is a known fact-check or a known appearance of a claim.
2. Hybrid candidates: dense search over the claim and the headline fields (English model), over
   claim + headline (multilingual model) plus sparse term search (storage/vectors.py), the union of
   the four lists.
3. A learned re-ranker (core/matching/reranker.py, trained on CLEF-2020 Task 2 train) scores every candidate
   with a calibrated probability that it is the same claim; two thresholds from the same training
   decide: >= auto, the verdict may inherit the fact-check's rating; >= suggest, "possibly related".
   An English message against an English fact-check is scored by the English re-ranker (every
   feature); a pair across scripts (Russian against English and back) by the multilingual one; a pair
   in one non-Latin script (Russian against Russian) by the same-script one. The last two never see
   the English model's features (noise outside English) and have their own calibrated thresholds.
   No language is blocked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

import asyncio
import re

import numpy as np

from core.intake.claim_text import claim_sentences
from core.matching.crosslingual_terms import lazy_lexicon
from core.matching.gloss import gloss
from core.matching.knowledge_base import KnowledgeBase
from core.intake.language import detect_language
from core.matching.features import (
    FEATURE_NAMES, GLOSS_LIST, LISTS, CandidateCosines, features_of, prepare_query, without_english_model,
)
from core.textscript import latin_script, latin_share
from schema.models import FactCheck, Match, MatchTier, Verdict
from core.matching.reranker import Reranker
from core.intake.checkability import CheckabilityModel
from core.matching.denial import Denial
from core.matching.negation import contradicts
from core.matching.same_claim import TOP_K, SameClaim, decision_features
from core.matching.contested import RIVAL_SIMILARITIES, rival
from core.encoders.sparse import query_vector, term_ids
from core.textclean import clean_query
from core.encoders.token_align import alignment_rp, harmonic
from storage.vectors import MULTI_FIELD, USE_FIELD, Hit

# Our vector-store list names -> the re-ranker's candidate-list names.
_LIST_NAMES = {"claim": LISTS[0], "title": LISTS[1], "terms": LISTS[2], "multi": LISTS[3], "gloss": GLOSS_LIST}


_WORD = re.compile(r"[^\W\d_]{4,}|\d+")

# Same-script guard. The same-script re-ranker learned from English pairs (no labelled Russian pairs
# exist), and Russian texts sit closer together in e5's space than English ones: on the seed, "5G вышки
# распространяют коронавирус" took our Russian fact-check of a Kyrgyz 5G-tower demolition at p 0.98
# over the English 5G fact-check, and "Говорят что 5G towers cause COVID" one about vaccinated people
# exploding. So a pair in one non-Latin script reaches `auto` only when the message also carries at
# least SAME_SCRIPT_MIN_OVERLAP of the fact-check's words, compared by their first five letters
# (Russian inflects: "бананы радиоактивны" / "банан радиоактивен"). Seed probes: the near-paraphrases
# score 0.5-1.0, the two wrong pairs 0.0 and 0.14; a paraphrase sharing fewer words stays "possibly
# related", with the fact-check shown.
SAME_SCRIPT_MIN_OVERLAP = 0.4

# A mixed message ("Говорят что 5G towers cause COVID, это правда?": 46 % Latin letters) often
# carries the claim itself in English. Its English words are matched as a message of their own too,
# and each fact-check keeps the better of the two scores: for that message the multilingual
# re-ranker gave the English 5G fact-check p 0.17, while "5G towers cause COVID" alone is an exact
# match. Scoring the whole mixed message with the English re-ranker instead measured no better (its
# similarity features are diluted by the Russian words).
MIXED_MIN_LATIN = 0.25
MIXED_MIN_WORDS = 3
_LATIN_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*(?:[\s,:;]+[A-Za-z0-9][A-Za-z0-9'’\-]*)*")


# A candidate's script, by its claim: the same fact-checks come back query after query, and two regex
# scans per candidate were ~2 ms of a warm match (50 candidates).
_claim_latin = lru_cache(maxsize=1 << 16)(latin_script)


def english_part(text: str) -> str | None:
    """The longest run of Latin-script words of a mixed message, when it has MIXED_MIN_WORDS or more."""
    if latin_script(text) or latin_share(text) < MIXED_MIN_LATIN:
        return None
    runs = [r.strip(" ,:;") for r in _LATIN_RUN.findall(text)]
    best = max(runs, key=lambda r: len(r.split()), default="")
    return best if len(best.split()) >= MIXED_MIN_WORDS else None


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower())}


def word_overlap(message: str, claim: str) -> float:
    """Share of the claim's words (4+ letters, or numbers; first five letters) found in the message."""
    c = _stems(claim)
    return len(c & _stems(message)) / len(c) if c else 0.0


@dataclass(frozen=True)
class Thresholds:
    auto: float
    suggest: float
    auto_min_cos: float = 0.0
    floor_feature: str = "cos_doc"
    # Share of the fact-check's words the message must carry for `auto` (the same-script guard).
    min_word_overlap: float = 0.0

    @classmethod
    def of(cls, reranker: Reranker, auto: float | None = None, suggest: float | None = None,
           min_word_overlap: float = 0.0) -> Thresholds:
        return cls(auto if auto is not None else reranker.auto_threshold,
                   suggest if suggest is not None else reranker.suggest_threshold,
                   reranker.auto_min_cos, reranker.auto_floor_feature, min_word_overlap)

    @cached_property
    def _floor_col(self) -> int:
        return FEATURE_NAMES.index(self.floor_feature)

    def tier(self, p: float, features: np.ndarray, message: str = "", claim: str = "") -> MatchTier:
        if (p >= self.auto and features[self._floor_col] >= self.auto_min_cos
                and (not self.min_word_overlap or word_overlap(message, claim) >= self.min_word_overlap)):
            return "auto"
        return "suggest" if p >= self.suggest else "none"


@dataclass(frozen=True)
class _Scorer:
    """One re-ranker with its thresholds, and whether it reads the English model's features."""

    reranker: Reranker
    thresholds: Thresholds
    english_features: bool


def _match_from_payload(pid: str, payload: dict, p: float, tier: MatchTier,
                        method: Literal["hybrid", "decided"] = "hybrid") -> Match:
    return Match(
        factcheck_id=pid, claim=payload.get("claim", ""), title=payload.get("title", ""),
        url=payload.get("url", ""), publisher=payload.get("publisher", ""),
        published_at=payload.get("published_at"), rating_text=payload.get("rating_text", ""),
        verdict=Verdict(payload.get("verdict", Verdict.NOT_ENOUGH_EVIDENCE.value)),
        similarity=round(float(p), 4), method=method, tier=tier,
    )


async def _none() -> None:
    return None


def _at_most_suggest(match: Match) -> Match:
    return match.model_copy(update={"tier": "suggest"}) if match.tier == "auto" else match


def _best_first(matches: list[Match]) -> list[Match]:
    """`auto` matches first (a guard may have demoted a likelier one), then by probability."""
    return sorted(matches, key=lambda m: (m.tier != "auto", -m.similarity))


def _match_from_factcheck(fc: FactCheck) -> Match:
    return Match(factcheck_id=fc.id, claim=fc.claim, title=fc.title, url=fc.url, publisher=fc.publisher,
                 published_at=fc.published_at, rating_text=fc.rating_text, verdict=fc.verdict,
                 similarity=1.0, method="url", tier="auto")


_RIVAL_COLS = [FEATURE_NAMES.index(name) for name in RIVAL_SIMILARITIES]


def hit_cosines(hits: list[Hit], multi_dim: int, *, gloss: bool) -> CandidateCosines:
    """The candidates' cosines as the store scored them (0 for a point deleted in between)."""
    def col(key: str) -> np.ndarray:
        return np.array([h.cosines.get(key, 0.0) for h in hits])
    zeros = np.zeros(multi_dim, np.float32)
    return CandidateCosines(
        col("claim"), col("title"), np.array([h.doc_norm for h in hits]),
        multi=col(MULTI_FIELD), multi_vecs=np.vstack([h.multi if h.multi is not None else zeros for h in hits]),
        use=col(USE_FIELD), gloss_claim=col("gloss_claim") if gloss else None,
        gloss_title=col("gloss_title") if gloss else None)


class _Rivals:
    """Whether a close rival contests an English `auto` match (core/matching/contested.py); the candidates' terms are
    read once per message, on its first `auto` match (most messages have none)."""

    def __init__(self, clean: str, claims: list[str], hits: list[Hit], features: np.ndarray, probs: np.ndarray):
        self._clean, self._claims, self._hits, self._probs = clean, claims, hits, probs
        self._sims = features[:, _RIVAL_COLS]
        self._terms: tuple[frozenset[int], list[frozenset[int]]] | None = None

    def contest(self, i: int, suggest: float) -> bool:
        if self._terms is None:
            self._terms = (frozenset(term_ids(self._clean)),
                           [frozenset(term_ids(c)) | frozenset(term_ids(h.payload.get("title", "")))
                            for c, h in zip(self._claims, self._hits)])
        message, docs = self._terms
        return rival(message, docs, self._sims, self._probs >= suggest, i) is not None


@dataclass(frozen=True)
class Scored:
    """A message's candidates as the re-rankers scored them; `kind` numbers the pair as `_scorers` does, plus 4
    for a non-English Latin-script message (scored by the multilingual re-ranker)."""

    clean: str
    hits: list[Hit]
    claims: list[str]
    probs: np.ndarray
    features: np.ndarray
    kind: np.ndarray
    tok_rp: np.ndarray | None = None  # (n, 3) token alignment R, P and P_low (core/encoders/token_align.py)
    multi_vec: np.ndarray | None = None  # the message's e5 query vector
    p_claim: float = 1.0  # the claim gate's probability that the message states a fact
    # The top candidates' claims read as e5 queries, by candidate index (KnowledgeBase.claim_reads): their vectors,
    # and the message's token alignment with their token states (R, P, P_low: `tok_rp` aligns the message with the
    # passage, claim + headline read as a passage; this with the claim alone, read as the message is read).
    claim_queries: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    claim_tok_rp: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)

    def order(self) -> np.ndarray:
        return np.argsort(-self.probs, kind="stable")

    def decision_rows(self, top: np.ndarray) -> np.ndarray:
        vecs = None
        if self.multi_vec is not None:
            zeros = np.zeros_like(self.multi_vec)
            vecs = np.vstack([h.multi if h.multi is not None else zeros for h in self.hits])
        return decision_features(self.probs, self.features, self.kind, top, self.clean, self.claims, self.tok_rp,
                                 self.multi_vec, vecs, self.p_claim, _in_order(self.claim_queries, top),
                                 _in_order(self.claim_tok_rp, top))


def _in_order(rows: dict[int, np.ndarray], top: np.ndarray) -> np.ndarray | None:
    """`rows` of the candidates `top`, one per candidate in that order; None unless every one has its row."""
    return np.vstack([rows[int(i)] for i in top]) if len(top) and all(int(i) in rows for i in top) else None


class ClaimMatcher:
    def __init__(self, kb: KnowledgeBase, reranker: Reranker, multilingual: Reranker, same_script: Reranker,
                 cyrillic: Reranker, *, candidates: int = 40, auto: float | None = None,
                 suggest: float | None = None, same_claim: SameClaim | None = None, sentence_spans: int = 0,
                 denial: Denial | None = None, claim_model: CheckabilityModel | None = None):
        """`auto`/`suggest` override the English re-ranker's thresholds (TIPLINE_MATCH_*); the
        others keep their own. `cyrillic` scores a message with Cyrillic words against a fact-check in
        another script (it reads the message's English gloss, core/matching/gloss.py). `claim_model` is the
        claim gate's, read by the same-claim decision (over the e5 vector the match computes anyway)."""
        self.kb = kb
        self.claim_model = claim_model
        if same_claim is not None and (auto is not None or suggest is not None):
            same_claim = dataclasses.replace(same_claim, auto=same_claim.auto if auto is None else auto,
                                             related=same_claim.related if suggest is None else suggest)
        self.same_claim = same_claim
        self.denial = denial
        self.sentence_spans = sentence_spans
        self.candidates = candidates
        self.thresholds = Thresholds.of(reranker, auto, suggest)
        # Indexed by the pair's kind: 0 both English-script, 1 across scripts, 2 one non-Latin script,
        # 3 across scripts from a message with Cyrillic words (its gloss read).
        self._scorers = (
            _Scorer(reranker, self.thresholds, True),
            _Scorer(multilingual, Thresholds.of(multilingual), False),
            _Scorer(same_script, Thresholds.of(same_script, min_word_overlap=SAME_SCRIPT_MIN_OVERLAP), False),
            _Scorer(cyrillic, Thresholds.of(cyrillic), False),
        )

    async def by_url(self, urls: list[str]) -> list[Match]:
        return [_match_from_factcheck(fc) for fc in await self.kb.db.factchecks_by_urls(urls)]

    async def by_text(self, text: str, limit: int = 5) -> list[Match]:
        """Every candidate scored, best first, at most `limit`. A mixed message's English words and, with
        `sentence_spans`, the sentences of a longer message are matched on their own too; each fact-check
        keeps its best score."""
        parts = self.parts_of(text)
        if len(parts) == 1:
            return await self._by_text(*parts[0], limit)
        found = await asyncio.gather(*(self._by_text(t, c, limit) for t, c in parts))
        best: dict[str, Match] = {}
        for m in (m for ms in found for m in ms):
            if m.factcheck_id not in best or m.similarity > best[m.factcheck_id].similarity:
                best[m.factcheck_id] = m
        return _best_first(list(best.values()))[:limit]

    def parts_of(self, text: str) -> list[tuple[str, str]]:
        """(text, cleaned text) of each part matched: the message, then its English words if it is mixed,
        then (with `sentence_spans`) its first sentences when it has several."""
        clean = clean_query(text)
        parts = [(text, clean)] + [(p, p) for p in [english_part(clean)] if p is not None]
        if self.sentence_spans:
            sentences = [s for s in claim_sentences(text) if len(s.split()) >= 4]
            if len(sentences) > 1:
                parts += [(s, clean_query(s)) for s in sentences[:self.sentence_spans]]
        return parts

    async def _by_text(self, text: str, clean: str, limit: int) -> list[Match]:
        scored = await self.scored(text, clean)
        if scored is None:
            return []
        if self.same_claim is not None:
            return self._decided(scored, limit)
        rivals = _Rivals(clean, scored.claims, scored.hits, scored.features, scored.probs)
        out = [self._reranked(scored, i, rivals) for i in scored.order()[:limit + 5]]  # room for demotions
        return _best_first(out)[:limit]

    def _reranked(self, scored: Scored, i: int, rivals: _Rivals) -> Match:
        """A candidate with its re-ranker's own tier: the thresholds and guards calibrated on CLEF-2020."""
        kind = int(scored.kind[i])
        scorer = self._scorers[1 if kind == 4 else kind]
        X = scored.features if scorer.english_features else without_english_model(scored.features)
        p = scored.probs[i]
        tier = scorer.thresholds.tier(p, X[i], scored.clean, scored.claims[i])
        if tier == "auto" and kind == 0 and rivals.contest(i, scorer.thresholds.suggest):
            tier = "suggest"
        return _match_from_payload(scored.hits[i].id, scored.hits[i].payload, p, tier)

    def _english(self, scored: Scored, i: int, rivals: _Rivals, q: float) -> Match:
        """An English pair keeps the English re-ranker's calibrated tier, but inherits no verdict from a
        candidate the same-claim decision calls unrelated: the re-ranker, fitted on CLEF tweets, takes a chat
        near miss with the same names for the claim (docs/decisions/2026-11-28-chat-matching.md)."""
        match = self._reranked(scored, i, rivals)
        assert self.same_claim is not None
        return _at_most_suggest(match) if q < self.same_claim.related else match

    def _decided(self, scored: Scored, limit: int) -> list[Match]:
        """The same-claim decision (core/matching/same_claim.py) over the re-rankers' top candidates: its probability
        is the match's similarity, its thresholds the tiers; the rest follow, unlisted."""
        assert self.same_claim is not None
        order = scored.order()
        top = order[:TOP_K]
        q = self.same_claim.score(scored.decision_rows(top))
        rivals = _Rivals(scored.clean, scored.claims, scored.hits, scored.features, scored.probs)
        # An English message against an English fact-check keeps the English re-ranker's calibrated tiers
        # (CLEF-2020: precision 0.90 at `auto`) unless the decision calls it unrelated; every other pair is
        # the decision's.
        out = [self._english(scored, int(i), rivals, float(q[j])) if scored.kind[i] == 0 else
               _match_from_payload(scored.hits[i].id, scored.hits[i].payload, float(q[j]),
                                   self.same_claim.tier(float(q[j])), method="decided") for j, i in enumerate(top)]
        # `auto` matches first, likeliest first; the rest in the re-rankers' order, which they were fitted for
        # (CLEF-2020 and its translations), not by the decision's probability, fitted to decide.
        out = sorted(out, key=lambda m: (m.tier != "auto", -m.similarity if m.tier == "auto" else 0.0))
        # Past the decision's TOP_K nothing was read by it, so nothing there passes on a verdict; only those
        # that fit under `limit` are built.
        rest = [_at_most_suggest(self._reranked(scored, int(i), rivals)) if scored.kind[i] == 0 else
                _match_from_payload(scored.hits[i].id, scored.hits[i].payload, 0.0, "none", method="decided")
                for i in order[TOP_K:max(limit, TOP_K)]]
        return (out + rest)[:limit]

    async def scored(self, text: str, clean: str | None = None) -> Scored | None:
        """Every candidate of `text` with the re-rankers' probabilities and features (None: no candidate)."""
        clean = clean_query(text) if clean is None else clean
        # The three models at once, each in its own thread: the e5 query is most of a match's CPU. A
        # message with Cyrillic words also has its English gloss read by MiniLM (one more text, its own
        # call: a batch would pad the message's row and change its vector).
        glossed = gloss(clean, lazy_lexicon())  # None without a Cyrillic word
        # e5's token states come from the same call: the same-claim decision reads their alignment with the
        # candidates' (core/encoders/token_align.py), and so does the `cyrillic` re-ranker for a message with Cyrillic words.
        vecs, (multi, qstates), use, gvecs = await asyncio.gather(
            self.kb.embedder.embed([clean]), self._multi(clean, states=True),
            self.kb.use.encode([clean]), self.kb.embedder.embed([glossed]) if glossed is not None else _none())
        vec, mvec, uvec = vecs[0], multi[0], use[0]
        gvec = gvecs[0] if gvecs is not None else None
        hits = await self.kb.vectors.search_factchecks(self.kb.collection, vec, query_vector(clean),
                                                       self.candidates, multi=mvec, gloss=gvec, use=uvec)
        if not hits:
            return None
        query = prepare_query(text, clean, vec, self.kb.stats, mvec, uvec, gvec)
        ranks = {_LIST_NAMES[name]: [h.ranks.get(name, 0) for h in hits] for name in _LIST_NAMES}
        claims = [h.payload.get("claim", "") for h in hits]
        cosines = hit_cosines(hits, mvec.shape[0], gloss=gvec is not None)
        tok_rp = None
        if qstates is not None:
            stored = await self.kb.token_states([h.id for h in hits])
            # Off the event loop: one BLAS product of the message's states with every candidate's.
            tok_rp = await asyncio.to_thread(alignment_rp, qstates, [stored.get(h.id) for h in hits])
            if glossed is not None:  # the re-rankers were fitted with F for such messages only
                cosines = dataclasses.replace(cosines, tok_f=harmonic(tok_rp))
        features = features_of(query, claims, [h.payload.get("title", "") for h in hits], cosines, ranks,
                               self.kb.stats)
        latin = np.array([_claim_latin(c) for c in claims], dtype=bool)
        kind = np.where(latin == query.latin, np.where(latin, 0, 2), 3 if gvec is not None else 1)
        if query.latin and detect_language(clean) != "en":
            # Spanish, German, Polish …: the English model cannot read them, so the multilingual scorer decides.
            kind[kind == 0] = 4
        without_english = without_english_model(features)
        probs = np.zeros(len(hits))
        for k, scorer in enumerate(self._scorers):
            rows = np.where(kind == 4, 1, kind) == k
            if rows.any():
                probs[rows] = scorer.reranker.score((features if scorer.english_features else without_english)[rows])
        p_claim = 1.0
        if self.claim_model is not None:
            p_claim = float(self.claim_model.score(self.claim_model.features(mvec[None, :], [clean]))[0])
        scored = Scored(clean, hits, claims, probs, features, kind, tok_rp, mvec, p_claim)
        top = [int(i) for i in scored.order()[:TOP_K]]  # the candidates the same-claim decision reads
        queries, claim_states = await self.kb.claim_reads([hits[i].id for i in top], [claims[i] for i in top])
        aligned = dict(zip(top, alignment_rp(qstates, claim_states))) if qstates is not None else {}
        return dataclasses.replace(scored, claim_queries=dict(zip(top, queries)), claim_tok_rp=aligned)

    async def _multi(self, clean: str, *, states: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """e5's query vector of `clean` and, if asked, its token states."""
        if states:
            vecs, token_states = await self.kb.multilingual.queries_with_states([clean])
            return vecs, token_states[0]
        return await self.kb.multilingual.queries([clean]), None

    async def disputes(self, text: str, claim: str, factcheck_id: str) -> bool:
        """Does `text` dispute `claim`, the fact-check `factcheck_id` it matched (core/matching/denial.py)? The
        message's vector is the one `by_text` computed for it (remembered by the encoder), the claim's the one
        stored with the fact-check (KnowledgeBase.claim_reads): no model call."""
        if self.denial is None:
            return contradicts(text, claim)
        (vector,), ((claim_vector,), _) = await asyncio.gather(self.kb.multilingual.queries([clean_query(text)]),
                                                                self.kb.claim_reads([factcheck_id], [claim]))
        return self.denial.disputes(text, claim, vector, claim_vector)

    async def match(self, text: str, urls: list[str], limit: int = 5) -> list[Match]:
        """Exact link matches first, then the text's; every language the models read is matched alike."""
        exact = await self.by_url(urls)
        seen = {m.factcheck_id for m in exact}
        ranked = [m for m in await self.by_text(text, limit + len(exact)) if m.factcheck_id not in seen]
        return (exact + ranked)[:limit]
