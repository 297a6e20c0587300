#!/usr/bin/env python3
"""Write core/data/story_common_terms.npz: the term ids (as `core.corroboration.story_model.story_terms` makes them,
Cyrillic transliterated) of the N most frequent words of English, Russian and Ukrainian by wordfreq.

The same-story feature `shared` counts the terms two messages share that are NOT in this set: a rarity
that does not come from the store. Judged by the store's own document frequencies instead, a new
deployment's few hundred messages make ordinary words look rare ("power", "trains" in
tests/test_tracking.py's channels); docs/digest.md "Same-story linking" has the figures.

wordfreq is needed only here (`pip install wordfreq`), never at run time.

usage:
  python -m training.story_common_terms [--top 40000] [--out core/data/story_common_terms.npz]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from core.corroboration.story_model import COMMON_TERMS_FILE, _alias_terms, story_terms, transliterate

LANGUAGES = ("en", "ru", "uk")


def common_terms(top: int) -> np.ndarray:
    """Sorted unique term ids of the `top` most frequent words of each language."""
    try:
        import wordfreq
    except ImportError:
        raise SystemExit("wordfreq is not installed: pip install wordfreq (needed only by this tool)") from None
    ids = {t for lang in LANGUAGES for w in wordfreq.top_n_list(lang, top)
           for t in story_terms(_alias_terms(transliterate(w)))}
    return np.array(sorted(ids), dtype=np.uint32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=40_000, help="most frequent words taken from each language")
    ap.add_argument("--out", type=Path, default=COMMON_TERMS_FILE)
    args = ap.parse_args(argv)
    ids = common_terms(args.top)
    np.savez_compressed(args.out, ids=ids, top=np.array(args.top), languages=np.array(LANGUAGES))
    print(f"{args.out}: {len(ids)} term ids of the {args.top} most frequent words of {', '.join(LANGUAGES)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
