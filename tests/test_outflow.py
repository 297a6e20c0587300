"""What leaves the machine, said from the running configuration (bot/outflow.py), in en/ru/uk."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.outflow import describe, outflow, sentence
from bot.settings import Settings


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(data_dir=tmp_path, _env_file=None, **kw)  # type: ignore[call-arg]


@pytest.mark.parametrize(("lang", "words"), [("en", "nothing from messages leaves the machine"),
                                             ("ru", "ничего из сообщений не покидает этот сервер"),
                                             ("uk", "нічого з повідомлень не залишає цей сервер")])
def test_the_defaults_send_nothing(tmp_path, lang, words):
    assert describe(outflow(_settings(tmp_path)), lang) == words


def test_search_without_an_llm_is_named_as_unused(tmp_path):
    o = outflow(_settings(tmp_path, gdelt_url="http://127.0.0.1:9/gdelt"))
    assert describe(o) == "nothing from messages leaves the machine (GDELT configured, used only with an LLM)"


def test_an_llm_and_search_are_named_with_where_they_go(tmp_path):
    o = outflow(_settings(tmp_path, llm_api_key="sk-test", llm_base_url="http://127.0.0.1:9/v1",
                          brave_api_key="b", max_links=2))
    en = describe(o)
    assert "the message text goes to the LLM at http://127.0.0.1:9/v1" in en
    assert "search words (never links) to Brave Search" in en and "up to 2 linked page(s)" in en
    ru = sentence(o, "ru")
    assert ru.startswith("Что уходит с этого сервера: текст сообщения отправляется языковой модели")
    assert "Brave Search" in ru


def test_offline_sends_nothing_whatever_is_configured(tmp_path):
    o = outflow(_settings(tmp_path, offline=True, llm_api_key="sk-test", brave_api_key="b"))
    assert describe(o, "uk") == "нічого з повідомлень не залишає цей сервер"


def test_fact_checkers_feeds_are_named_when_some_are_read(tmp_path):
    o = outflow(_settings(tmp_path, feeds=["https://checks.example/rss"]), stored_feeds=2)
    assert describe(o) == ("nothing from messages leaves the machine; 3 fact-checkers' feed(s) are read from their "
                           "sites (no message text in those requests)")
    assert "лент фактчекеров, читаемых с их сайтов: 3" in sentence(o, "ru")
    llm = outflow(_settings(tmp_path, llm_api_key="sk-test", max_links=0), stored_feeds=1)
    assert describe(llm, "uk").endswith("стрічок фактчекерів, що читаються з їхніх сайтів: 1 (у цих запитах немає "
                                        "тексту повідомлень)")
    assert outflow(_settings(tmp_path, offline=True), stored_feeds=4).feeds == 0
