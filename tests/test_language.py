"""Language identification (core/language.py): py3langid over the languages e5 reads, Russian and
Ukrainian told apart by their own letters where the model hesitates, English where it is plausible."""

from __future__ import annotations

import pytest

from core.language import detect_language, reply_language


@pytest.mark.parametrize("text,lang", [
    ("Las vacunas causan autismo", "es"), ("Impfstoffe verursachen Autismus", "de"),
    ("Szczepionki powodują autyzm", "pl"), ("Les vaccins provoquent l'autisme", "fr"),
    ("ვაქცინები იწვევს აუტიზმს", "ka"), ("اللقاحات تسبب التوحد", "ar"),
    ("Vaccines cause autism", "en"), ("Kyiv curfew from Monday", "en"), ("hello", "en"),
    ("Вышки 5G распространяют коронавирус", "ru"), ("Вежі 5G поширюють коронавірус", "uk"),
    ("Вакцини викликають аутизм", "uk"), ("Говорят что 5G towers cause COVID, это правда?", "ru"),
])
def test_languages(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_replies_stay_in_english_russian_or_ukrainian() -> None:
    assert [reply_language(x) for x in ("ru", "uk", "en", "es", "ka")] == ["ru", "uk", "en", "en", "en"]
