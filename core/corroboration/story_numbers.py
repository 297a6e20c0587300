"""The numbers of a news post written the same way in every language, for the same-story decision:
"22:00", "10pm" and "10 вечора" are the hour 22; "40 тыс.", "40 тисяч" and "40,000" are 40000; "$61 млрд"
and "$61 billion" are 61e9 dollars. Quantities, units and dates come from `core.numeric`; this module adds
clock times and the Ukrainian scale words it does not know.

A retelling keeps its event's figures while another event of the same city or person has other ones,
which is what the story models read from two posts' sets (`number_features`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from core.numeric import extract_quantities

# A clock time: "22:00", "5.30am", "10pm", "10 p.m.", "6 утра", "10 вечора". The minutes' dot form needs
# am/pm after it ("5.30am"), or "1.5 million" would read as half past one.
_TIME = re.compile(
    r"(?<![\d.,:])(?P<h>[01]?\d|2[0-3])"
    r"(?:(?::(?P<m>[0-5]\d))(?:\s?(?P<ap1>a\.?m\.?|p\.?m\.?))?"
    r"|(?:\.(?P<m2>[0-5]\d))\s?(?P<ap2>a\.?m\.?|p\.?m\.?)"
    r"|\s?(?P<ap3>a\.?m\.?|p\.?m\.?)"
    r"|\s(?P<part>утра|ранку|вечера|вечора|дня))(?![\w])",
    re.IGNORECASE,
)
# Ukrainian scale words, written as core.numeric reads them (it knows the Russian and English ones).
_UK_SCALES = [(re.compile(r"(?<=\d)\s?тис(?:\w*|\.)", re.I), " тыс"),
              (re.compile(r"(?<=\d)\s?мільйон\w*", re.I), " млн"),
              (re.compile(r"(?<=\d)\s?мільярд\w*", re.I), " млрд"),
              (re.compile(r"(?<=\d)\s?трильйон\w*", re.I), " трлн"),
              (re.compile(r"(?<=\d)\s?(?:євро|евро|euros?|€)", re.I), ""),
              (re.compile(r"(?<=\d)\s?(?:доларів|долара|долларов|доллара|dollars?)", re.I), "")]
_EVENING = ("вечера", "вечора", "дня")


def _hour(m: re.Match[str]) -> str:
    h = int(m.group("h"))
    minutes = m.group("m") or m.group("m2") or "00"
    ap = (m.group("ap1") or m.group("ap2") or m.group("ap3") or "").lower().replace(".", "")
    part = (m.group("part") or "").lower()
    if (ap == "pm" or part in _EVENING) and h < 12:
        h += 12
    elif ap == "am" and h == 12:
        h = 0
    # A whole hour is the plain number, so "с 18 до 22 часов" meets "from 6pm to 10pm".
    return f"{h:g}" if minutes == "00" else f"time:{h}:{minutes}"


def story_numbers(text: str) -> frozenset[str]:
    """The post's numbers as canonical strings ("22", "6.1e+10", "14.5", "time:5:30", "date:738000"):
    the value without its unit (a currency is written as a sign, a word or not at all), dates apart."""
    text = text or ""
    out: set[str] = set()

    def take(m: re.Match[str]) -> str:
        out.add(_hour(m))
        return " " * len(m.group(0))
    rest = _TIME.sub(take, text)
    for pattern, word in _UK_SCALES:
        rest = pattern.sub(word, rest)
    for q in extract_quantities(rest):
        out.add(f"date:{q.value:.0f}" if q.dim == "date" else f"{abs(q.value):.3g}")
    return frozenset(out)


NUMBER_FEATURES: tuple[str, ...] = ("num_same", "num_apart")


def number_features(a: frozenset[str], others: Sequence[frozenset[str]] | Iterable[frozenset[str]]) -> np.ndarray:
    """(len(others), 2): the Jaccard overlap of two posts' numbers (0 when either has none), and 1 when both
    have numbers and share none (two events' figures)."""
    rows = []
    for b in others:
        if not a or not b:
            rows.append((0.0, 0.0))
            continue
        inter = len(a & b)
        rows.append((inter / len(a | b), float(inter == 0)))
    return np.asarray(rows, dtype=np.float64).reshape(-1, 2)
