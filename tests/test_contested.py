"""core/matching/contested.py: when a close rival fact-check contests an automatic match."""

from __future__ import annotations

import numpy as np

from core.matching.contested import RIVAL_REL_GAP, rival
from core.encoders.sparse import term_ids

MESSAGE = frozenset(term_ids("Bill Gates wants to put microchips in people through vaccines"))
TED = frozenset(term_ids("Bill Gates admitted in a TED talk that vaccines are meant to reduce the world's population."))
RFID = frozenset(term_ids("A photo of a man implanted with a microchip proves that RFID chips will be injected"))
DAM = frozenset(term_ids("A dam burst in Brazil"))
ALL2, ALL3 = np.ones(2, bool), np.ones(3, bool)


def test_a_close_rival_with_the_message_word_the_match_lacks_contests_it():
    # The seed probe's cosines (e5, MiniLM): the TED claim 0.901 / 0.712, the RFID one 0.882 / 0.649.
    sims = np.array([[0.901, 0.712], [0.882, 0.649], [0.70, 0.10]])
    assert rival(MESSAGE, [TED, RFID, DAM], sims, ALL3, 0) == 1


def test_a_rival_that_is_no_possible_match_itself_does_not():
    sims = np.array([[0.901, 0.712], [0.882, 0.649], [0.70, 0.10]])
    assert rival(MESSAGE, [TED, RFID, DAM], sims, np.array([True, False, True]), 0) is None


def test_a_rival_further_than_the_gap_in_either_model_does_not():
    top = np.array([0.901, 0.712])
    just_out = top - (RIVAL_REL_GAP + 0.01) * (1 - top)
    for col in (0, 1):
        rival_sims = top - (RIVAL_REL_GAP - 0.01) * (1 - top)
        rival_sims[col] = just_out[col]
        assert rival(MESSAGE, [TED, RFID], np.vstack([top, rival_sims]), ALL2, 0) is None
    assert rival(MESSAGE, [TED, RFID], np.vstack([top, top - (RIVAL_REL_GAP - 0.01) * (1 - top)]), ALL2, 0) == 1


def test_a_close_candidate_with_none_of_the_missing_words_does_not():
    sims = np.array([[0.901, 0.712], [0.90, 0.71]])
    assert rival(MESSAGE, [TED, DAM], sims, ALL2, 0) is None
    # A match that carries every word of the message cannot be contested.
    assert rival(frozenset(term_ids("Bill Gates vaccines")), [TED, RFID], np.array([[0.9, 0.7], [0.9, 0.7]]),
                 ALL2, 0) is None
