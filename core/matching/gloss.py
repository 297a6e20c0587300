"""A word-by-word English gloss of a Russian or Ukrainian message, for the English model to read.

Each Cyrillic word becomes its first translation in the cross-script lexicon
(`core/data/crosslingual_lexicon.tsv.gz`, see core/matching/crosslingual_terms.py), or its romanisation when the
lexicon has none ("Трамп" -> "tramp", "Австралии" -> "avstralii": names and places, which MiniLM's
word pieces still half recognise); Latin words, digits and punctuation stay as they are. The result
is bad English ("kak butterfly survive vo time fire v australia"), but MiniLM embeds it close to the
English claim it retells, and that similarity is a signal neither multilingual model carries.

Measured on our Russian dev tweets against the ~10k CLEF claims (plain dense, MiniLM claim vectors;
docs/decisions/2026-11-24-matching-measurements.md): the gloss alone MAP@5 0.442 and recall@40 0.731 (first translation only, unmapped
words kept in Cyrillic: 0.354 / 0.665; two translations per word: 0.436 / 0.706); z-scored fusion with
e5 0.765 / 0.954 against e5 alone 0.700 / 0.909.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from core.matching.transliterate import cyrillic, latin

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _key(word: str) -> str:
    """A word as the lexicon stores it (core.encoders.sparse.terms folds accents: "мой" -> "мои")."""
    folded = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in folded if not unicodedata.combining(ch))


def gloss(text: str, lexicon: Mapping[str, tuple[str, ...]]) -> str | None:
    """The text with every Cyrillic word replaced by its first English translation or, failing that,
    its romanisation; None when the text has no Cyrillic word (it is its own gloss, and the caller
    needs no second embedding)."""
    if not cyrillic(text):
        return None
    out = []
    for tok in _TOKEN.findall(text):
        if cyrillic(tok):
            alts = lexicon.get(_key(tok), ())
            out.append(alts[0] if alts else latin(tok))
        else:
            out.append(tok)
    return " ".join(out)
