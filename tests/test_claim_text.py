"""The claim, not the wrapper (core/intake/claim_text.py): forward headers, alarms, calls to share, hashtags,
handles, links, emoji runs, greetings and tag questions are set aside in every language alike."""

from __future__ import annotations

import pytest

from core.intake.claim_text import claim_text


@pytest.mark.parametrize("message,claim", [
    ("СРОЧНО! Вышки 5G распространяют коронавирус. Перешлите всем, пока не удалили",
     "Вышки 5G распространяют коронавирус."),
    ("Переслано из Readovka\n⚡️⚡️ Высадку на Луну в 1969 году сняли в павильоне #луна @readovka t.me/readovka",
     "Высадку на Луну в 1969 году сняли в павильоне"),
    ("Привет всем! Говорят, что вакцины вызывают аутизм. Это правда?", "Говорят, что вакцины вызывают аутизм."),
    ("ТЕРМІНОВО!!! Вежі 5G поширюють коронавірус 😱😱 Поширте, поки не видалили! Підписуйтесь на @truexa",
     "Вежі 5G поширюють коронавірус"),
    ("Forwarded from Breaking911: BREAKING: Bill Gates wants to microchip everyone via vaccines. "
     "Share before they delete it!", "Bill Gates wants to microchip everyone via vaccines."),
    ("Правда ли, что вышки 5G распространяют коронавирус?", "Правда ли, что вышки 5G распространяют коронавирус?"),
])
def test_the_wrapper_is_set_aside(message: str, claim: str) -> None:
    assert claim_text(message) == claim


@pytest.mark.parametrize("message", ["Спасибо!", "Привет!", "⚡️⚡️", "Share this!"])
def test_a_message_that_is_all_wrapper_comes_back_as_it_was(message: str) -> None:
    assert claim_text(message) == message


@pytest.mark.parametrize("message", [
    "Зеленський підписав закон про мобілізацію жінок",
    "Дорогі підписники, ніякої пандемії не існувало.",
    "Tesla shares fell 10% after the recall",
    "Netflix lost a million subscribers in Russia",
    "Росія перешкоджає евакуації з Маріуполя",
    "США надішлють війська до Польщі",
    "Украину поделили на зоны влияния",
])
def test_words_that_only_look_like_a_call_to_share_keep_their_sentence(message: str) -> None:
    """Signing, subscribers, shares, obstacles, sending troops, dividing: claims, not calls to share."""
    assert claim_text(message) == message


@pytest.mark.parametrize("message,claim", [
    ("Гідромет попередив про снігопад у Львові, переслано з каналу «Погода Західна».",
     "Гідромет попередив про снігопад у Львові"),
    ("В Казани закрыли все школы на карантин, пишут в местных пабликах. Переслано.",
     "В Казани закрыли все школы на карантин"),
    ("The mayor banned e-scooters downtown, forwarded from a neighbourhood group", "The mayor banned e-scooters downtown"),
    ("Мэр снёс рынок за одну ночь. Так пишут в канале «Город сегодня».", "Мэр снёс рынок за одну ночь."),
])
def test_where_a_forward_came_from_is_wrapper(message: str, claim: str) -> None:
    assert claim_text(message) == claim


@pytest.mark.parametrize("message", [
    "Письмо было переслано в ФСБ, утверждает источник.",
    "Лавров заявил, что переговоров не будет, пишет ТАСС.",
    "Росія не розривала економічних зв'язків з Україною, кажуть у Кремлі.",
])
def test_who_said_it_is_part_of_the_claim(message: str) -> None:
    """A claim is often about what someone said: only a channel, chat or studio named as the source goes."""
    assert claim_text(message) == message


def test_a_source_is_a_header_only_before_a_colon() -> None:
    kept = claim_text("Источник в Кремле сообщил, что Путин серьёзно болен.\nВидео в комментариях 👇")
    assert kept.startswith("Источник в Кремле сообщил, что Путин серьёзно болен."), kept
    assert claim_text("Источник: ТАСС\nВСУ отступили из Авдеевки.").endswith("ВСУ отступили из Авдеевки.")
