#!/usr/bin/env python3
"""Fit the projection of e5's token states (core/encoders/token_align.py) and write core/data/e5_token_projection.npy.

The matrix is the top PROJECTION_DIM right singular vectors, not centred, of the layer-10 states of our own
seed fact-checks (core/data/seed_factchecks.jsonl: claim + headline as the knowledge base embeds them, ~4,400
tokens in English and Russian), so nothing of the evaluation data ships. Fitted on 2,000 CLEF claims instead,
the screen's MAP@5 was the same within 0.003 (docs/decisions/2026-11-24-matching-measurements.md). Changing the file re-computes every data
dir's stored states on its next start (the states' model name carries the file's digest).

usage: python -m training.token_projection [--out core/data/e5_token_projection.npy]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from core.encoders.e5_onnx_build import TOKEN_LAYER
from core.matching.features import doc_text
from core.encoders.token_align import PROJECTION, PROJECTION_DIM
from training import token_alignment as TA

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=PROJECTION)
    ap.add_argument("--seed", type=Path, default=ROOT / "core" / "data" / "seed_factchecks.jsonl")
    args = ap.parse_args(argv)
    seed = [json.loads(line) for line in args.seed.open(encoding="utf-8") if line.strip()]
    texts = [doc_text(s["claim"], s.get("title", "")) for s in seed]
    with tempfile.TemporaryDirectory() as tmp:
        states = TA.TokenStates(Path(tmp), layers=(TOKEN_LAYER,))(texts, "seed", query=False)[TOKEN_LAYER]
    proj = TA.fit_projection(states, PROJECTION_DIM).astype(np.float32)
    np.save(args.out, proj)
    print(f"{args.out}: {proj.shape} from {sum(len(s) for s in states)} token states of {len(texts)} fact-checks")


if __name__ == "__main__":
    main()
