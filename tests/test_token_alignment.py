"""training/token_alignment.py: the e5 token states the `cyrillic` re-ranker's alignment columns are trained on
(training/reranker.py) and the projection is fitted on (training/token_projection.py)."""

from __future__ import annotations

import numpy as np

from training import token_alignment as TA


def test_token_alignment_scores_a_translation_above_an_unrelated_claim(tmp_path):
    """training/token_alignment.py on the real e5 weights: a Russian message aligns with the English claim it
    retells more than with another claim, in R, P and F, and F lies between R and P."""
    states = TA.TokenStates(tmp_path, layers=(10,))
    message = states(["прививки вызывают у детей аутизм"], "m", query=True)[10][0]
    claims = states(["Vaccines cause autism in children.", "The moon landing was filmed in a studio."], "c",
                    query=False)[10]
    assert message.dtype == np.float16 and np.allclose(np.linalg.norm(message.astype(np.float32), axis=1), 1, atol=1e-2)
    right, wrong = TA.alignment(message, claims[0]), TA.alignment(message, claims[1])
    assert all(a > b for a, b in zip(right, wrong)), (right, wrong)
    assert min(right[:2]) <= right[2] <= max(right[:2])
    again = TA.TokenStates(tmp_path, layers=(10,))(["прививки вызывают у детей аутизм"], "m", query=True)[10][0]
    assert np.array_equal(again, message)  # read back from the cache, the same states
    proj = TA.fit_projection(claims, 4)
    assert proj.shape == (384, 4) and TA.project(message, proj).shape == (len(message), 4)
