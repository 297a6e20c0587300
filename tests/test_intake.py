import pytest

from core.intake import EmptyInput, detect_language, extract_urls, intake


@pytest.mark.parametrize("raw", ["", "   \n\t ", "\x00\x00", "\u200b\u200b", "!!! ...", b"\x00\x01\x02"])
def test_nothing_to_check_is_refused_with_a_sentence(raw):
    with pytest.raises(EmptyInput, match="no text to check"):
        intake(raw)


def test_text_is_normalised_and_control_characters_removed():
    got = intake("Cafe\u0301  is\x00 open\r\n\r\n\r\n\ttoday\u200b")
    assert got.text == "Café is open\n\ntoday"
    assert not got.truncated and got.notes == []


def test_long_text_is_truncated_with_a_note_at_a_word_boundary():
    got = intake("word " * 2000, max_chars=4096)
    assert got.truncated
    assert len(got.text) <= 4096 and got.text.endswith("word")
    assert "4096" in got.notes[0]


def test_binary_bytes_are_decoded_not_crashing():
    got = intake(b"\xff\xfe 5G causes covid \x00")
    assert "5G causes covid" in got.text


def test_urls_are_extracted_without_trailing_punctuation():
    text = "See https://example.org/a?b=1, and www.snopes.com/fact-check/x). Also http://t.co/abc."
    assert extract_urls(text) == ["https://example.org/a?b=1", "https://www.snopes.com/fact-check/x",
                                  "http://t.co/abc"]


@pytest.mark.parametrize("text,lang", [("Вышки 5G распространяют коронавирус", "ru"),
                                       ("5G towers spread the coronavirus", "en"),
                                       ("Вышки 5G распространяют COVID-19 virus", "ru")])
def test_language_follows_the_majority_script(text, lang):
    assert detect_language(text) == lang
