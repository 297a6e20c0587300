"""The same-claim decision: is this candidate the message's own claim (inherit its verdict), related, or neither?

The re-rankers (core/matching/reranker.py) order the candidates; they were fitted on CLEF tweets and on translations of
them, one clean claim per text. Chat forwards are not like that: a paraphrase in Russian or Ukrainian of a
Russian fact-check, a near miss with the same names and a different claim, a second sentence of context. One
logistic model, trained on chat-like messages we wrote (eval/realistic, split by fact-check;
training/same_claim.py), reads the top candidates of every message, whatever the languages, and gives the
probability that each is the same claim. Three thresholds from that training decide:

- `auto`: the verdict is inherited (chosen for precision of inherited verdicts >= 0.95 on the training rows,
  cross-validated, near misses and messages without a fact-check included);
- `unclaimed`: the same choice among the messages the claim gate turns away (core/engine.py checks such a
  message only when its match reaches it): there a chat line that names a fact-check's subjects reaches mid
  probabilities, and `auto` alone gave precision 0.76;
- `related`: "possibly related" is shown (a person would call them the same topic: precision >= 0.9 for the
  target fact-check or the near miss's neighbour).

Its inputs: the re-ranker's logit and the candidate's rank, the multilingual similarities
(e5, USE, e5 token alignment and its worst-met third of the fact-check, with the passage and with the claim
alone read as the message is read), cross-language term cover, names and
numbers shared or missing, the share of the fact-check's word stems in the message, which kind of pair it
is (English–English, across scripts, one non-Latin script, another Latin-script language), and the claim gate's
probability that the message states a fact at all: a chat line that only names a fact-check's subjects ("Казахстан,
5G, облака — звучит как playlist name 🎧") is close to it in every similarity.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import logging

import numpy as np

from core.logistic import probability, standardised_weights
from core.matching.features import FEATURE_NAMES
from schema.models import MatchTier

log = logging.getLogger(__name__)
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "same_claim.json"
TOP_K = 5  # candidates the decision reads per message (ordered by the re-rankers)

# Pair kinds as core/matching/matcher.py numbers them, plus 4: a non-English Latin-script message (Spanish …).
KINDS = ("en_en", "cross", "same_script", "cross_gloss", "other_latin")
_FROM_RERANKER = ("cos_multi", "cos_use", "tok_f", "xl_cover", "xl_names", "entity_cover", "number_match",
                  "number_miss", "cover_claim", "cos_doc", "cos_gloss")
FEATURES: tuple[str, ...] = ("logit_p", "rank", *_FROM_RERANKER, "stem_overlap", *(f"kind_{k}" for k in KINDS),
                             "tok_r", "tok_p", "tok_p_low", "claim_tok_r", "claim_tok_p", "claim_tok_p_low", "p_claim",
                             "cos_claim_query")
_COLS = [FEATURE_NAMES.index(n) for n in _FROM_RERANKER]
# Where the later inputs sit in a row, by name, so a new input cannot shift another's column.
_TOK, _CLAIM_TOK = FEATURES.index("tok_r"), FEATURES.index("claim_tok_r")
_P_CLAIM, _COS_CLAIM_QUERY = FEATURES.index("p_claim"), FEATURES.index("cos_claim_query")
_ENGLISH_ONLY = [_FROM_RERANKER.index(n) for n in ("cover_claim", "cos_doc")]
# The e5 vectors of message and candidate side by side, dimension by dimension: which meanings they share
# and where they part, read by weights learned on the chat-like pairs (a cosine weighs every dimension alike);
# first against the fact-check's passage vector (what the search found), then against its claim read as a query,
# as the message is (e5's symmetric use, for paraphrase).
VECTOR_PARTS = ("e5_product", "e5_absdiff", "e5_query_product", "e5_query_absdiff")
_WORD = re.compile(r"[^\W\d_]{4,}|\d+")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower())}


def stem_overlap(message: str, claim: str) -> float:
    c = _stems(claim)
    return len(c & _stems(message)) / len(c) if c else 0.0


def decision_features(probs: np.ndarray, features: np.ndarray, kinds: np.ndarray, order: np.ndarray,
                      message: str, claims: list[str], tok_rp: np.ndarray | None = None,
                      message_vec: np.ndarray | None = None, candidate_vecs: np.ndarray | None = None,
                      p_claim: float = 1.0, claim_query_vecs: np.ndarray | None = None,
                      claim_tok_rp: np.ndarray | None = None) -> np.ndarray:
    """One row per candidate in `order` (best first by the re-rankers): the decision's FEATURES, then, with the
    message's e5 query vector, the candidates' e5 passage vectors and the query vectors of their claims
    (`claim_query_vecs`, one row per candidate in `order`, as `claim_tok_rp`: the message's token alignment with
    those claims), their VECTOR_PARTS. `p_claim`: the claim gate's
    probability that the message states a fact at all (core/intake/checkability.py)."""
    p = np.clip(probs[order], 1e-6, 1 - 1e-6)
    rows = np.zeros((len(order), len(FEATURES)))
    rows[:, 0] = np.log(p / (1 - p))
    rows[:, 1] = np.arange(len(p))
    base = features[order][:, _COLS]
    english = kinds[order] == 0
    base[:, _ENGLISH_ONLY] *= english[:, None]  # the English model reads English only
    rows[:, 2:2 + len(_COLS)] = base
    rows[:, 2 + len(_COLS)] = [stem_overlap(message, claims[i]) for i in order]
    for k in range(len(KINDS)):
        rows[:, 3 + len(_COLS) + k] = kinds[order] == k
    if tok_rp is not None:
        rows[:, _TOK:_TOK + 3] = tok_rp[order]
    if claim_tok_rp is not None:
        rows[:, _CLAIM_TOK:_CLAIM_TOK + 3] = claim_tok_rp
    rows[:, _P_CLAIM] = p_claim
    if message_vec is None or candidate_vecs is None or claim_query_vecs is None:
        return rows
    q = np.asarray(message_vec, dtype=np.float64)[None, :]
    d = np.asarray(candidate_vecs, dtype=np.float64)[order]
    c = _unit(np.asarray(claim_query_vecs, dtype=np.float64))
    rows[:, _COS_CLAIM_QUERY] = c @ q[0]  # both unit vectors (the stored one, float16, renormalised)
    return np.hstack([rows, q * d, np.abs(q - d), q * c, np.abs(q - c)])


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class SameClaim:
    mean: np.ndarray
    std: np.ndarray
    weights: np.ndarray
    bias: float
    auto: float
    related: float
    provenance: dict = field(default_factory=dict)
    # `auto` for a message the claim gate turned away: its match must be surer to be checked at all.
    unclaimed: float = 0.0

    @classmethod
    def from_dict(cls, data: dict) -> SameClaim:
        if tuple(data["features"]) != FEATURES or tuple(data.get("vector_parts", ())) not in ((), VECTOR_PARTS):
            raise ValueError("same_claim.json was trained on other features; rerun python -m training.same_claim")
        thr = data["thresholds"]
        return cls(*standardised_weights(data), float(thr["auto"]), float(thr["related"]),
                   dict(data.get("provenance", {})), float(thr.get("unclaimed", thr["auto"])))

    @classmethod
    def load(cls, path: Path = DEFAULT_PATH) -> SameClaim:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    def score(self, rows: np.ndarray) -> np.ndarray:
        """`rows` from `decision_features`; a model trained without the vector parts reads the scalars only."""
        rows = rows[:, :len(self.weights)]
        if rows.shape[1] != len(self.weights):
            raise ValueError("same-claim rows lack the e5 vectors the model was trained on")
        return probability(rows, self.mean, self.std, self.weights, self.bias)

    def tier(self, p: float) -> MatchTier:
        return "auto" if p >= self.auto else "suggest" if p >= self.related else "none"


@lru_cache(maxsize=1)
def default_same_claim() -> SameClaim | None:
    """The shipped model, or None before one was trained or while it is being retrained for new features
    (training/same_claim.py builds its rows with the re-rankers alone)."""
    if not DEFAULT_PATH.exists():
        return None
    try:
        return SameClaim.load()
    except ValueError as exc:
        log.warning("%s: matching falls back to the re-rankers' tiers", exc)
        return None
