"""core/corroboration/story_numbers.py: a post's numbers written one way in every language, and the two columns the story
models read from two posts' numbers; core/encoders/token_align.py's stored states."""

from __future__ import annotations

import numpy as np
import pytest

from core.corroboration.story_numbers import number_features, story_numbers
from core.encoders.token_align import PROJECTION_DIM, STORED_TOKENS, pack_states, stored_states, unpack_states


@pytest.mark.parametrize("texts", [
    ("В Киеве с понедельника вводят комендантский час с 22:00 до 6:00",
     "Kyiv city hall says a curfew from 10pm to 6am starts on Monday"),
    ("Укренерго: завтра у Київській області відключення з 18:00 до 22:00",
     "Укрэнерго: завтра в Киевской области отключения света с 18 до 22 часов",
     "Ukrenergo: power cuts in Kyiv region tomorrow from 6pm to 10pm"),
    ("В Одессе комендантский час длится до 5 утра, с 11 вечера", "Odesa moves its curfew to 11pm-5am"),
    ("Из порта вышло судно с 40 тыс. тонн пшеницы", "з 40 тисячами тонн пшениці", "40,000 tonnes of wheat"),
    ("пакет помощи на 61 млрд долларов", "a $61 billion aid package", "пакет допомоги на $61 млрд"),
    ("пакет на 50 мільярдів євро", "a 50 billion euro package"),
    ("НБУ знизив облікову ставку з 15% до 14,5%", "the key rate cut to 14.5% from 15%"),
    ("trains from 5.30am Monday", "з понеділка о 5:30"),
])
def test_one_figure_reads_the_same_in_every_language(texts: tuple[str, ...]) -> None:
    first = story_numbers(texts[0])
    assert first and all(story_numbers(t) == first for t in texts[1:]), [sorted(story_numbers(t)) for t in texts]


def test_names_and_years_are_not_the_event_figures() -> None:
    assert story_numbers("COVID-19 and 5G, an F-35") == frozenset()
    assert story_numbers("у 2024 році") == story_numbers("in 2024") != story_numbers("2024 people")


def test_the_columns_overlap_or_apart() -> None:
    a = story_numbers("комендантский час с 23:00 до 5:00")
    rows = number_features(a, [story_numbers("curfew 11pm-5am"), story_numbers("a 50 billion euro package"),
                               frozenset(), story_numbers("from 11pm to 6am")])
    assert rows.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1 / 3, 0.0]]


def test_stored_states_are_the_first_tokens_within_a_quantum() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STORED_TOKENS + 20, PROJECTION_DIM)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    back = unpack_states(pack_states(x.astype(np.float16)))
    assert back is not None and back.shape == (STORED_TOKENS, PROJECTION_DIM)
    assert np.abs(back - x[:STORED_TOKENS]).max() < 0.005
    assert pack_states(None) == "" and unpack_states("") is None and stored_states(np.zeros((0, 64))) is None
