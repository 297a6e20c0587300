"""The numeric and date check: do the claim's numbers match a passage's?

Parses numbers ("9,000", "9k", "1.5 million", "1,5 млн", "40%"), units (°C/°F, km/m/miles/ft, kg/g/lb/t,
km/h/mph, $/€/£) and dates (years, "January 1, 2024", "2024-01-01", "01.01.2024", Russian month names),
normalises units to one per dimension, and compares each claim quantity with the passage's quantities
of the same dimension:

- every quantity becomes an interval. A claim's plain value gets a tolerance of
  ±2% or ±1 of the claim's own unit, whichever is wider; "more than X" / "less than X" are half-lines;
  "about X" is ±10% (news copy rounds "about" figures to one or two leading digits; a judgment call).
  A date is the interval of its precision (a year is the whole year, a day is that day ±1 for time zones).
- a claim quantity agrees when some passage quantity's interval overlaps it, disagrees when the passage
  has quantities of that dimension and none overlaps, and is n/a otherwise.
- the passage: "disagree" if any claim quantity disagrees, else "agree" if any agrees, else "n/a".

The claim's text is never corrected: "water boils at 50C" is compared as 50 °C, and reported as "50C".
This is evidence for the judge (a feature and a hint to the LLM), not a verdict by itself: a passage
holds many numbers, and a coincidental match or an unrelated figure of the same dimension is possible.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

Result = Literal["agree", "disagree", "n/a"]
Op = Literal["=", ">", ">=", "<", "<=", "~"]

# unit words -> (dimension, canonical factor, offset); value_canonical = value * factor + offset
_UNITS: dict[str, tuple[str, float, float]] = {}


def _unit(dim: str, factor: float, offset: float, *names: str) -> None:
    for n in names:
        _UNITS[n.lower()] = (dim, factor, offset)


_unit("temp", 1.0, 0.0, "°c", "ºc", "c", "degrees celsius", "degree celsius", "degrees c", "celsius",
      "°с", "с", "градусов цельсия", "градуса цельсия", "градус цельсия", "градусов", "градуса", "градус")
_unit("temp", 5 / 9, -32 * 5 / 9, "°f", "ºf", "f", "degrees fahrenheit", "degree fahrenheit", "degrees f",
      "fahrenheit")
_unit("length", 1000.0, 0.0, "km", "kilometers", "kilometres", "kilometer", "kilometre", "км")
_unit("length", 1.0, 0.0, "m", "meters", "metres", "meter", "metre", "м")
_unit("length", 0.01, 0.0, "cm", "centimeters", "centimetres", "см")
_unit("length", 1609.344, 0.0, "mi", "miles", "mile", "миль", "мили")
_unit("length", 0.3048, 0.0, "ft", "feet", "foot")
_unit("mass", 1.0, 0.0, "kg", "kilograms", "kilogram", "kilos", "кг")
_unit("mass", 0.001, 0.0, "g", "grams", "gram", "г")
_unit("mass", 1000.0, 0.0, "t", "tonnes", "tonne", "tons", "ton", "т", "тонн", "тонны")
_unit("mass", 0.45359237, 0.0, "lb", "lbs", "pounds", "pound")
_unit("speed", 1.0, 0.0, "km/h", "kph", "km/hr", "км/ч")
_unit("speed", 1.609344, 0.0, "mph", "miles per hour")
_unit("percent", 1.0, 0.0, "%", "percent", "per cent", "pct", "процентов", "процента", "процент")
_unit("usd", 1.0, 0.0, "$", "usd", "dollars", "dollar", "долларов", "доллара")
_unit("eur", 1.0, 0.0, "€", "eur", "euros", "euro", "евро")
_unit("gbp", 1.0, 0.0, "£", "gbp")

_ONE_LETTER = {"C", "F", "m", "g", "t", "с", "м", "г", "т", "%", "$", "€", "£"}

_SCALES = {
    "k": 1e3, "thousand": 1e3, "thousands": 1e3, "тыс": 1e3, "тысяч": 1e3, "тысячи": 1e3, "тысяча": 1e3,
    "million": 1e6, "millions": 1e6, "mln": 1e6, "mn": 1e6, "млн": 1e6, "миллионов": 1e6, "миллиона": 1e6,
    "миллион": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "млрд": 1e9, "миллиардов": 1e9,
    "миллиарда": 1e9, "миллиард": 1e9, "trillion": 1e12, "трлн": 1e12,
}

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
    "января": 1, "февраля": 2, "марта": 3, "апреля": 4, "мая": 5, "июня": 6, "июля": 7, "августа": 8,
    "сентября": 9, "октября": 10, "ноября": 11, "декабря": 12,
}
_MONTH_RE = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))

_DATE_PATTERNS = [
    # 2024-01-15
    (re.compile(r"\b(?P<y>(?:1[6-9]|20)\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b"), "ymd"),
    # 15.01.2024 / 15/01/2024 (day first: the international and Russian order)
    (re.compile(r"\b(?P<d>[0-3]?\d)[./](?P<m>[01]?\d)[./](?P<y>(?:1[6-9]|20)\d\d)\b"), "dmy"),
    # January 1, 2024 / Jan 1 2024
    (re.compile(rf"\b(?P<mn>{_MONTH_RE})\.?\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?,?\s+(?P<y>(?:1[6-9]|20)\d\d)\b",
                re.IGNORECASE), "mdy"),
    # 1 January 2024 / 1 января 2024 г.
    (re.compile(rf"\b(?P<d>[0-3]?\d)\s+(?P<mn>{_MONTH_RE})\.?,?\s+(?P<y>(?:1[6-9]|20)\d\d)\b", re.IGNORECASE),
     "dmy"),
    # January 2024
    (re.compile(rf"\b(?P<mn>{_MONTH_RE})\.?,?\s+(?P<y>(?:1[6-9]|20)\d\d)\b", re.IGNORECASE), "my"),
]
_YEAR = re.compile(r"(?<![\d.,$€£])\b(?P<y>(?:1[6-9]|20)\d\d)\b(?![.,]\d)(?!\s*(?:%|°|km|kg|m\b|people|тыс))")

_OPS: list[tuple[re.Pattern[str], Op]] = [
    (re.compile(r"(?:at least|no (?:fewer|less) than|не менее|как минимум)\s*$", re.I), ">="),
    (re.compile(r"(?:at most|no more than|не более|максимум)\s*$", re.I), "<="),
    (re.compile(r"(?:more than|over|above|exceed(?:s|ed|ing)?|surpass(?:es|ed|ing)?|greater than|topp(?:ed|ing)|"
                r"beyond|upwards of|больше|более|свыше|превыси\w*|превышает)\s*(?:the\s+)?$", re.I), ">"),
    (re.compile(r"(?:less than|fewer than|under|below|меньше|менее|ниже)\s*$", re.I), "<"),
    (re.compile(r"(?:about|around|approximately|approx\.?|nearly|almost|roughly|some|circa|~|около|почти|"
                r"примерно|приблизительно|порядка)\s*$", re.I), "~"),
]
_NUMBER = re.compile(
    r"(?P<cur>[$€£])?\s?(?<![\w.])(?P<num>\d{1,3}(?:(?:,|\u00a0|\u202f)\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)"
    r"(?!\d)"
)
_UNIT_AFTER = re.compile(
    r"\s?(?P<scale>k\b|K\b|thousands?|millions?|mln|mn\b|bn\b|billions?|trillion|тыс\w*\.?|млн|млрд|"
    r"миллион\w*|миллиард\w*|трлн)?\s?(?P<unit>"
    + "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
    + r")?(?![\wа-яё])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quantity:
    text: str  # as written ("50C", "9,000", "1.5 million"): reports quote the user, never a correction
    dim: str  # "count", "temp", "length", "mass", "speed", "percent", "usd", "eur", "gbp", "date"
    value: float  # canonical unit; for dates the first day's ordinal
    op: Op = "="
    unit_size: float = 1.0  # one of the writer's units in the canonical unit (1 °F = 5/9 °C)
    span_days: int = 0  # dates: how many days the written precision covers (year ≈ 365)

    def interval(self, *, claim: bool) -> tuple[float, float]:
        if self.dim == "date":
            slack = 1 if self.span_days == 1 else 0
            return self.value - slack, self.value + self.span_days - 1 + slack
        v = self.value
        if self.op in (">", ">="):
            return (v if self.op == ">=" else math.nextafter(v, math.inf)), math.inf
        if self.op in ("<", "<="):
            return -math.inf, (v if self.op == "<=" else math.nextafter(v, -math.inf))
        if not claim and self.op == "=":
            return v, v
        tol = 0.10 * abs(v) if self.op == "~" else max(0.02 * abs(v), self.unit_size)
        return v - tol, v + tol


@dataclass
class NumericCheck:
    result: Result
    detail: str = ""
    claim_quantities: list[Quantity] = field(default_factory=list)
    agreeing: list[tuple[str, str]] = field(default_factory=list)  # (claim text, passage text)
    disagreeing: list[tuple[str, list[str]]] = field(default_factory=list)  # (claim text, passage texts)


def _parse_number(raw: str) -> float:
    s = raw.replace("\u00a0", "").replace("\u202f", "")
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        return float(s.replace(",", ""))
    return float(s.replace(",", "."))  # "1,5" is a decimal comma (ru, de, ...)


def _op_before(text: str, start: int) -> Op:
    before = text[max(0, start - 30):start]
    for pattern, op in _OPS:
        if pattern.search(before):
            return op
    return "="


def _dates(text: str) -> tuple[list[Quantity], list[tuple[int, int]]]:
    out: list[Quantity] = []
    spans: list[tuple[int, int]] = []

    def taken(a: int, b: int) -> bool:
        return any(a < e and s < b for s, e in spans)

    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if taken(m.start(), m.end()):
                continue
            g = m.groupdict()
            try:
                y = int(g["y"])
                mo = _MONTHS[g["mn"].lower().rstrip(".")] if g.get("mn") else int(g["m"])
                if kind == "my":
                    first = date(y, mo, 1)
                    nxt = date(y + (mo == 12), mo % 12 + 1, 1)
                    out.append(Quantity(m.group(0), "date", first.toordinal(), span_days=(nxt - first).days))
                else:
                    d = date(y, mo, int(g["d"]))
                    out.append(Quantity(m.group(0), "date", d.toordinal(), span_days=1))
            except (ValueError, KeyError):
                continue
            spans.append((m.start(), m.end()))
    for m in _YEAR.finditer(text):
        if taken(m.start(), m.end()):
            continue
        y = int(m.group("y"))
        first = date(y, 1, 1)
        out.append(Quantity(m.group(0), "date", first.toordinal(), span_days=(date(y + 1, 1, 1) - first).days))
        spans.append((m.start(), m.end()))
    return out, spans


def extract_quantities(text: str) -> list[Quantity]:
    """Every number, measurement, percentage and date in `text`, in canonical units."""
    found, spans = _dates(text)
    for m in _NUMBER.finditer(text):
        a, b = m.start("num"), m.end("num")
        if any(a < e and s < b for s, e in spans):
            continue
        if b < len(text) and text[b:b + 2].lower() in ("st", "nd", "rd", "th") and not text[b + 2:b + 3].isalpha():
            continue  # ordinals ("1st") are ranks, not quantities
        value = _parse_number(m.group("num"))
        if a >= 1 and text[a - 1] in "-−" and (a == 1 or not text[a - 2].isalnum()):
            value, a = -value, a - 1  # "-5°C"
        after = _UNIT_AFTER.match(text, b)
        scale_word = (after.group("scale") or "") if after else ""
        unit_word = (after.group("unit") or "") if after else ""
        end = after.end() if after and (scale_word or unit_word) else b
        if scale_word:
            key = scale_word.lower().rstrip(".")
            scale = _SCALES.get(key) or next((v for k, v in _SCALES.items() if key.startswith(k) and len(k) > 2), 1.0)
            value *= scale
        dim, factor, offset = "count", 1.0, 0.0
        if unit_word:
            u = unit_word.lower()
            # A one-letter unit counts only glued to the number and in its own case ("50C", "5m", "5g"):
            # "5G" is a network, "5 g" too ambiguous.
            glued = text[b:b + 1] not in (" ", "\u00a0")
            if len(unit_word) > 1 or (glued and unit_word in _ONE_LETTER):
                dim, factor, offset = _UNITS[u]
            else:
                unit_word = ""
                end = b + (len(scale_word) + 1 if scale_word else 0)
        if not scale_word and not unit_word and text[b:b + 1].isalpha():
            continue  # glued to a word: a name like "5G", "A380", "F-35", not a quantity
        if a >= 2 and text[a - 1] == "-" and text[a - 2].isalnum() and value >= 0:
            continue  # "COVID-19", "F-35"
        cur = m.group("cur")
        if cur and unit_word.lower() == "m" and not scale_word:  # "$9m" is money, not metres
            value, dim = value * 1e6, "count"
        if cur and dim == "count":
            dim, factor, offset = _UNITS[cur]
        text_span = text[m.start("cur") if cur else a:end].strip()
        q = Quantity(text_span, dim, value * factor + offset, op=_op_before(text, m.start()),
                     unit_size=factor)
        found.append(q)
    return found


def compare(claim: str, passage: str) -> NumericCheck:
    """Compare the claim's quantities with the passage's (see the module docstring for the rule)."""
    cq = extract_quantities(claim)
    if not cq:
        return NumericCheck("n/a", "the claim has no numbers or dates", cq)
    pq = extract_quantities(passage)
    check = NumericCheck("n/a", "", cq)
    for q in cq:
        same = [p for p in pq if p.dim == q.dim]
        if not same:
            continue
        lo, hi = q.interval(claim=True)
        hit = next((p for p in same if _overlap((lo, hi), p.interval(claim=False))), None)
        if hit is not None:
            check.agreeing.append((q.text, hit.text))
        else:
            check.disagreeing.append((q.text, [p.text for p in same]))
    if check.disagreeing:
        check.result = "disagree"
        c, ps = check.disagreeing[0]
        check.detail = f"the claim says {c}; the source says {', '.join(ps[:3])}"
    elif check.agreeing:
        check.result = "agree"
        check.detail = "; ".join(f"{c} ≈ {p}" for c, p in check.agreeing[:3])
    else:
        check.detail = "the source states no comparable numbers or dates"
    return check


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]
