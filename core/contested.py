"""A contested automatic match: a close rival fact-check carries a word of the message that the match lacks.

Issue 12: "Bill Gates wants to put microchips in people through vaccines" took the seed's fact-check
"Bill Gates admitted in a TED talk that vaccines are meant to reduce the world's population" at
p 0.996 (`auto`: the card inherited its Misleading verdict), while the fact-check about RFID chips
in vaccines scored 0.026. Both embedding models put the two fact-checks almost level (e5 0.901 vs
0.882, MiniLM 0.712 vs 0.649): the message is about Gates and vaccines, like the one, and about
microchips, like the other, and nothing offline tells which claim it makes. So when a candidate at
least that close to the message carries a content word of the message that the `auto` match lacks,
the match is demoted to `suggest`: the card then shows it as a similar fact-check and inherits no
verdict.

"Close" is relative to how far the match itself is from the message: a rival's cosine may fall
short of the match's by at most RIVAL_REL_GAP x (1 - the match's cosine), in both models (e5 cosines
bunch near 1, MiniLM's do not, so one absolute gap would not suit both). The probe needs 0.22
(MiniLM 0.063 of 0.288; e5 0.019 of 0.099). RIVAL_REL_GAP is the largest value that demotes at most
5 % of the correct automatic matches on the CLEF-2020 train mixture (full corpus, no-match copies
and small knowledge bases, shipped English weights), the rule of the `auto` cos_doc floor: 0.26
demotes 64 of 1,315 correct ones and 45 of 107 wrong ones (precision at `auto` 0.925 -> 0.953,
coverage 0.444 -> 0.410); on the dev mixture, never used to choose it, 17 of 317 correct and 14 of
30 wrong (0.914 -> 0.949, coverage 0.440 -> 0.401). Measured by /tmp experiments, figures in
docs/matching.md (issue 12).

English pairs only: the words are compared as core.sparse terms, and the CLEF figures are English.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RIVAL_REL_GAP = 0.26

# The two similarities a rival must be close in: e5 (multilingual) and MiniLM against the claim. Adding
# USE as a third measured no better at about the same cost (train: 70 correct demoted for 45 wrong at
# 0.3, against 64 for 45 with these two at 0.26; dev 18 for 11 against 17 for 14).
RIVAL_SIMILARITIES = ("cos_multi", "cos_claim")


def rival(message_terms: frozenset[int], doc_terms: Sequence[frozenset[int]], sims: np.ndarray, match: int,
          rel_gap: float = RIVAL_REL_GAP) -> int | None:
    """The first candidate (index) that contests candidate `match`, or None.

    `message_terms`: the message's term ids (core.sparse.term_ids); `doc_terms[j]`: candidate j's claim
    and title term ids; `sims`: one row per candidate, one column per similarity (RIVAL_SIMILARITIES).
    A rival is any other candidate whose every similarity is within `rel_gap` x (1 - the match's) of
    the match's and that carries a message term the match lacks."""
    missing = message_terms - doc_terms[match]
    if not missing:
        return None
    floor = sims[match] - rel_gap * (1.0 - sims[match])
    close = np.all(sims >= floor, axis=1)
    close[match] = False
    for j in np.flatnonzero(close).tolist():
        if missing & doc_terms[j]:
            return j
    return None
