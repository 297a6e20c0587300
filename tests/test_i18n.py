"""Replies in the user's language: every string has its Russian and Ukrainian form, and a Ukrainian
message is answered in Ukrainian, never in Russian."""

import pytest

from core.i18n import LANGUAGES, _STRINGS, t
from core.intake.message import detect_language


@pytest.mark.parametrize("language", [x for x in LANGUAGES if x != "en"])
def test_every_string_has_a_form_in_every_language(language):
    missing = [key for key, forms in _STRINGS.items() if not forms.get(language)]
    assert not missing, f"no {language} form for {missing}"


def test_templates_take_the_same_values_in_every_language():
    import string

    for key, forms in _STRINGS.items():
        fields = {lang: {f for _, f, _, _ in string.Formatter().parse(text) if f} for lang, text in forms.items()}
        assert all(f == fields["en"] for f in fields.values()), (key, fields)


@pytest.mark.parametrize("text, language", [
    ("Щеплення викликають аутизм у дітей", "uk"),
    ("Чи правда, що в Києві вимкнуть світло на тиждень?", "uk"),
    ("Вакцины вызывают аутизм у детей", "ru"),
    ("Это правда, что в Москве отключат свет?", "ru"),
    ("5G towers cause COVID", "en"),
    ("Говорят что 5G towers cause COVID, это правда?", "ru"),
])
def test_language_of_a_message(text, language):
    assert detect_language(text) == language


def test_ukrainian_falls_back_to_english_not_russian():
    _STRINGS["test.only_en_ru"] = {"en": "English", "ru": "Русский"}
    try:
        assert t("test.only_en_ru", "uk") == "English"
    finally:
        del _STRINGS["test.only_en_ru"]
    assert t("label.REFUTED", "uk") == "Неправда" and t("label.REFUTED", "ru") == "Ложь"
