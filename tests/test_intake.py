import pytest

from core.intake.message import EmptyInput, detect_language, extract_urls, intake


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


def test_a_long_repetition_is_reduced_to_its_distinct_sentences_before_any_cut():
    got = intake("Vaccines cause autism. " * 5000, max_chars=4096)  # ~115 KB of one sentence
    assert got.text == "Vaccines cause autism."
    assert got.truncated and "1 distinct sentence" in got.notes[0]


def test_a_claim_after_the_cap_is_kept_as_the_most_check_worthy_sentence():
    chatter = "\n".join(f"Hello again, this is line {i} of my rambling" for i in range(200))  # > 4096 chars
    claim = "The WHO announced on 3 March 2020 that 5G towers in Wuhan spread the coronavirus."
    got = intake(chatter + "\n" + claim + "\n" + chatter, max_chars=4096)
    assert len(got.text) <= 4096 and claim in got.text
    assert "most check-worthy" in got.notes[0]


def test_links_anywhere_in_a_long_message_are_kept():
    got = intake("Read this! " * 1000 + "Source: https://factcheck.example/5g", max_chars=500)
    assert "https://factcheck.example/5g" in got.urls


def test_one_sentence_longer_than_the_cap_is_cut_at_a_word():
    got = intake("word " * 2000, max_chars=4096)
    assert got.truncated and got.text.endswith("word") and "only the first" in got.notes[0]
