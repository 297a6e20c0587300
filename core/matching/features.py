"""Features for re-ranking fact-check candidates against a query ("has this been fact-checked?").

Pure functions over what production already has at match time:

- the query: raw text, cleaned text (`core.textclean.clean_query`) and its dense vector
  (one embedding of the cleaned text);
- each candidate fact-check: claim text, title text, and the cosines of the query's vectors with its
  stored ones ("claim" and "title"), scored by Qdrant with the candidates (`CandidateCosines`);
- the candidate's 1-based rank in each candidate list (dense-claim, dense-title, sparse,
  dense-multi), 0 if it was not in that list;
- the multilingual vectors (core/encoders/multilingual.py): one e5 query vector of the message and one e5
  passage vector per fact-check (claim + headline), the only features that mean anything when the
  message and the fact-check are in different languages or not in English;
- a second multilingual model's vectors (core/encoders/use_encoder.py, USE): one per message, one per
  fact-check (claim + headline), read as features only;
- corpus term statistics (`CorpusStats`) for BM25, maintained incrementally as fact-checks are
  ingested or removed.

Everything is vectorised over candidates; the only per-candidate Python work is tokenising two short
texts. No embedding calls happen here.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from core.textscript import latin_script
from core.matching.crosslingual_terms import QueryScorer, TermGroups, doc_groups, lazy_lexicon, term_groups
from core.encoders.sparse import BM25_B, BM25_K1, term_id, term_ids, terms

LISTS: tuple[str, ...] = ("dense_claim", "dense_title", "sparse", "dense_multi")
# A fifth list, searched only for a message with Cyrillic words: its English gloss (core/matching/gloss.py) in
# the MiniLM claim index. Kept out of LISTS so `rrf`, which the English re-ranker reads, is unchanged.
GLOSS_LIST = "dense_gloss"
RRF_K = 60.0

FEATURE_NAMES: tuple[str, ...] = (
    "cos_claim",          # query . claim vector
    "cos_title",          # query . title vector
    "cos_doc",            # query . normalise(claim + title) vectors
    "cos_claim_gap",      # cos_claim minus the best cos_claim among this query's candidates
    "cos_title_gap",
    "cos_doc_gap",
    "bm25_claim",         # BM25 of the claim field / sum of the query's IDF (fraction of query info)
    "bm25_title",
    "bm25_doc",
    "bm25_doc_rel",       # bm25_doc / best bm25_doc among candidates
    "cover_claim",        # IDF-weighted share of the claim's terms that appear in the query
    "cover_title",
    "jaccard",            # term-set Jaccard of query and claim + title
    "entity_cover",       # share of the candidate's capitalised words / handles found in the query
    "number_match",       # share of the candidate's numbers found in the query
    "number_miss",        # candidate has numbers and none is in the query
    "len_ratio",          # log((query terms + 1) / (doc terms + 1))
    "rr_dense_claim",     # 1 / rank in each candidate list (0 when absent)
    "rr_dense_title",
    "rr_sparse",
    "rrf",                # reciprocal-rank fusion over the three lists, scaled so rank 1 in all = 1
    "cos_doc_margin",     # cos_doc minus the best cos_doc among the *other* candidates (> 0 only for a clear winner)
    "bm25_doc_margin",    # same for bm25_doc
    "cos_multi",          # multilingual query . multilingual passage (claim + title) vector
    "cos_multi_gap",      # cos_multi minus the best cos_multi among this query's candidates
    "cos_multi_margin",   # cos_multi minus the best cos_multi among the other candidates
    "rr_dense_multi",     # 1 / rank in the multilingual dense list (0 when absent)
    "multi_hub",          # mean multilingual cosine of the candidate to the query's other candidates
    "cos_use",            # second multilingual model (USE, core/encoders/use_encoder.py): query . claim + title
    "cos_use_gap",        # cos_use minus the best cos_use among this query's candidates
    "cos_use_margin",     # cos_use minus the best cos_use among the other candidates
    "xl_bm25",            # BM25 with Cyrillic words mapped to English terms (core/matching/crosslingual_terms.py) / query IDF
    "xl_cover",           # IDF-weighted share of the candidate's words (so mapped) found in the query
    "xl_names",           # share of the Cyrillic side's names spelled on the Latin side (Трамп ~ Trump)
    "cos_gloss",          # MiniLM of the message's English gloss (core/matching/gloss.py) . claim vector
    "cos_gloss_title",    # the same . title vector
    "cos_gloss_gap",      # cos_gloss minus the best cos_gloss among this query's candidates
    "cos_gloss_margin",   # cos_gloss minus the best cos_gloss among the other candidates
    "rr_dense_gloss",     # 1 / rank in the gloss list (0 when absent)
    "tok_f",              # token alignment of e5's token states, message and candidate (core/encoders/token_align.py)
    "tok_f_gap",          # tok_f minus the best tok_f among this query's candidates
)
# Read only by the re-ranker for messages with Cyrillic words across scripts (reranker_cyrillic.json):
# every other pair has no gloss, and the other three re-rankers were trained without these columns.
GLOSS_FEATURES: tuple[str, ...] = ("cos_gloss", "cos_gloss_title", "cos_gloss_gap", "cos_gloss_margin",
                                   "rr_dense_gloss", "tok_f", "tok_f_gap")
BASE_FEATURES: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if n not in GLOSS_FEATURES)
N_FEATURES = len(FEATURE_NAMES)

# Features from the English model (MiniLM). For a pair that is not English on both sides they are
# noise at best: MiniLM scores any two Cyrillic texts ~0.6 and a Russian tweet against its English
# fact-check like any other English claim. The multilingual re-ranker is trained and run with them
# zeroed, so a Russian-Russian pair cannot borrow MiniLM's inflated similarity (core/matching/matcher.py).
ENGLISH_MODEL_FEATURES: tuple[str, ...] = (
    "cos_claim", "cos_title", "cos_doc", "cos_claim_gap", "cos_title_gap", "cos_doc_gap",
    "rr_dense_claim", "rr_dense_title", "rrf", "cos_doc_margin",
)
# Term overlap relative to the best candidate: an English message has strong term matches among the
# English fact-checks, so a Russian fact-check of the same claim sits far below "the best" on a scale
# the multilingual re-ranker only ever saw near zero (Russian messages share no terms with English
# claims). Measured: "Cows kill more people every year than sharks do." against our Russian fact-check
# of it, p = 0.005 with these features, the margin alone costing 7.8 logits.
RELATIVE_TERM_FEATURES: tuple[str, ...] = ("bm25_doc_rel", "bm25_doc_margin")
_ENGLISH_COLS = np.array([FEATURE_NAMES.index(n) for n in ENGLISH_MODEL_FEATURES + RELATIVE_TERM_FEATURES])


def without_english_model(X: np.ndarray) -> np.ndarray:
    """A copy of the feature matrix for the multilingual re-ranker: the English model's features and
    the relative term-overlap features zeroed."""
    out = np.array(X, dtype=np.float64, copy=True)
    if out.size:
        out[:, _ENGLISH_COLS] = 0.0
    return out


# --------------------------------------------------------------------------------------------------
# Corpus term statistics


# Documents' term weights kept per field (TermStats.weights), and term groups' IDFs: 654 bytes per
# document measured, ~11 MB per field; the candidates of ~140 messages (115 each).
_WEIGHTS_KEPT = 1 << 14


@dataclass
class TermStats:
    """Document frequencies and length of one text field over the fact-check corpus.

    Keyed by `core.encoders.sparse.term_id`, so it agrees with the sparse vectors stored in Qdrant.
    `add`/`remove` keep it current as fact-checks are ingested or deleted.
    """

    n_docs: int = 0
    total_len: int = 0
    df: dict[int, int] = field(default_factory=dict)
    # idf() is called for every term of every candidate; memoised until the statistics change.
    _idf_memo: dict[int, float] = field(default_factory=dict, repr=False, compare=False)
    # A document's distinct terms with their IDF and its total (`_cover`), for the same candidates coming
    # back query after query; dropped with the IDFs, and past _WEIGHTS_KEPT documents.
    _weights_memo: dict[tuple[int, ...], tuple[dict[int, float], float]] = field(
        default_factory=dict, repr=False, compare=False)
    # Term groups' IDFs (crosslingual_terms.QueryScorer), shared by every query while the statistics stay.
    _group_idf_memo: dict[tuple[int, ...], float] = field(default_factory=dict, repr=False, compare=False)

    @property
    def avg_len(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 1.0

    def add(self, text: str) -> None:
        ids = [term_id(t) for t in terms(text)]
        self._idf_memo.clear()
        self._weights_memo.clear()
        self._group_idf_memo.clear()
        self.n_docs += 1
        self.total_len += len(ids)
        for tid in set(ids):
            self.df[tid] = self.df.get(tid, 0) + 1

    def remove(self, text: str) -> None:
        ids = [term_id(t) for t in terms(text)]
        self._idf_memo.clear()
        self._weights_memo.clear()
        self._group_idf_memo.clear()
        self.n_docs = max(0, self.n_docs - 1)
        self.total_len = max(0, self.total_len - len(ids))
        for tid in set(ids):
            n = self.df.get(tid, 0) - 1
            if n > 0:
                self.df[tid] = n
            else:
                self.df.pop(tid, None)

    def weights(self, tids: tuple[int, ...]) -> tuple[dict[int, float], float]:
        """A document's distinct term ids with their IDF, and the IDFs' total."""
        found = self._weights_memo.get(tids)
        if found is None:
            if len(self._weights_memo) >= _WEIGHTS_KEPT:
                self._weights_memo.clear()
            w = {t: self.idf(t) for t in set(tids)}
            found = self._weights_memo[tids] = (w, sum(w.values()))
        return found

    def group_idfs(self) -> dict[tuple[int, ...], float]:
        """The memo of term groups' IDFs a QueryScorer fills (emptied past _WEIGHTS_KEPT groups)."""
        if len(self._group_idf_memo) >= _WEIGHTS_KEPT:
            self._group_idf_memo.clear()
        return self._group_idf_memo

    def idf(self, tid: int) -> float:
        """BM25 IDF as Lucene and Qdrant's IDF modifier compute it: ln(1 + (N - n + .5) / (n + .5))."""
        v = self._idf_memo.get(tid)
        if v is None:
            n = self.df.get(tid, 0)
            v = self._idf_memo[tid] = math.log(1.0 + (self.n_docs - n + 0.5) / (n + 0.5))
        return v

    def to_dict(self) -> dict:
        return {"n_docs": self.n_docs, "total_len": self.total_len, "df": {str(k): v for k, v in self.df.items()}}

    @classmethod
    def from_dict(cls, data: Mapping) -> TermStats:
        return cls(int(data["n_docs"]), int(data["total_len"]), {int(k): int(v) for k, v in data["df"].items()})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> TermStats:
        return cls.from_dict(json.loads(text))


@dataclass
class CorpusStats:
    """Term statistics for the claim field, the title field and the two together (one document)."""

    claim: TermStats = field(default_factory=TermStats)
    title: TermStats = field(default_factory=TermStats)
    doc: TermStats = field(default_factory=TermStats)

    def add(self, claim: str, title: str) -> None:
        self.claim.add(claim)
        self.title.add(title)
        self.doc.add(doc_text(claim, title))

    def remove(self, claim: str, title: str) -> None:
        self.claim.remove(claim)
        self.title.remove(title)
        self.doc.remove(doc_text(claim, title))

    def to_json(self) -> str:
        return json.dumps({"claim": self.claim.to_dict(), "title": self.title.to_dict(), "doc": self.doc.to_dict()},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CorpusStats:
        d = json.loads(text)
        return cls(TermStats.from_dict(d["claim"]), TermStats.from_dict(d["title"]), TermStats.from_dict(d["doc"]))


def doc_text(claim: str, title: str) -> str:
    """The text indexed as one document (sparse vector, `CorpusStats.doc`)."""
    return f"{claim} {title}".strip()


# --------------------------------------------------------------------------------------------------
# Query preparation (once per query)

_CAP_WORD = re.compile(r"(?<![\w'’])([A-Z][\w'’-]*[a-z][\w'’-]*|[A-Z]{2,}[a-z]*)")
_HANDLE = re.compile(r"[@#](\w+)")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SENTENCE_START_COMMON = frozenset(
    "the a an this that these those it its he she they we you i in on at for and but or if when what who why how "
    "breaking news just not no yes my our your his her their there here so".split()
)


def entities(text: str) -> set[str]:
    """Lower-cased capitalised words (not common sentence starters), plus @handles and #hashtags split
    on CamelCase. Crude but cheap: names, places and organisations are what the claim and the query
    must share."""
    out = {w.lower().rstrip("'’s") for w in _CAP_WORD.findall(text)}
    for h in _HANDLE.findall(text):
        out.add(h.lower())
        out.update(p.lower() for p in _CAMEL.split(h) if len(p) > 2)
    return {w for w in out if len(w) > 1 and w not in _SENTENCE_START_COMMON}


def numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(text)}


@dataclass(frozen=True)
class PreparedQuery:
    vec: np.ndarray                     # (d,) L2-normalised dense vector of the cleaned query
    tids: tuple[int, ...]               # unique term ids of the cleaned query
    idf_doc: np.ndarray                 # IDF of each term id in the doc field
    idf_claim: np.ndarray
    idf_title: np.ndarray
    n_terms: int
    entities: frozenset[str]
    numbers: frozenset[str]
    multi_vec: np.ndarray | None = None  # (d,) multilingual query vector, when there is one
    latin: bool = True                  # the query is in a Latin script (latin_script)
    use_vec: np.ndarray | None = None   # (d,) the second multilingual model's vector, when there is one
    xl: TermGroups | None = None        # the cleaned query's words as English term groups (crosslingual_terms)
    gloss_vec: np.ndarray | None = None  # (d,) MiniLM vector of the query's English gloss, when it has Cyrillic words


def prepare_query(raw: str, clean: str, vec: np.ndarray, stats: CorpusStats,
                  multi_vec: np.ndarray | None = None, use_vec: np.ndarray | None = None,
                  gloss_vec: np.ndarray | None = None) -> PreparedQuery:
    """Tokenise the cleaned query once; entities come from the raw text too (hashtags, handles)."""
    toks = terms(clean)
    tids = tuple(dict.fromkeys(term_id(t) for t in toks))
    return PreparedQuery(
        vec=np.asarray(vec, dtype=np.float32).reshape(-1),
        tids=tids,
        idf_doc=np.array([stats.doc.idf(t) for t in tids], dtype=np.float64),
        idf_claim=np.array([stats.claim.idf(t) for t in tids], dtype=np.float64),
        idf_title=np.array([stats.title.idf(t) for t in tids], dtype=np.float64),
        n_terms=len(toks),
        entities=frozenset(entities(raw) | entities(clean)),
        numbers=frozenset(numbers(clean)),
        multi_vec=None if multi_vec is None else np.asarray(multi_vec, dtype=np.float32).reshape(-1),
        latin=latin_script(clean),
        use_vec=None if use_vec is None else np.asarray(use_vec, dtype=np.float32).reshape(-1),
        xl=term_groups(clean, lazy_lexicon()),
        gloss_vec=None if gloss_vec is None else np.asarray(gloss_vec, dtype=np.float32).reshape(-1),
    )


# --------------------------------------------------------------------------------------------------
# Candidate features


def _bm25(q_idf: Mapping[int, float], counts: Counter, length: int, avg_len: float) -> float:
    """BM25 of one document; loops over the document's terms, which are fewer than a tweet's."""
    if not q_idf or not counts:
        return 0.0
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / max(avg_len, 1e-9))
    s = 0.0
    for tid, tf in counts.items():
        idf = q_idf.get(tid)
        if idf is not None:
            s += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
    return s


def _cover(q_set: frozenset[int] | set[int], doc_tids: tuple[int, ...], stats: TermStats) -> float:
    w, total = stats.weights(doc_tids)
    return sum(v for t, v in w.items() if t in q_set) / total if total > 0 else 0.0


def _rows(a: np.ndarray, n: int, dim: int) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    return a.reshape(n, dim) if a.size else np.zeros((n, dim), dtype=np.float32)


@dataclass(frozen=True)
class _DocInfo:
    c_tids: tuple[int, ...]
    t_tids: tuple[int, ...]
    c_counts: Counter
    t_counts: Counter
    d_counts: Counter
    d_len: int
    d_set: frozenset[int]
    entities: frozenset[str]
    numbers: frozenset[str]


@lru_cache(maxsize=1 << 16)
def _doc_info(claim: str, title: str) -> _DocInfo:
    """Everything about a candidate that does not depend on the query or the corpus statistics.
    Cached because the same fact-checks come back as candidates for query after query: it took
    most of the re-ranking time (about 25 ms of a 67 ms match at 10k claims) when recomputed."""
    c_tids, t_tids = term_ids(claim), term_ids(title)
    d_tids = c_tids + t_tids
    text = f"{claim} {title}"
    return _DocInfo(c_tids, t_tids, Counter(c_tids), Counter(t_tids), Counter(d_tids), len(d_tids),
                    frozenset(d_tids), frozenset(entities(text)), frozenset(numbers(text)))


@dataclass(frozen=True)
class CandidateCosines:
    """What the features read of the candidates' stored vectors, one entry per candidate: the cosines of
    the query's vectors with them, |claim + title| (cos_doc's normaliser) and the multilingual vectors
    themselves (the candidates' similarity to each other). The matcher has the engine work them out
    (storage/vectors.py `Hit`); `of_vectors` does from the vectors (training, tests): the same sums."""

    claim: np.ndarray                       # (n,) query.vec . claim
    title: np.ndarray                       # (n,) query.vec . title
    doc_norm: np.ndarray                    # (n,) |claim + title|
    multi: np.ndarray | None = None         # (n,) query.multi_vec . multi, when both exist
    multi_vecs: np.ndarray | None = None    # (n, d') the candidates' multilingual vectors
    use: np.ndarray | None = None           # (n,) query.use_vec . use, when both exist
    gloss_claim: np.ndarray | None = None   # (n,) query.gloss_vec . claim, when the query has a gloss
    gloss_title: np.ndarray | None = None
    tok_f: np.ndarray | None = None         # (n,) token alignment F, for a query with token states

    @classmethod
    def of_vectors(cls, query: PreparedQuery, n: int, claim_vecs: np.ndarray, title_vecs: np.ndarray,
                   multi_vecs: np.ndarray | None = None, use_vecs: np.ndarray | None = None) -> CandidateCosines:
        dim = query.vec.shape[0]
        cv = _rows(claim_vecs, n, dim)
        tv = _rows(title_vecs, n, dim)
        multi = mv = use = g_claim = g_title = None
        if query.multi_vec is not None and multi_vecs is not None and np.size(multi_vecs):
            mv = _rows(multi_vecs, n, query.multi_vec.shape[0])
            multi = mv @ query.multi_vec
        if query.use_vec is not None and use_vecs is not None and np.size(use_vecs):
            use = _rows(use_vecs, n, query.use_vec.shape[0]) @ query.use_vec
        if query.gloss_vec is not None:
            g_claim, g_title = cv @ query.gloss_vec, tv @ query.gloss_vec
        return cls(cv @ query.vec, tv @ query.vec, np.linalg.norm(cv + tv, axis=1), multi, mv, use, g_claim, g_title)


def candidate_features(
    query: PreparedQuery,
    claims: Sequence[str],
    titles: Sequence[str],
    claim_vecs: np.ndarray,
    title_vecs: np.ndarray,
    ranks: Mapping[str, Sequence[int] | np.ndarray],
    stats: CorpusStats,
    multi_vecs: np.ndarray | None = None,
    use_vecs: np.ndarray | None = None,
) -> np.ndarray:
    """`features_of` with the cosines worked out from the candidates' vectors.

    `multi_vecs` (n, d'): the candidates' multilingual passage vectors; with the query's `multi_vec`
    they give the cos_multi features (zero when either is missing). `use_vecs` (n, d''): the same for
    the second multilingual model and the cos_use features."""
    cosines = CandidateCosines.of_vectors(query, len(claims), claim_vecs, title_vecs, multi_vecs, use_vecs)
    return features_of(query, claims, titles, cosines, ranks, stats)


def features_of(
    query: PreparedQuery,
    claims: Sequence[str],
    titles: Sequence[str],
    cos: CandidateCosines,
    ranks: Mapping[str, Sequence[int] | np.ndarray],
    stats: CorpusStats,
) -> np.ndarray:
    """Feature matrix (n_candidates, N_FEATURES), columns in `FEATURE_NAMES` order.

    `ranks[name]` for name in `LISTS` gives each candidate's 1-based rank in that candidate list,
    0 when absent (a missing list counts as absent everywhere).
    """
    n = len(claims)
    out = np.zeros((n, N_FEATURES), dtype=np.float64)
    if n == 0:
        return out
    # (claim + title) / |claim + title| . q, without the vectors: the engine hands over cosines.
    cos_c, cos_t = cos.claim, cos.title
    cos_d = (cos_c + cos_t) / np.maximum(cos.doc_norm, 1e-9)
    out[:, 0], out[:, 1], out[:, 2] = cos_c, cos_t, cos_d
    out[:, 3], out[:, 4], out[:, 5] = cos_c - cos_c.max(), cos_t - cos_t.max(), cos_d - cos_d.max()

    q_set = frozenset(query.tids)
    q_info = float(query.idf_doc.sum()) or 1.0
    qi_claim = dict(zip(query.tids, query.idf_claim.tolist()))
    qi_title = dict(zip(query.tids, query.idf_title.tolist()))
    qi_doc = dict(zip(query.tids, query.idf_doc.tolist()))
    xl = QueryScorer(query.xl, stats.doc.idf, stats.doc.avg_len, stats.doc.group_idfs()) \
        if query.xl is not None else None
    # Per candidate, a row of Python floats, written into the matrix at once rather than numpy scalar by
    # scalar: with the remembered term weights (TermStats.weights, group_idfs), features_of 9.5 -> 6.5 ms
    # p50 on 60 dev tweets' candidates at 100k claims (docs/architecture.md).
    rows = []
    for claim, title in zip(claims, titles):
        doc = _doc_info(claim, title)
        union = len(q_set | doc.d_set)
        ents = doc.entities
        nums = doc.numbers
        hit = len(nums & query.numbers)
        row = [_bm25(qi_claim, doc.c_counts, len(doc.c_tids), stats.claim.avg_len) / q_info,
               _bm25(qi_title, doc.t_counts, len(doc.t_tids), stats.title.avg_len) / q_info,
               _bm25(qi_doc, doc.d_counts, doc.d_len, stats.doc.avg_len) / q_info,
               0.0,  # column 9, the doc BM25 over the best, once all are known
               _cover(q_set, doc.c_tids, stats.claim),
               _cover(q_set, doc.t_tids, stats.title),
               len(q_set & doc.d_set) / union if union else 0.0,
               len(ents & query.entities) / len(ents) if ents else 0.0,
               hit / len(nums) if nums else 0.0,
               1.0 if nums and query.numbers and not hit else 0.0,
               math.log((query.n_terms + 1.0) / (doc.d_len + 1.0))]
        if xl is not None:
            # Term overlap across scripts: what a Russian message shares with an English claim word for word
            # (figures: docs/decisions/2026-11-24-matching-measurements.md).
            dg = doc_groups(claim, title)
            row += [xl.bm25(dg), xl.cover(dg), xl.names(dg)]
        rows.append(row)
    table = np.array(rows, dtype=np.float64)
    out[:, 6:17] = table[:, :11]
    if xl is not None:
        out[:, _XL:_XL + 3] = table[:, 11:]
    best = out[:, 8].max()
    out[:, 9] = out[:, 8] / best if best > 0 else 0.0

    rrf = np.zeros(n)
    for j, name in enumerate(LISTS):
        r = np.asarray(ranks.get(name, np.zeros(n)), dtype=np.float64).reshape(-1)
        if r.size != n:
            r = np.zeros(n)
        present = r > 0
        out[:, _RR_COL[name]] = np.where(present, 1.0 / np.maximum(r, 1.0), 0.0)
        rrf += np.where(present, 1.0 / (RRF_K + r), 0.0)
    out[:, 20] = rrf * (RRF_K + 1.0) / len(LISTS)
    out[:, 21] = _margin(out[:, 2])
    out[:, 22] = _margin(out[:, 8])
    if cos.multi is not None:
        cos_m = cos.multi
        out[:, 23] = cos_m
        out[:, 24] = cos_m - cos_m.max()
        out[:, 25] = _margin(cos_m)
        # Hubness: a few texts sit close to everything in e5's space (short, generic claims such as
        # "Funeral Announcement" or "Palyh." topped the list for 12 of the 70 Russian dev tweets the
        # re-ranker got wrong). A candidate's mean similarity to the query's other candidates tells
        # such a hub from a real neighbour: Russian dev MAP@5 0.712 -> 0.752; the mean of its 10
        # nearest instead of all measured 0.731; English dev unchanged (0.9232 -> 0.9229).
        if n > 1 and cos.multi_vecs is not None:
            mv = cos.multi_vecs
            sims = mv @ mv.T
            out[:, _MULTI_HUB] = (sims.sum(axis=1) - np.diag(sims)) / (n - 1)
    if cos.use is not None:
        # A second reader of both languages, trained differently from e5, disagrees with it where e5
        # is wrong: Russian dev MAP@5 0.752 -> 0.811 with these three (docs/decisions/2026-11-24-matching-measurements.md). Its hubness
        # and reciprocal rank measured no further gain.
        cos_u = cos.use
        out[:, _USE] = cos_u
        out[:, _USE + 1] = cos_u - cos_u.max()
        out[:, _USE + 2] = _margin(cos_u)
    if cos.gloss_claim is not None and cos.gloss_title is not None:
        # The gloss read by MiniLM against the claims as MiniLM stores them: a signal e5 and USE lack
        # (plain dense fusion e5 + gloss 0.765 vs e5 0.700 on Russian dev; docs/decisions/2026-11-24-matching-measurements.md).
        cos_g = cos.gloss_claim
        out[:, _GLOSS] = cos_g
        out[:, _GLOSS + 1] = cos.gloss_title
        out[:, _GLOSS + 2] = cos_g - cos_g.max()
        out[:, _GLOSS + 3] = _margin(cos_g)
        r = np.asarray(ranks.get(GLOSS_LIST, np.zeros(n)), dtype=np.float64).reshape(-1)
        if r.size == n:
            out[:, _GLOSS + 4] = np.where(r > 0, 1.0 / np.maximum(r, 1.0), 0.0)
    if cos.tok_f is not None and cos.tok_f.size == n and n:
        out[:, _TOK] = cos.tok_f
        out[:, _TOK + 1] = cos.tok_f - cos.tok_f.max()
    return out


_RR_COL = {name: FEATURE_NAMES.index("rr_" + name) for name in LISTS}
_MULTI_HUB = FEATURE_NAMES.index("multi_hub")
_USE = FEATURE_NAMES.index("cos_use")
_XL = FEATURE_NAMES.index("xl_bm25")
_GLOSS = FEATURE_NAMES.index("cos_gloss")
_TOK = FEATURE_NAMES.index("tok_f")


def _margin(v: np.ndarray) -> np.ndarray:
    """v[i] - max_{j != i} v[j] (0 when there is a single candidate)."""
    if v.size < 2:
        return np.zeros_like(v)
    top2 = np.partition(v, -2)[-2:]
    best, second = top2[1], top2[0]
    return v - np.where(v >= best, second, best)
