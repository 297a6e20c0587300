from core.textclean import (
    DEFAULT_STEPS, STEPS, clean_query, hashtag_to_words, remove_emoji, remove_pic_links, remove_urls,
    strip_forward_header, strip_signature,
)

TWEET = ("BREAKING: Trump declared a ban on face veils #FreeIran2020pic.twitter.com/ygE8EOb300 "
         "https://t.co/TajLeL4tA4 — Some Name (@some_handle) February 4, 2017")


def test_links_removed_even_when_glued_to_a_word():
    out = remove_urls(remove_pic_links(TWEET))
    assert "pic.twitter.com" not in out and "t.co" not in out
    assert "#FreeIran2020" in out


def test_default_cleaning_keeps_the_claim_and_drops_links():
    out = clean_query(TWEET)
    assert out.startswith("BREAKING: Trump declared a ban on face veils")
    assert "http" not in out and "pic.twitter" not in out
    assert "  " not in out


def test_signature_step():
    assert strip_signature(TWEET).endswith("https://t.co/TajLeL4tA4")
    assert strip_signature("no signature here") == "no signature here"


def test_hashtag_words_split_camel_case():
    assert hashtag_to_words("stand with #FreeIran2020") == "stand with Free Iran 2020"


def test_forward_headers_english_and_russian():
    assert clean_query("Forwarded from News Channel\nWHO says 5G spreads covid") == "WHO says 5G spreads covid"
    assert strip_forward_header("Переслано от Иван Петров\nВакцина содержит чипы") == "Вакцина содержит чипы"


def test_russian_text_survives():
    text = "Вакцина от COVID-19 содержит микрочипы, ёлки-палки! 😱"
    out = clean_query(text)
    assert "Вакцина от COVID-19 содержит микрочипы, ёлки-палки!" in out
    assert remove_emoji("чипы 😱🇷🇺") .strip() == "чипы"


def test_never_empty_and_steps_exist():
    assert clean_query("https://t.co/abc") == "https://t.co/abc"
    assert clean_query("") == ""
    assert all(s in STEPS for s in DEFAULT_STEPS)
