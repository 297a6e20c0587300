"""The same-story model for "also reported by": whether two messages from different chats/channels carry
the same story, as features and fitted logistic models (an English one and two across/inside non-Latin
scripts, chosen per pair by `route`).

A pair links when its route's model scores it past that model's threshold (a WEAK_THRESHOLD and a
STRICT_THRESHOLD cover the cases the constants describe). The live store that applies it is
core/corroboration/corroborator.py; the offline stream detector the models are fitted and measured with
is evals/story_detector.py.

Score features (all in [0, 1]):
  cos      cosine of the two L2-normalised embeddings
  ent      Jaccard overlap of alias-normalised entities (names, places, handles, hashtags)
  rare     IDF-weighted Jaccard overlap of content terms (IDF from the messages seen so far)
  shared   how many shared terms are not among the most frequent words of en/ru/uk (COMMON_TERMS_FILE),
           capped at SHARED_CAP and scaled to [0, 1]
`pair_features` computes them for both the offline detector and the live Corroborator.

Weights and threshold were fitted on the CLEF-2020 CheckThat! Task 2 *train* tweets only (pairs =
tweets sharing a vclaim_id); dev was only reported. See docs/corroboration.md and
evals/corroboration_eval.py to reproduce.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.matching.features import entities as _raw_entities
from core.encoders.npy_files import read_arrays
from core.encoders.sparse import term_ids
from core.corroboration.story_numbers import NUMBER_FEATURES, number_features


# --- fitted constants ----------------------------------------------------------------------------
# The English model: a Newton logistic regression (L2 1e-4) over FEATURES, fitted on CLEF-2020 Task 2 train
# only (pairs of other accounts within the window and above COS_FLOOR) by `evals.corroboration_eval.fit`;
# THRESHOLD maximises the pairwise F1 of the union-find clustering on train. Fit and cross-validation
# figures: docs/decisions/2026-11-29-notes-from-code.md; dev: docs/corroboration.md.
FEATURES: tuple[str, ...] = ("cos", "ent", "rare", "shared")
# What the CROSS and NATIVE routes read beyond FEATURES (columns after them; the English model's weights
# stop at FEATURES, so it never reads them): how well the two posts' e5 token states align (each post's
# mean best cosine into the other's, the lower and the higher of the two; core/encoders/token_align.py) and whether
# their numbers meet (core/corroboration/story_numbers.py). Figures: docs/decisions/2026-11-29-stories-across-languages.md.
ALIGN_FEATURES: tuple[str, ...] = ("tok_lo", "tok_hi", "tok_worst")
# tok_worst: the lower of the two posts' first quartile of their tokens' best matches, how well the
# post's worst-met words are met (a new event's words meet nothing). Quartile 0.1 / 0.25 / 0.5: mean train
# F1 of the two corpora .823 / .826 / .827, story-set dev .736 / .745 / .736 (0.25 was the one tried first).
WORST_QUANTILE = 0.25
ROUTE_EXTRA: tuple[str, ...] = ALIGN_FEATURES + NUMBER_FEATURES
ALL_FEATURES: tuple[str, ...] = FEATURES + ROUTE_EXTRA
WEIGHTS: tuple[float, ...] = (11.6071, 2.6237, 11.5905, 5.1260)
BIAS: float = -8.9010
THRESHOLD: float = 0.4064
# A weaker link, for English pairs only: a pair scoring in [WEAK_THRESHOLD, THRESHOLD) links when the
# new message links to nothing at THRESHOLD and the other message is its story's only one within the
# window (the best such pair, one only). Two lone messages that are each other's best match are more
# often one story than a weak pair chained into a grown story, which is where a plain lower threshold
# lost its precision. Cross-validated on train grouped by claim (evals/story_linking_cv.py, 5x3 folds;
# docs/digest.md), on three features at 0.40 (0.71 of their threshold 0.5667): held-out P/R/F1 on
# test-sized streams .984/.646/.780 -> .972/.710/.820, inside the whole train stream
# .722/.649/.684 -> .709/.699/.704; 0.30 linked two different lone stories of tests/test_tracking.py's
# channels (a Lviv train outage and a Kharkiv metro closure). With `shared`: 0.8 of the threshold
# (0.7 / 0.8 / 0.9 / none: test-sized .846 / .844 / .843 / .837, whole stream .705 / .713 / .720 / .722;
# 0.8 sits between the two settings: test-sized streams favour weak links, the whole stream none).
WEAK_THRESHOLD: float = 0.325
# A stricter link, English route only, for the pairs the window and the other-account rule leave out:
# the same account posting the story again, or the story coming back after the window. Of train's 193
# gold pairs, 21 are one account's and 18 are > 7 days apart (their cosines are like the in-window
# pairs': median .66 / .59 vs .61), so no feature could link them while they were not candidates: recall
# was capped near .78. Such a pair links at a score >= STRICT_THRESHOLD. Cross-validated on train grouped
# by claim (evals/story_linking_cv.py --strict, 5x3 folds, the shipped procedure per fold, the strict
# threshold picked per fold from a grid on the training folds: 0.8 in 8 of 15 folds): test-sized streams
# .967/.750/.844 -> .961/.857/.906, inside the whole train stream .684/.746/.713 -> .672/.857/.753
# (fixed 0.7 / 0.8 / 0.9: test-sized .911 / .909 / .897, whole stream .663 / .751 / .761).
STRICT_THRESHOLD: float = 0.8
# The `shared` feature: shared terms outside the 40,000 most frequent words of each of en/ru/uk
# (training/story_common_terms.py writes the ids), more than SHARED_CAP counting as SHARED_CAP. A rarity
# judged by the store's own document frequencies instead (<= 3 of 800 messages) cross-validated as
# well, but in tests/test_tracking.py's small store of channel news ordinary words ("power",
# "trains") count as rare and the Lviv train outage joined the Lviv tram-depot flood story.
COMMON_TERMS_FILE = Path(__file__).resolve().parents[1] / "data" / "story_common_terms.npz"
SHARED_CAP = 5
COS_FLOOR: float = 0.35  # pairs below this cosine are never scored (cheap pre-filter; all gold
# train pairs linked at the threshold have cosine well above it)
DEFAULT_WINDOW_DAYS: float = 7.0
# A pair with a non-Latin side is judged on the multilingual model's cosine (e5 "query:" vectors):
# MiniLM reads no Russian (Tatoeba RU->EN 0.2 %), and the English model on MiniLM linked Russian
# translations of the train tweets at pairwise precision 0.010. Two more models, one for pairs across
# scripts (Russian/Ukrainian and English), one for pairs both in one non-Latin script (Russian and
# Ukrainian), read cos, ent, rare and the ROUTE_EXTRA columns (token alignment, numbers).
# Fitted by training/story_models.py on one train stream: the CLEF-2020 train tweets plus our
# Russian translations of them posted by other accounts (eval/clef2020-ru), and eval/stories/train.jsonl
# (our ru/uk/en news posts by event, with other events of the same city or person); NATIVE on the
# translations and the story set's Cyrillic posts. Newton logistic (L2 1e-4); each threshold maximises
# the mean of the two corpora's train pairwise F1. On cos, ent and rare alone the CROSS route linked any
# two posts about one city ("В Киеве открыли новую станцию метро" with a Kyiv curfew, probability 0.996
# on NATIVE) and not the curfew itself across languages (0.13); dev figures and the ablation:
# docs/decisions/2026-11-29-stories-across-languages.md.
# Signatures ("— Name (@handle) date") are stripped from both sides before fitting: a translation keeps
# its tweet's handle, which no real pair of posts shares (kept, the cross model leaned on that overlap).
CROSS_WEIGHTS: tuple[float, ...] = (7.8983, 2.4870, 1.9813, 0.0, 8.3270, 8.6054, 9.7207, 2.7893, -1.0508)
CROSS_BIAS: float = -27.2053
CROSS_THRESHOLD: float = 0.3023
NATIVE_WEIGHTS: tuple[float, ...] = (5.0471, 2.0815, 3.0930, 0.0, 5.3160, 6.0333, 5.7632, 2.4675, -1.2076)
NATIVE_BIAS: float = -20.1599
NATIVE_THRESHOLD: float = 0.3217
ROUTE_FEATURES = 3  # the FEATURES CROSS and NATIVE read (cos, ent, rare: `shared` was fitted in English)
# textclean steps applied before embedding/terms; measured on train (docs/corroboration.md): the
# claim-matching defaults help (.761 -> .773), also stripping the signature hurts (-> .749).
TEXT_STEPS: tuple[str, ...] = ("forward_header", "pic_links", "urls", "hashtag_words")

# --- entities with aliases -----------------------------------------------------------------------

_CYR = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y",
    "ь": "", "э": "e", "ю": "yu", "я": "ya", "і": "i", "ї": "yi", "є": "ye", "ґ": "g",
}
_CYR_TABLE = {ord(k): v for k, v in _CYR.items()} | {ord(k.upper()): v.capitalize() for k, v in _CYR.items()}

# canonical spelling for common variants (after transliteration and lower-casing)
ALIASES: dict[str, str] = {
    "kiev": "kyiv", "kyiv": "kyiv", "kiyiv": "kyiv", "kiew": "kyiv", "kijev": "kyiv",
    "moskva": "moscow", "moskau": "moscow",
    "kharkov": "kharkiv", "odessa": "odesa", "lvov": "lviv", "nikolaev": "mykolaiv",
    "mykolayiv": "mykolaiv", "zaporozhye": "zaporizhzhia", "zaporozhe": "zaporizhzhia",
    "dnepr": "dnipro", "chernigov": "chernihiv", "rossiya": "russia", "rossii": "russia",
    "ukraina": "ukraine", "ukrainy": "ukraine", "ukrayina": "ukraine",
    "putina": "putin", "zelensky": "zelenskyy", "zelenskiy": "zelenskyy", "zelenskii": "zelenskyy",
    "zelenskyi": "zelenskyy", "zelenskogo": "zelenskyy", "zelenskii's": "zelenskyy",
    "usa": "us", "u.s": "us", "america": "us", "uk": "britain", "u.k": "britain",
    "covid19": "covid", "covid-19": "covid", "coronavirus": "covid", "sars-cov-2": "covid",
    "trump's": "trump", "realdonaldtrump": "trump", "potus": "trump",
}


def transliterate(text: str) -> str:
    """Cyrillic -> Latin (simple scientific-ish map); other characters unchanged."""
    return text.translate(_CYR_TABLE)


def normalise_entity(word: str) -> str:
    w = word.lower().strip(".'’")
    if not w.isascii():
        w = unicodedata.normalize("NFKD", w)
        w = "".join(ch for ch in w if not unicodedata.combining(ch))
    return ALIASES.get(w, w)


def story_entities(text: str) -> frozenset[str]:
    """`core.matching.features.entities` on the transliterated text, alias-normalised."""
    return frozenset(normalise_entity(e) for e in _raw_entities(transliterate(text or "")))


def story_terms(text: str) -> frozenset[int]:
    return frozenset(term_ids(transliterate(text or "")))


def _alias_terms(text: str) -> str:
    """Apply the alias table word by word so term overlap also sees Kiev == Kyiv."""
    return re.sub(r"[A-Za-z][\w'-]*", lambda m: ALIASES.get(m.group(0).lower(), m.group(0)), text)


def prepare_text(text: str, steps: Sequence[str] | None = None) -> str:
    """Text used for embedding and terms: optional textclean steps, signature removed when the
    `signature` step is named (kept otherwise)."""
    from core.textclean import clean_query

    steps = TEXT_STEPS if steps is None else tuple(steps)
    return clean_query(text, steps=list(steps))


# --- scoring ---------------------------------------------------------------------------------------


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


@dataclass
class StoryModel:
    weights: tuple[float, ...] = WEIGHTS
    bias: float = BIAS
    threshold: float = THRESHOLD
    cos_floor: float = COS_FLOOR
    weak_threshold: float | None = WEAK_THRESHOLD  # None: no weak links (fitted and probe models)
    # None: only other accounts within the window (CROSS and NATIVE routes: not measured across scripts)
    strict_threshold: float | None = STRICT_THRESHOLD

    def score(self, feats: np.ndarray) -> np.ndarray:
        """Probabilities of rows of features (ALL_FEATURES or FEATURES; a model reads its weights' columns)."""
        w = np.asarray(self.weights, dtype=np.float64)
        return _sigmoid(feats[:, :len(w)] @ w + self.bias)


ENGLISH, CROSS, NATIVE = 0, 1, 2  # routes: both Latin / across scripts / both one non-Latin script


def story_models() -> tuple[StoryModel, StoryModel, StoryModel]:
    """The model of each route, indexed by ENGLISH, CROSS, NATIVE."""
    return (StoryModel(),
            StoryModel(CROSS_WEIGHTS, CROSS_BIAS, CROSS_THRESHOLD, weak_threshold=None, strict_threshold=None),
            StoryModel(NATIVE_WEIGHTS, NATIVE_BIAS, NATIVE_THRESHOLD, weak_threshold=None, strict_threshold=None))


def route(a_latin: np.ndarray | bool, b_latin: np.ndarray | bool) -> np.ndarray:
    """ENGLISH when both sides are in a Latin script, CROSS when one is, NATIVE when neither."""
    a, b = np.asarray(a_latin, dtype=bool), np.asarray(b_latin, dtype=bool)
    return np.where(a & b, ENGLISH, np.where(a | b, CROSS, NATIVE))


def route_probs(models: Sequence[StoryModel], routes: np.ndarray, feats: np.ndarray) -> np.ndarray:
    """Each pair's same-story probability by its route's model."""
    out = np.zeros(len(routes))
    for r, m in enumerate(models):
        sel = routes == r
        if sel.any():
            out[sel] = m.score(feats[sel])
    return out


def route_needs(models: Sequence[StoryModel], routes: np.ndarray, inside: np.ndarray | None = None) -> np.ndarray:
    """The probability each pair needs to link: its route's threshold, or for a pair with `inside` False
    (one account, or outside the window) its route's strict threshold (2, never, where there is none)."""
    plain = np.array([m.threshold for m in models])[routes]
    if inside is None:
        return plain
    strict = np.array([2.0 if m.strict_threshold is None else m.strict_threshold for m in models])[routes]
    return np.where(inside, plain, strict)


def route_scores(models: Sequence[StoryModel], routes: np.ndarray, feats: np.ndarray,
                 inside: np.ndarray | None = None) -> np.ndarray:
    """Each pair's margin over what it needs (`route_needs`): linked when >= 0."""
    return route_probs(models, routes, feats) - route_needs(models, routes, inside)


def weak_order(models: Sequence[StoryModel], routes: np.ndarray, probs: np.ndarray,
               margins: np.ndarray, inside: np.ndarray | None = None) -> np.ndarray:
    """Indices of the pairs in their route's weak band (below the threshold, at or above the weak
    threshold), best first; pairs inside the window of other accounts only. Only when no pair links
    (margins all < 0) is the first of them whose other message is alone in its story within the window
    linked, and no other."""
    weak_at = np.array([2.0 if m.weak_threshold is None else m.weak_threshold for m in models])[routes]
    weak = probs >= weak_at
    if inside is not None:
        weak &= inside
    idx = np.flatnonzero(weak & (margins < 0))
    return idx[np.argsort(-margins[idx], kind="stable")]


@lru_cache(maxsize=1)
def common_terms() -> frozenset[int]:
    """The term ids of common words (COMMON_TERMS_FILE); read once, immutable."""
    return frozenset(read_arrays(COMMON_TERMS_FILE, ("ids",))["ids"].tolist())


def pair_features(ents: frozenset[str], terms: frozenset[int],
                  others: Sequence[tuple[frozenset[str], frozenset[int]]], cos: np.ndarray,
                  n: int, df: Mapping[int, int], common: frozenset[int]) -> np.ndarray:
    """The FEATURES of a message (its entities and terms) against each of `others` (entities, terms),
    with `cos` the pairs' cosines, `n`, `df` the document frequencies of the messages seen so far (the
    message itself counted) and `common` the common words' term ids. The one feature loop of
    the offline detector (evals/story_detector.py) and the live Corroborator."""
    out = np.zeros((len(others), len(FEATURES)), dtype=np.float64)
    out[:, 0] = cos
    # Each distinct term's weight once per call (candidates of one story share most of their terms),
    # then sums by dict lookups: a Python call per term was ~40 % of a 16-candidate lookup's scoring.
    idf = {t: math.log(1.0 + n / df.get(t, 1)) for t in terms.union(*(tj for _, tj in others))}
    weight = idf.__getitem__
    wsum = sum(map(weight, terms))
    for r, (ej, tj) in enumerate(others):
        out[r, 1] = jaccard(ents, ej)
        shared = terms & tj
        if shared:
            num = sum(map(weight, shared))
            den = wsum + sum(map(weight, tj - terms))
            out[r, 2] = num / den if den > 0 else 0.0
            out[r, 3] = min(len(shared - common), SHARED_CAP) / SHARED_CAP
    return out


def route_extra(states: np.ndarray | None, nums: frozenset[str],
                others: Sequence[tuple[np.ndarray | None, frozenset[str]]]) -> np.ndarray:
    """The ROUTE_EXTRA columns of a message (its projected e5 token states, its numbers) against each of
    `others` (states, numbers); a side without states aligns 0. One product against every other post's
    states at once, reduced per post (as `core.encoders.token_align.alignment_rp`): 64 posts of ~44 tokens in ~1 ms."""
    out = np.zeros((len(others), len(ROUTE_EXTRA)), dtype=np.float64)
    if not len(others):
        return out
    have = [r for r, (s, _) in enumerate(others) if s is not None and len(s)]
    if states is not None and len(states) and have:
        docs = [np.asarray(others[r][0], dtype=np.float32) for r in have]
        lens = np.array([len(d) for d in docs])
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        sims = np.asarray(states, dtype=np.float32) @ np.concatenate(docs).T
        fwd = np.maximum.reduceat(sims, starts, axis=1)  # each of the message's tokens' best, per post
        back = sims.max(axis=0)  # each of the other posts' tokens' best in the message
        rp = np.stack([fwd.mean(axis=0), np.add.reduceat(back, starts) / lens], axis=1)
        worst_back = [_quantile(back[a:a + n], WORST_QUANTILE) for a, n in zip(starts, lens)]
        out[have, 0], out[have, 1] = rp.min(axis=1), rp.max(axis=1)
        out[have, 2] = np.minimum(np.quantile(fwd, WORST_QUANTILE, axis=0), worst_back)
    out[:, len(ALIGN_FEATURES):] = number_features(nums, [n for _, n in others])
    return out


def _quantile(x: np.ndarray, q: float) -> float:
    """`np.quantile(x, q)` (linear), without its overhead per call."""
    v = np.sort(x)
    pos = q * (len(v) - 1)
    lo = int(pos)
    return float(v[lo] + (pos - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo]))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if inter else 0.0
