"""The offline same-story stream detector and the metrics the story models are fitted and measured with.

`StoryDetector` takes a stream of messages in time order. Each new message is compared with the stored
messages of other accounts inside a time window (default 7 days); a pair is linked when the story models
of core/corroboration/story_model.py score it past their threshold, and linked messages are merged with
union-find, so A~B and B~C puts A, B and C in one story. A message that links to nothing may still join
its best candidate above the lower WEAK_THRESHOLD when that candidate is alone in its story. The live
counterpart over the persistent store is core/corroboration/corroborator.py; both read the same
`pair_features` and models, so what is measured here is what runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from core.corroboration.story_model import (
    ALL_FEATURES,
    CROSS,
    DEFAULT_WINDOW_DAYS,
    ENGLISH,
    FEATURES,
    StoryModel,
    _alias_terms,
    _sigmoid,
    common_terms,
    pair_features,
    route,
    route_extra,
    route_needs,
    route_probs,
    story_entities,
    story_models,
    story_terms,
    transliterate,
    weak_order,
)
from core.corroboration.story_numbers import story_numbers
from core.textscript import latin_script

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
