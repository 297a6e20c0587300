"""Term overlap across scripts: a Russian or Ukrainian message against an English fact-check (and back).

BM25 gives English pairs their sharpest signal (rare shared words: names, places, objects); a Russian
message shares no word with an English claim. Here every word is mapped to English terms first:

- a Cyrillic word to its translations in a bilingual lexicon induced offline from the USE model we
  ship (`core/data/crosslingual_lexicon.tsv.gz`, built by `training/lexicon.py`; ~70k Russian and
  Ukrainian word forms), plus its romanisation (`core.matching.transliterate.latin`: "путин" -> "putin");
- a Latin word to itself.

Each source word keeps its alternatives as one group: it scores by its best-matching alternative,
so a word with three translations does not count three times. Names get a second, fuzzier test:
the consonant skeletons of the Cyrillic side's capitalised words against the Latin side's words
("Трампа" ~ "Trump", `core.matching.transliterate.skeleton`).
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from core.encoders.sparse import BM25_B, BM25_K1, term_id, terms
from core.matching.transliterate import cyrillic, latin, skeleton

LEXICON_PATH = Path(__file__).resolve().parents[1] / "data" / "crosslingual_lexicon.tsv.gz"

_CAP_CYRILLIC = re.compile(r"(?<![\w'’-])[А-ЯЁІЇЄҐ][а-яёіїєґ'’-]{2,}")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]{2,}")


class SortedLexicon(Mapping[str, tuple[str, ...]]):
    """The lexicon file kept as one block of bytes and searched by bisection over its lines, which
    `training/lexicon.py` writes sorted (UTF-8 byte order is code point order). A dict of its 69k
    entries took 0.2-0.3 s of CPU to build, and a cold `tipline check` paid it whenever a Russian
    fact-check was among the candidates, English messages included; this opens in ~15 ms and looks a
    word up in ~20 bisection steps."""

    def __init__(self, data: bytes):
        import numpy as np

        if data and not data.endswith(b"\n"):
            data += b"\n"
        self._data = data
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
        raw = np.frombuffer(data, dtype=np.uint8)
        # comment lines ("# built by ...") and empty lines are not entries
        keep = (ends > starts) & (raw[np.minimum(starts, max(len(data) - 1, 0))] != ord("#"))
        self._starts, self._ends = starts[keep].tolist(), ends[keep].tolist()

    def _line(self, i: int) -> tuple[bytes, bytes]:
        src, _, tgt = self._data[self._starts[i]:self._ends[i]].partition(b"\t")
        return src, tgt

    def __getitem__(self, key: str) -> tuple[str, ...]:
        k = key.encode("utf-8")
        lo, hi = 0, len(self._starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._line(mid)[0] < k:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._starts):
            src, tgt = self._line(lo)
            if src == k and tgt.strip():
                return tuple(tgt.decode("utf-8").split())
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self._starts)):
            src, tgt = self._line(i)
            if src and tgt.strip():
                yield src.decode("utf-8")

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def is_sorted(self) -> bool:
        keys = [self._line(i)[0] for i in range(len(self._starts))]
        return all(a < b for a, b in zip(keys, keys[1:]))


@lru_cache(maxsize=4)
def load_lexicon(path: Path = LEXICON_PATH) -> Mapping[str, tuple[str, ...]]:
    """Cyrillic term -> English terms (as `core.encoders.sparse.terms` writes them), from a lexicon file sorted
    by term. Read once per process."""
    with gzip.open(path, "rb") as f:
        return SortedLexicon(f.read())


class LazyLexicon(Mapping[str, tuple[str, ...]]):
    """The lexicon, read on the first Cyrillic word (a message's or a candidate fact-check's): an
    English-only deployment never reads it."""

    def __init__(self, path: Path = LEXICON_PATH):
        self.path = path

    def _data(self) -> Mapping[str, tuple[str, ...]]:
        return load_lexicon(self.path)

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())


@lru_cache(maxsize=4)
def lazy_lexicon(path: Path = LEXICON_PATH) -> LazyLexicon:
    return LazyLexicon(path)


@dataclass(frozen=True)
class TermGroups:
    """A text's words as groups of English term ids (one group per source word, in order), the
    counts of every term id over all groups (for BM25 of a document), and the consonant skeletons of
    its names (capitalised Cyrillic words) and of its Latin words."""

    groups: tuple[tuple[int, ...], ...]
    counts: Counter
    cyrillic_names: tuple[str, ...]
    latin_skeletons: frozenset[str]
    latin_words: frozenset[str]

    @cached_property
    def distinct(self) -> tuple[tuple[int, ...], ...]:
        """The groups without repeats, in order (a cached fact-check's, computed once)."""
        return tuple(dict.fromkeys(self.groups))


def _group(term: str, lexicon: Mapping[str, tuple[str, ...]]) -> tuple[int, ...]:
    if not cyrillic(term):
        return (term_id(term),)
    alts = list(lexicon.get(term, ()))
    rom = latin(term)
    if rom not in alts:
        alts.append(rom)
    return tuple(dict.fromkeys(term_id(t) for t in alts))


_skeleton = lru_cache(maxsize=1 << 16)(skeleton)  # the same English words recur in fact-check after fact-check


def term_groups(text: str, lexicon: Mapping[str, tuple[str, ...]]) -> TermGroups:
    groups = tuple(_group(t, lexicon) for t in terms(text))
    counts: Counter = Counter(tid for g in groups for tid in g)
    names = tuple(dict.fromkeys(w.lower() for w in _CAP_CYRILLIC.findall(text)))
    words = {w.lower().replace("’", "'").removesuffix("'s") for w in _LATIN_WORD.findall(text)}
    return TermGroups(groups, counts, names, frozenset(s for s in map(_skeleton, words) if len(s) >= 2),
                      frozenset(words))


@lru_cache(maxsize=1 << 16)
def doc_groups(claim: str, title: str, lexicon_path: Path = LEXICON_PATH) -> TermGroups:
    """A fact-check's groups, cached: the same fact-checks come back for query after query."""
    return term_groups(f"{claim} {title}", lazy_lexicon(lexicon_path))


def _group_idf(group: tuple[int, ...], idf: Callable[[int], float]) -> float:
    return max(idf(t) for t in group) if group else 0.0


class QueryScorer:
    """The query's side of the three scores, prepared once per query and corpus statistics: each
    term id's groups and the query's total IDF. Per candidate, the loops run over the document's few
    terms, not the query's groups (the per-group version cost ~3x the rest of the features)."""

    def __init__(self, query: TermGroups, idf: Callable[[int], float], avg_len: float,
                 group_idf: MutableMapping[tuple[int, ...], float] | None = None):
        """`group_idf`: a memo of groups' IDFs to share across queries while `idf` stays the same (the
        same candidates' groups come back query after query)."""
        self.query, self.idf, self.avg_len = query, idf, avg_len
        groups = list(dict.fromkeys(query.groups))
        self.n_groups = len(groups)
        self.by_tid: dict[int, list[int]] = {}
        for gi, g in enumerate(groups):
            for tid in g:
                self.by_tid.setdefault(tid, []).append(gi)
        self.total = sum(_group_idf(g, idf) for g in groups)
        # the candidates' groups recur across them
        self._group_idf: MutableMapping[tuple[int, ...], float] = {} if group_idf is None else group_idf

    def bm25(self, doc: TermGroups) -> float:
        """BM25 of the query's groups against the document's term counts, each group scoring by its best
        alternative, divided by the query's total IDF (the share of the query's information matched)."""
        if not self.n_groups or not doc.groups or self.total <= 0:
            return 0.0
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * len(doc.groups) / max(self.avg_len, 1e-9))
        best: dict[int, float] = {}
        for tid, tf in doc.counts.items():
            gis = self.by_tid.get(tid)
            if gis:
                s = self.idf(tid) * tf * (BM25_K1 + 1.0) / (tf + norm)
                for gi in gis:
                    if s > best.get(gi, 0.0):
                        best[gi] = s
        return sum(best.values()) / self.total

    def cover(self, doc: TermGroups) -> float:
        """IDF-weighted share of the document's words with an alternative among the query's terms."""
        total = hit = 0.0
        q, memo = self.by_tid, self._group_idf
        for g in doc.distinct:
            w = memo.get(g)
            if w is None:
                w = memo[g] = _group_idf(g, self.idf)
            total += w
            if (g[0] in q) if len(g) == 1 else any(t in q for t in g):
                hit += w
        return hit / total if total > 0 else 0.0

    def names(self, doc: TermGroups) -> float:
        return name_match(self.query, doc)


def xl_bm25(query: TermGroups, doc: TermGroups, idf: Callable[[int], float], avg_len: float) -> float:
    return QueryScorer(query, idf, avg_len).bm25(doc)


def xl_cover(query: TermGroups, doc: TermGroups, idf: Callable[[int], float]) -> float:
    return QueryScorer(query, idf, 1.0).cover(doc)


@lru_cache(maxsize=1 << 14)
def _name_keys(name: str) -> tuple[str, str, str]:
    rom = latin(name)
    return rom, rom[:-1], skeleton(name)


def _name_found(name: str, skeletons: frozenset[str], words: frozenset[str]) -> bool:
    rom, stem, sk = _name_keys(name)
    if rom in words or stem in words:  # "обама" -> obama; "обамы" -> obamy -> obam(a)
        return True
    if len(sk) < 3:
        return False
    # inflected names add a consonant ending at most: "гейтсом" -> gtsm ~ "gates" -> gts
    return sk in skeletons or sk[:-1] in skeletons


def name_match(query: TermGroups, doc: TermGroups) -> float:
    """Share of the Cyrillic side's names (capitalised words) found on the Latin side by spelling:
    the query's names in the document's Latin words, or the document's in the query's, whichever side
    has names and the other Latin words; 0 when neither does."""
    for names, other in ((query.cyrillic_names, doc), (doc.cyrillic_names, query)):
        if names and other.latin_words:
            return sum(_name_found(n, other.latin_skeletons, other.latin_words) for n in names) / len(names)
    return 0.0
