#!/usr/bin/env python3
"""Write core/data/seed_multilingual.npz and core/data/seed_use.npz: the multilingual passage vector
and token states (e5, run by the default `TIPLINE_MULTILINGUAL_ENGINE`) and the USE vector of every seed fact-check
(claim + headline, as core/matching/knowledge_base.py embeds them), and e5's query vector and token states of each claim,
so that a new data dir loads the seed without
running e5 or USE over it (core/encoders/multilingual.py: WithPrecomputedPassages, core/encoders/use_encoder.py:
WithPrecomputed). Rerun after editing the seed file;
tests/test_multilingual.py and tests/test_use_encoder.py fail until you do.

usage: .venv/bin/python -m training.seed_vectors
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bot.app import multilingual_engine
from bot.settings import Settings
from core.matching.knowledge_base import load_seed_factchecks
from core.matching.features import doc_text
from core.encoders.multilingual import SEED_VECTORS
from core.encoders.use_encoder import SEED_USE_VECTORS, UseEncoder
from core.textclean import clean_query

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    texts = sorted({doc_text(fc.claim, fc.title) for fc in load_seed_factchecks()})
    claims = sorted({clean_query(fc.claim) for fc in load_seed_factchecks()})
    with tempfile.TemporaryDirectory() as tmp:  # the engine's graph is built there, then dropped
        # The shipped table is read only by the default engine: its default, whatever this shell's TIPLINE_* say.
        engine = Settings.model_fields["multilingual_engine"].default
        enc = multilingual_engine(Settings(_env_file=None, data_dir=Path(tmp), model_cache_dir=Path(tmp),  # type: ignore[call-arg]
                                           multilingual_engine=engine))
        vecs, states = enc.passages_with_states_sync(texts)
        queries, query_states = enc.queries_with_states_sync(claims)
    # float16 halves the file; the cosine to the float32 vectors stays above 0.9999. The token states
    # (core/encoders/token_align.py) are float16 already, end to end, with each text's count.
    np.savez_compressed(SEED_VECTORS, texts=np.array(texts), vectors=vecs.astype(np.float16),
                        model=np.array(enc.model_name), states=np.concatenate(states),
                        state_lens=np.array([len(m) for m in states], np.int64),
                        states_model=np.array(enc.states_model),
                        query_texts=np.array(claims), query_vectors=queries.astype(np.float16),
                        query_states=np.concatenate(query_states),
                        query_state_lens=np.array([len(m) for m in query_states], np.int64))
    print(f"{len(texts)} vectors written to {SEED_VECTORS.relative_to(ROOT)}")
    use = UseEncoder()
    np.savez_compressed(SEED_USE_VECTORS, texts=np.array(texts), vectors=use.encode_sync(texts).astype(np.float16),
                        model=np.array(use.model_name))
    print(f"{len(texts)} vectors written to {SEED_USE_VECTORS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
