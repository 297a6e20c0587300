"""Which writing system a text is in: the English models read Latin-script text, the multilingual ones the rest.

Matching, confidence and same-story linking all route a text by this one test, so it lives below them.
"""

from __future__ import annotations

import re

_LATIN_LETTER = re.compile(r"[A-Za-z\u00C0-\u024F]")
_LETTER = re.compile(r"[^\W\d_]")


def latin_script(text: str) -> bool:
    """True when Latin letters are at least half of the text's letters: what the English model reads.
    A Russian sentence framing an English phrase ("Говорят что 5G towers cause COVID") is not."""
    return latin_share(text) >= 0.5


def latin_share(text: str) -> float:
    """Share of the text's letters that are Latin (1.0 for a text without letters)."""
    letters = len(_LETTER.findall(text))
    return len(_LATIN_LETTER.findall(text)) / letters if letters else 1.0
