"""Token alignment of a message with its candidate fact-checks: what the `cyrillic` re-ranker
reads beside the pooled vectors.

e5's pooled vector averages its tokens' states away. Compared token by token, as BERTScore does, the
states keep which words of a Russian message meet which words of an English claim: recall R is the
mean over the message's tokens of each one's best cosine with a fact-check token, precision P the same
the other way round, F their harmonic mean. On our Russian translations, F of layer 10's states as two
re-ranker columns (F and its gap to the best candidate) raised Russian MAP@5
(docs/decisions/2026-11-24-matching-measurements.md, "Token alignment").

The states are kept small: projected to PROJECTION_DIM dimensions by a matrix fitted once on our own
seed fact-checks (training/token_projection.py; core/data/e5_token_projection.npy), unit rows, float16:
~37 tokens x 64 x 2 bytes = 4.7 KB per fact-check. The projection cost 0.0008 of train CV MAP@5 and
0.0006 of dev against the full 384 dimensions; 32 dimensions lost 0.05 in the plain screen.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

PROJECTION = Path(__file__).parents[1] / "data" / "e5_token_projection.npy"
PROJECTION_DIM = 64


@cache
def projection() -> np.ndarray:
    """(384, PROJECTION_DIM) float32, read once per process."""
    return np.load(PROJECTION).astype(np.float32)


@cache
def states_model(encoder_model: str) -> str:
    """The name stored with a fact-check's states: the encoder's and the projection's, so that a change of
    either re-computes them (core/matching/knowledge_base.py)."""
    digest = hashlib.sha256(PROJECTION.read_bytes()).hexdigest()[:12]
    return f"{encoder_model}; layer-10 token states, {PROJECTION_DIM}-d projection {digest}"


def project(states: np.ndarray) -> np.ndarray:
    """Hidden states (tokens, 384) -> (tokens, PROJECTION_DIM) unit rows, float16."""
    x = np.asarray(states, dtype=np.float32) @ projection()
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)).astype(np.float16)


def alignment_rp(message: np.ndarray, docs: Sequence[np.ndarray | None]) -> np.ndarray:
    """(len(docs), 3): recall R and precision P of the message's token states with each doc's (0 for a doc
    without states), and P_low, the mean over the doc's worst-met third of tokens: one product for all the
    docs, the maxima by segment. ~100 candidates of ~40 states against an 80-token message: one BLAS product
    (80 x 4,000 x 64); the per-doc maxima by `reduceat` took 0.4 ms where a loop took 6 ms. P apart from R
    tells a near miss (the fact-check's own point missing from the message) from a restatement with context
    (the message's extra words missing from the fact-check); P_low looks for that missing point where the
    names both share lift P."""
    out = np.zeros((len(docs), 3))
    have = [i for i, d in enumerate(docs) if d is not None and len(d)]
    if not have or not len(message):
        return out
    lens = np.array([len(docs[i]) for i in have])  # type: ignore[arg-type]
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    sims = np.asarray(message, dtype=np.float32) @ np.concatenate([docs[i] for i in have]).astype(np.float32).T
    out[have, 0] = np.maximum.reduceat(sims, starts, axis=1).mean(axis=0)  # each message token's best, per doc
    best = sims.max(axis=0)
    out[have, 1] = np.add.reduceat(best, starts) / lens         # each doc token's best, per doc
    padded = np.full((len(have), int(lens.max())), np.inf, dtype=np.float32)  # each doc's tokens in a row
    padded[np.repeat(np.arange(len(have)), lens), np.arange(len(best)) - np.repeat(starts, lens)] = best
    low = np.maximum(lens // 3, 1)
    ranked = np.sort(padded, axis=1)
    out[have, 2] = np.where(np.arange(ranked.shape[1]) < low[:, None], ranked, 0).sum(axis=1) / low
    return out


def harmonic(rp: np.ndarray) -> np.ndarray:
    """F of `alignment_rp`'s rows."""
    return 2 * rp[:, 0] * rp[:, 1] / np.maximum(rp[:, 0] + rp[:, 1], 1e-9)


def alignment_f(message: np.ndarray, docs: Sequence[np.ndarray | None]) -> np.ndarray:
    """F of the message's token states with each doc's (0 for a doc without states)."""
    return harmonic(alignment_rp(message, docs))


# A tracked message's states are stored with its vector point (storage/message_vectors.py) for the story
# models' alignment columns: the first STORED_TOKENS tokens (a news post leads with its event), each unit
# row as int8 (x127), base64 in the payload: ~40 tokens x 64 bytes = 2.6 KB for a short post, 11 KB at most.
STORED_TOKENS = 128
_SCALE = 127.0


def pack_states(states: np.ndarray | None) -> str:
    """Projected unit-row states -> the payload string ("" for none)."""
    if states is None or not len(states):
        return ""
    q = np.clip(np.rint(np.asarray(states[:STORED_TOKENS], dtype=np.float32) * _SCALE), -127, 127).astype(np.int8)
    return base64.b64encode(q.tobytes()).decode("ascii")


def unpack_states(packed: str | None) -> np.ndarray | None:
    """The payload string -> (tokens, PROJECTION_DIM) float32 rows (None for none)."""
    if not packed:
        return None
    q = np.frombuffer(base64.b64decode(packed), dtype=np.int8).reshape(-1, PROJECTION_DIM)
    return q.astype(np.float32) / _SCALE


def stored_states(states: np.ndarray | None) -> np.ndarray | None:
    """The states as a stored message's read back (cut and quantised): what evaluations should compare."""
    return unpack_states(pack_states(states))
