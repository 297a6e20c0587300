"""A contested automatic match: a close rival fact-check carries a word of the message that the match lacks.

The case it is for: "Bill Gates wants to put microchips in people through vaccines" took the seed's fact-check
"Bill Gates admitted in a TED talk that vaccines are meant to reduce the world's population" at
p 0.996 (`auto`: the card inherited its Misleading verdict), while the fact-check about RFID chips
in vaccines scored 0.026. Both embedding models put the two fact-checks almost level (e5 0.901 vs
0.882, MiniLM 0.712 vs 0.649): the message is about Gates and vaccines, like the one, and about
microchips, like the other, and nothing offline tells which claim it makes. So when a rival
candidate nearly as close to the message carries a content word of the message that the `auto`
match lacks, the match is demoted to `suggest`: the card shows it as a similar fact-check and
inherits no verdict.

A rival must be
- close in both models, relative to how far the match itself is from the message: its cosine may
  fall short of the match's by at most RIVAL_REL_GAP x (1 - the match's cosine) (e5 cosines bunch
  near 1, MiniLM's do not, so one absolute gap would not suit both; the probe needs 0.22: MiniLM
  0.063 of 0.288, e5 0.019 of 0.099). 0.26 is the largest gap that demotes at most 5 % of the
  correct automatic matches on the CLEF-2020 train mixture (full corpus, no-match copies, small
  knowledge bases; shipped English weights), the rule of the `auto` cos_doc floor;
- a possible match itself (the re-ranker's `suggest` threshold): without that, in the full 10k-claim
  corpus, where related fact-checks abound, it demoted 52 of 614 correct automatic train matches
  for 3 of 12 wrong ones; with it 30 for the same 3.

Measured (shipped English weights; precision at `auto` with the floor, coverage): train mixture
36 of 1,315 correct automatic matches demoted for 26 of 107 wrong (0.925 -> 0.940, coverage 0.444
-> 0.425); dev mixture, never used to choose, 10 of 317 for 7 of 30 (0.914 -> 0.930, 0.440 ->
0.419). Most of the wrong ones caught are no-match queries (a related fact-check took `auto`:
18 of 69 on train), the Gates case above. Figures: docs/decisions/2026-11-24-matching-measurements.md.

English pairs only: the words are compared as core.encoders.sparse terms, and the figures are English.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RIVAL_REL_GAP = 0.26

# The two similarities a rival must be close in: e5 (multilingual) and MiniLM against the claim. Adding
# USE as a third measured no better at about the same cost (train mixture, without the `suggest`
# condition: 70 correct demoted for 45 wrong at 0.3, against 64 for 45 with these two at 0.26).
RIVAL_SIMILARITIES = ("cos_multi", "cos_claim")


def rival(message_terms: frozenset[int], doc_terms: Sequence[frozenset[int]], sims: np.ndarray,
          possible: np.ndarray, match: int, rel_gap: float = RIVAL_REL_GAP) -> int | None:
    """The first candidate (index) that contests candidate `match`, or None.

    `message_terms`: the message's term ids (core.encoders.sparse.term_ids); `doc_terms[j]`: candidate j's claim
    and title term ids; `sims`: one row per candidate, one column per similarity (RIVAL_SIMILARITIES);
    `possible[j]`: candidate j is a possible match itself (its probability reaches `suggest`)."""
    missing = message_terms - doc_terms[match]
    if not missing:
        return None
    floor = sims[match] - rel_gap * (1.0 - sims[match])
    close = np.all(sims >= floor, axis=1) & possible
    close[match] = False
    for j in np.flatnonzero(close).tolist():
        if missing & doc_terms[j]:
            return j
    return None
