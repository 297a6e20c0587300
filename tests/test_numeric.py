"""core.numeric: parsing numbers, units and dates, and the ±2% / ±1 unit comparison."""

from __future__ import annotations

import pytest

from core.numeric import compare, extract_quantities


def q(text: str) -> list[tuple[str, str, float, str]]:
    return [(x.text, x.dim, round(x.value, 3), x.op) for x in extract_quantities(text) if x.dim != "date"]


@pytest.mark.parametrize("text, value", [
    ("9,000 satellites", 9000.0), ("9k satellites", 9000.0), ("1.5 million people", 1_500_000.0),
    ("1,5 млн человек", 1_500_000.0), ("2 billion", 2e9), ("12 000\u00a0", 12.0),
])
def test_counts_with_separators_and_scales(text, value):
    assert q(text)[0][2] == value


def test_units_normalise_but_keep_the_users_text():
    [(text, dim, value, _)] = q("Water boils at 50C.")
    assert (text, dim, value) == ("50C", "temp", 50.0)  # the user's error is kept as written
    assert [x[2] for x in q("Water boils at 100 °C (212 °F).")] == [100.0, 100.0]
    assert q("The bridge is 10 miles long")[0][1:3] == ("length", 16093.44)
    assert q("It weighs 2 lb")[0][1:3] == ("mass", 0.907)
    assert q("Unemployment hit 4.5%")[0][1:3] == ("percent", 4.5)
    assert q("It costs $9m")[0][1:3] == ("usd", 9_000_000.0)
    assert q("It was -5°C at night")[0][2] == -5.0


def test_names_with_digits_are_not_quantities():
    assert q("5G towers spread COVID-19") == []
    assert q("An A380 landed") == []
    assert q("The 2nd attempt failed") == []


@pytest.mark.parametrize("claim, passage, expected", [
    ("Water boils at 50C at sea level.", "At sea level water boils at 100 °C (212 °F).", "disagree"),
    ("Water boils at 212F.", "Water boils at 100 °C.", "agree"),
    ("The bridge is 16 km long.", "The bridge is 10 miles long.", "agree"),  # 16.09 km, within 2%
    ("There were 9,000 satellites.", "There were 9,180 satellites.", "agree"),  # 2.0%
    ("There were 9,000 satellites.", "There were 9,200 satellites.", "disagree"),  # 2.2%
    ("Five people: 5 died.", "6 people died.", "agree"),  # ±1 unit beats 2% for small numbers
    ("5 people died.", "7 people died.", "disagree"),
    ("Active spacecraft exceeded 9,000 in 2024.", "We counted 9,210 satellites on January 1, 2024.", "agree"),
    ("Fewer than 100 people came.", "Some 120 people came.", "disagree"),
    ("About 1,000 people came.", "Police counted 1,080 people.", "agree"),
    ("Inflation was 3%.", "Inflation was 5 percent.", "disagree"),
    ("Inflation was 3%.", "3 ministers resigned.", "n/a"),  # a count is not a percentage
    ("The law passed in 2019.", "The law passed in March 2019.", "agree"),
    ("The law passed in 2019.", "The law passed in 2020.", "disagree"),
    ("It happened on January 1, 2024.", "It happened on 2 January 2024.", "agree"),  # ±1 day: time zones
    ("It happened on January 1, 2024.", "It happened on 5 January 2024.", "disagree"),
    ("Это случилось 15 января 2024 года.", "Событие произошло 2024-01-15.", "agree"),
    ("The sky is blue.", "It is 5 km up.", "n/a"),
    ("It is 5 km up.", "The sky is blue.", "n/a"),
])
def test_compare(claim, passage, expected):
    assert compare(claim, passage).result == expected


def test_disagreement_detail_quotes_both_sides():
    check = compare("Water boils at 50C.", "Water boils at 100 °C.")
    assert "50C" in check.detail and "100 °C" in check.detail
