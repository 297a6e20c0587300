"""Cyrillic -> Latin transliteration for matching names across scripts (Трамп ~ Trump, Гейтс ~ Gates).

Two spellings of a word: `latin()` is the BGN/PCGN-style romanisation an English newsroom uses
("Зеленский" -> "zelenskiy", "Путин" -> "putin"); `skeleton()` keeps only its consonants, so the
vowels that English spelling takes from the original name and Russian from its sound stop mattering:
"трамп" -> "trmp" = "trump" -> "trmp", "гейтс" -> "gts" = "gates" -> "gts", "байден" -> "bdn" =
"biden". Both work on Russian and Ukrainian letters.
"""

from __future__ import annotations

import re

# BGN/PCGN-like, lower case; ь and ъ drop. Ukrainian letters: і i, ї yi, є ye, ґ g, and г reads "h"
# in Ukrainian but "g" in Russian names as English spells them (Гейтс -> Gates): "g" it is.
_TABLE = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "",
    "э": "e", "ю": "yu", "я": "ya", "і": "i", "ї": "yi", "є": "ye", "ґ": "g", "'": "", "’": "",
}
_CYRILLIC = re.compile(r"[а-яёіїєґ]")
_VOWELS = re.compile(r"[aeiouy]+")
# Consonant clusters that English spellings of Russian names write with one letter, folded on both
# sides before the vowels go: "kh"/"h" (Хабаровск, Khabarovsk), "ts"/"tz"/"c" (Цукерберг, Zuckerberg
# has "ck"), "ks"/"x" (Максим, Maxim), doubled letters (Гейтс vs Gatess), "zh"/"j".
_FOLDS = (("shch", "sh"), ("kh", "h"), ("ck", "k"), ("tz", "ts"), ("ks", "x"), ("zh", "j"), ("dzh", "j"),
          ("ph", "f"), ("w", "v"), ("q", "k"))
_DOUBLE = re.compile(r"(.)\1+")


def cyrillic(word: str) -> bool:
    return bool(_CYRILLIC.search(word.lower()))


def latin(word: str) -> str:
    """The word romanised, lower case; Latin letters and digits pass through."""
    return "".join(_TABLE.get(ch, ch) for ch in word.lower())


def skeleton(word: str) -> str:
    """Consonant skeleton of a Latin (or romanised Cyrillic) word: clusters folded, vowels and
    doubled letters dropped. "trump" and "трамп" both give "trmp"."""
    w = latin(word) if cyrillic(word) else word.lower()
    for a, b in _FOLDS:
        w = w.replace(a, b)
    w = w.replace("c", "k") if "c" in w and "ch" not in w else w
    return _DOUBLE.sub(r"\1", _VOWELS.sub("", w))
