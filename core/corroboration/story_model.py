"""Same-story detection for "also reported by": which messages from *other* chats/channels carry the
same story as this one.

`StoryDetector` takes a stream of messages in time order. Each new message is compared with the stored
messages of other accounts inside a time window (default 7 days); a pair is linked when a small
logistic same-story score passes a threshold, and linked messages are merged with union-find, so
A~B and B~C puts A, B and C in one story. A message that links to nothing may still join its best
candidate above a lower WEAK_THRESHOLD when that candidate is alone in its story (see the constant).

Score features (all in [0, 1]):
  cos      cosine of the two L2-normalised embeddings
  ent      Jaccard overlap of alias-normalised entities (names, places, handles, hashtags)
  rare     IDF-weighted Jaccard overlap of content terms (IDF from the messages seen so far)
  shared   how many shared terms are not among the most frequent words of en/ru/uk (COMMON_TERMS_FILE),
           capped at SHARED_CAP and scaled to [0, 1]
`pair_features` computes them for both StoryDetector and the live Corroborator.

Weights and threshold were fitted on the CLEF-2020 CheckThat! Task 2 *train* tweets only (pairs =
tweets sharing a vclaim_id); dev was only reported. See docs/corroboration.md and
evals/corroboration_eval.py to reproduce.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.matching.features import entities as _raw_entities
from core.matching.features import latin_script
from core.encoders.npy_files import read_arrays
from core.encoders.sparse import term_ids
from core.corroboration.story_numbers import NUMBER_FEATURES, number_features, story_numbers


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

# --- signatures ------------------------------------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_SIGNATURE = re.compile(
    r"[—–-]\s*(?P<name>[^—–\n]{0,80}?)\s*\(@(?P<handle>\w+)\)\s*"
    r"(?:(?P<month>" + "|".join(_MONTHS) + r")\s+(?P<day>\d{1,2}),\s+(?P<year>\d{4}))?\s*$"
)


@dataclass(frozen=True)
class Signature:
    name: str
    handle: str  # lower-cased, without "@"
    time: datetime | None


def parse_signature(text: str) -> Signature | None:
    """The trailing "— Name (@handle) Month D, YYYY" of a pasted tweet, or None."""
    m = _SIGNATURE.search(text or "")
    if not m:
        return None
    when = None
    if m.group("month"):
        try:
            when = datetime(int(m.group("year")), _MONTHS.index(m.group("month")) + 1, int(m.group("day")))
        except ValueError:
            when = None
    return Signature(m.group("name").strip(), m.group("handle").lower(), when)


def strip_signature(text: str) -> str:
    m = _SIGNATURE.search(text or "")
    return text[: m.start()].rstrip() if m else text


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


# --- union-find ------------------------------------------------------------------------------------


class UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def make(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, i: int) -> int:
        p = self.parent
        root = i
        while p[root] != root:
            root = p[root]
        while p[i] != root:
            p[i], i = root, p[i]
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if ra > rb:  # the older message stays the root: cluster ids are stable
            ra, rb = rb, ra
        self.parent[rb] = ra
        return ra


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
    StoryDetector and the live Corroborator."""
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


class StoryDetector:
    """Streaming same-story clustering. Messages must arrive in time order (messages with time None are
    compared with everything, i.e. treated as inside the window)."""

    def __init__(self, model: StoryModel | None = None, window_days: float = DEFAULT_WINDOW_DAYS,
                 dim: int = 384, capacity: int = 1024, record_pairs: bool = False,
                 same_account: bool = False, others: Sequence[StoryModel] | None = None, multi_dim: int = 0,
                 common: frozenset[int] | None = None):
        self.model = model or StoryModel()
        self.common = common_terms() if common is None else common  # the `shared` feature's common words
        # With multilingual vectors (multi_dim > 0: every add() then brings one) a pair with a non-Latin
        # side goes to `others` (CROSS, NATIVE models) on them; without, `model` judges every pair.
        self.models = (self.model, *(others or story_models()[1:]))
        self._multi = np.zeros((capacity, multi_dim), dtype=np.float32) if multi_dim else None
        self._latin = np.ones(capacity, dtype=bool)
        self.window = float(window_days) * 86400.0
        self.same_account = same_account  # evaluation only: also link messages of one account
        self._vecs = np.zeros((capacity, dim), dtype=np.float32)
        self._times = np.full(capacity, np.nan)
        self._accounts = np.zeros(capacity, dtype=np.int64)
        self._account_ids: dict[str, int] = {}
        self._ents: list[frozenset[str]] = []
        self._terms: list[frozenset[int]] = []
        self._states: list[np.ndarray | None] = []  # projected e5 token states (routes reading ALIGN_FEATURES)
        self._nums: list[frozenset[str]] = []
        self._df: dict[int, int] = {}
        self.ids: list[str] = []
        self._index: dict[str, int] = {}
        self.uf = UnionFind()
        self._members: dict[int, list[int]] = {}  # story root -> its messages (only for stories of 2+)
        self.n = 0
        # (i, j, features) for every scored pair, for fitting / threshold sweeps
        self.record_pairs = record_pairs
        self.pairs: list[tuple[int, int, np.ndarray]] = []

    # -- public -------------------------------------------------------------------------------------
    def add(self, message_id: str, account: str, time: datetime | float | None, text: str,
            vector: np.ndarray, multi: np.ndarray | None = None, states: np.ndarray | None = None) -> str:
        """Store a message, link it to same-story messages (of other accounts within the window, or any
        earlier one at the strict threshold), return its cluster id (the message id of the oldest
        message of the story)."""
        i = self._store(message_id, account, time, text, vector, multi, states)
        cand, inside = self._candidates(i)
        if cand.size:
            routes = self.routes(i, cand)  # once per message: the features and the decision both read them
            feats = self.features(i, cand, routes)
            if self.record_pairs:  # the pairs the models are fitted on: other accounts, inside the window
                self.pairs.extend((int(j), i, f) for j, f, ok in zip(cand, feats, inside) if ok)
            probs = route_probs(self.models, routes, feats)
            margins = probs - route_needs(self.models, routes, inside)
            keep = cand[margins >= 0]
            if not keep.size:
                keep = next((cand[k:k + 1] for k in weak_order(self.models, routes, probs, margins, inside)
                             if self._alone(int(cand[k]), i)), keep)
            for j in keep:
                self._union(int(j), i)
        return self.cluster_of(message_id)

    def cluster_of(self, message_id: str) -> str:
        return self.ids[self.uf.find(self._index[message_id])]

    def same_story(self, message_id: str) -> list[str]:
        """Other messages in the story of `message_id` (the "also reported by" list)."""
        root = self.uf.find(self._index[message_id])
        return [m for k, m in enumerate(self.ids) if m != message_id and self.uf.find(k) == root]

    def clusters(self) -> dict[str, str]:
        return {m: self.ids[self.uf.find(k)] for k, m in enumerate(self.ids)}

    def _union(self, a: int, b: int) -> None:
        ra, rb = self.uf.find(a), self.uf.find(b)
        if ra != rb:
            members = self._members.pop(ra, [ra]) + self._members.pop(rb, [rb])
            self._members[self.uf.union(ra, rb)] = members

    def _alone(self, j: int, i: int) -> bool:
        """No other message of j's story within the window of message i (as the live path asks its
        vector store: members by story and time range)."""
        t = self._times[i]
        for m in self._members.get(self.uf.find(j), ()):
            if m != j and (math.isnan(t) or math.isnan(self._times[m]) or abs(t - self._times[m]) <= self.window):
                return False
        return True

    def routes(self, i: int, cand: np.ndarray) -> np.ndarray:
        """The route (ENGLISH, CROSS, NATIVE) of each pair (i, j)."""
        if self._multi is None:
            return np.full(len(cand), ENGLISH)
        return route(self._latin[cand], bool(self._latin[i]))

    # -- internals ----------------------------------------------------------------------------------
    def _store(self, message_id: str, account: str, time, text: str, vector: np.ndarray,
               multi: np.ndarray | None = None, states: np.ndarray | None = None) -> int:
        if message_id in self._index:
            raise ValueError(f"duplicate message id {message_id!r}")
        if self.n == len(self._times):
            cap = 2 * len(self._times)
            self._vecs = np.resize(self._vecs, (cap, self._vecs.shape[1]))
            self._times = np.concatenate([self._times, np.full(cap - len(self._times), np.nan)])
            self._accounts = np.resize(self._accounts, cap)
            self._latin = np.resize(self._latin, cap)
            if self._multi is not None:
                self._multi = np.resize(self._multi, (cap, self._multi.shape[1]))
        i = self.n
        v = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(v))
        self._vecs[i] = v / norm if norm > 0 else v
        self._latin[i] = latin_script(text)
        if self._multi is not None:
            if multi is None:
                raise ValueError("this detector judges pairs across scripts: add() needs the multilingual vector")
            m = np.asarray(multi, dtype=np.float32).ravel()
            self._multi[i] = m / max(float(np.linalg.norm(m)), 1e-12)
        self._times[i] = _seconds(time)
        self._accounts[i] = self._account_ids.setdefault(account, len(self._account_ids))
        self._ents.append(story_entities(text))
        self._states.append(states)
        self._nums.append(story_numbers(text))
        t = story_terms(_alias_terms(transliterate(text)))
        self._terms.append(t)
        for tid in t:
            self._df[tid] = self._df.get(tid, 0) + 1
        self.ids.append(message_id)
        self._index[message_id] = i
        self.uf.make()
        self.n += 1
        return i

    def _candidates(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Earlier messages worth scoring, and which of them are inside (another account's, within the
        window); the others are candidates only where the English model has a strict threshold."""
        n = i  # earlier messages only
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
        inside = (np.ones(n, dtype=bool) if self.same_account else self._accounts[:n] != self._accounts[i])
        t = self._times[i]
        if not math.isnan(t):
            times = self._times[:n]
            inside &= np.isnan(times) | (np.abs(t - times) <= self.window)
        # one contiguous mat-vec over all stored rows (no fancy-index copy of the matrix), then mask
        english = (self._vecs[:n] @ self._vecs[i]) >= self.model.cos_floor
        if self._multi is None:
            ok = english if self.model.strict_threshold is not None else english & inside
        else:
            routes = route(self._latin[:n], bool(self._latin[i]))
            multi = (self._multi[:n] @ self._multi[i]) >= self.models[CROSS].cos_floor
            strict = routes == ENGLISH if self.model.strict_threshold is not None else np.zeros(n, dtype=bool)
            ok = np.where(routes == ENGLISH, english, multi) & (inside | strict)
        cand = np.flatnonzero(ok)
        return cand, inside[cand]

    def features(self, i: int, cand: np.ndarray, routes: np.ndarray | None = None) -> np.ndarray:
        cos = self._vecs[cand] @ self._vecs[i]
        if self._multi is not None:
            routes = self.routes(i, cand) if routes is None else routes
            cos = np.where(routes == ENGLISH, cos, self._multi[cand] @ self._multi[i])
        base = pair_features(self._ents[i], self._terms[i], [(self._ents[j], self._terms[j]) for j in cand],
                             cos, self.n, self._df, self.common)
        out = np.zeros((len(cand), len(ALL_FEATURES)))
        out[:, :len(FEATURES)] = base
        if self._multi is not None and routes is not None:
            other = np.flatnonzero(routes != ENGLISH)  # only the CROSS and NATIVE models read the extra columns
            if other.size:
                out[other, len(FEATURES):] = route_extra(
                    self._states[i], self._nums[i], [(self._states[j], self._nums[j]) for j in cand[other]])
        return out


def _seconds(time: datetime | float | None) -> float:
    if time is None:
        return math.nan
    if isinstance(time, datetime):
        return time.timestamp() if time.tzinfo else (time - datetime(1970, 1, 1)).total_seconds()
    return float(time)


def pair_score(text_a: str, vec_a: np.ndarray, text_b: str, vec_b: np.ndarray,
               model: StoryModel | None = None) -> float:
    """Same-story probability of two messages in isolation (IDF from just these two)."""
    d = StoryDetector(model=model, dim=len(np.ravel(vec_a)), capacity=2)
    d._store("a", "a", None, text_a, vec_a)
    d._store("b", "b", None, text_b, vec_b)
    return float(d.model.score(d.features(1, np.array([0])))[0])


# --- metrics and fitting ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PairScores:
    precision: float
    recall: float
    f1: float
    predicted_pairs: int
    gold_pairs: int
    true_pairs: int


def pairwise_scores(clusters: Mapping[str, str], gold: Mapping[str, Iterable[str]]) -> PairScores:
    """Pairwise P/R/F1: gold pairs = messages sharing a label (vclaim id), predicted pairs = messages
    in the same cluster. Only messages with gold labels count."""
    members = [m for m in gold if m in clusters]
    by_label: dict[str, list[str]] = {}
    for m in members:
        for lab in gold[m]:
            by_label.setdefault(lab, []).append(m)
    gold_pairs = {tuple(sorted((a, b))) for ms in by_label.values() for x, a in enumerate(ms) for b in ms[x + 1:]}
    sizes: dict[str, int] = {}
    for m in members:
        sizes[clusters[m]] = sizes.get(clusters[m], 0) + 1
    predicted = sum(s * (s - 1) // 2 for s in sizes.values())
    true = sum(1 for a, b in gold_pairs if clusters[a] == clusters[b])
    p = true / predicted if predicted else 0.0
    r = true / len(gold_pairs) if gold_pairs else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return PairScores(p, r, f, predicted, len(gold_pairs), true)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-4, iters: int = 100,
                 weights: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Newton-IRLS logistic regression with a small L2 penalty (bias unpenalised); `weights`: each row's
    weight (default 1)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    sw = sw * len(y) / sw.sum()
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = _sigmoid(xb @ w)
        g = xb.T @ (sw * (p - y)) / len(y) + reg * w
        h = (xb * (sw * p * (1 - p))[:, None]).T @ xb / len(y) + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def clusters_at(ids: Sequence[str], pairs: Sequence[tuple[int, int]], scores: np.ndarray,
                threshold: float) -> dict[str, str]:
    uf = UnionFind()
    for _ in ids:
        uf.make()
    for (a, b), s in zip(pairs, scores):
        if s >= threshold:
            uf.union(a, b)
    return {m: ids[uf.find(k)] for k, m in enumerate(ids)}


def best_threshold(ids: Sequence[str], pairs: Sequence[tuple[int, int]], scores: np.ndarray,
                   gold: Mapping[str, Iterable[str]], grid: Iterable[float] | None = None) -> tuple[float, PairScores]:
    if grid is None:  # every distinct score level that could change the clustering (capped at 400)
        u = np.unique(np.asarray(scores, dtype=np.float64))
        grid = u if len(u) <= 400 else np.quantile(u, np.linspace(0, 1, 400))
    best = (0.5, PairScores(0, 0, 0, 0, 0, 0))
    for t in grid:
        s = pairwise_scores(clusters_at(ids, pairs, scores, float(t)), gold)
        if s.f1 > best[1].f1:
            best = (float(t), s)
    return best
