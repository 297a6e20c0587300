"""What from a message leaves the machine, and to whom, read from the running configuration: said by
`tipline doctor` and the start banner to operators, and by /start and /help to end users, in their language.

One description, so the three never disagree: with the defaults nothing leaves; an LLM gets the message
text; search providers get search words (never links, core/evidence/queries.py), and only on the LLM path; linked
pages are fetched from their sites; with the account reader on (docs/watch.md), watched channels' public
names go to Telegram's API through that account, and nothing from messages; fact-checkers' feeds (TIPLINE_FEEDS, `tipline feeds add`) are named
when some are read: their requests carry nothing of a message, but they are requests the server makes.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.settings import Settings

OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Outflow:
    llm: str | None  # where the message text goes (the LLM's base URL), None without an LLM
    search: tuple[str, ...]  # search providers configured
    links: int  # linked pages fetched per message (with an LLM)
    account: bool = False  # the account reader is configured: channel names go to Telegram's API
    feeds: int = 0  # fact-checkers' feeds read on a schedule (no message text in those requests)


def _set(value: object) -> bool:
    secret = getattr(value, "get_secret_value", None)
    return bool(secret() if callable(secret) else value)


def outflow(s: Settings, *, stored_feeds: int = 0) -> Outflow:
    """`stored_feeds`: how many feeds `tipline feeds add` stored (storage/factcheck_feeds.py read_feeds)."""
    account = bool(s.telegram_api_id and _set(s.telegram_api_hash) and not s.offline)
    feeds = 0 if s.offline else len(s.feeds) + stored_feeds
    search = tuple(name for name, on in (("GDELT", s.gdelt_url), ("SearxNG", s.searxng_url),
                                         ("Brave Search", s.brave_api_key),
                                         ("Google Fact Check Tools", s.factcheck_api_key)) if _set(on))
    if s.offline or not s.llm_configured:
        return Outflow(None, () if s.offline else search, 0, account, feeds)
    return Outflow(s.llm_base_url or OPENAI_URL, search, max(s.max_links, 0), account, feeds)


_WORDS = {
    "en": {"nothing": "nothing from messages leaves the machine",
           "unused": " ({names} configured, used only with an LLM)",
           "llm": "the message text goes to the LLM at {url}", "search": "search words (never links) to {names}",
           "links": "up to {n} linked page(s) are fetched from their sites",
           "feeds": "{n} fact-checkers' feed(s) are read from their sites (no message text in those requests)",
           "head": "What leaves this server: {what}.",
           "account": "watched channels' public names (nothing from messages) go to Telegram through a dedicated account"},

    "ru": {"nothing": "ничего из сообщений не покидает этот сервер",
           "unused": " ({names} подключены, но используются только вместе с языковой моделью)",
           "llm": "текст сообщения отправляется языковой модели по адресу {url}",
           "search": "поисковые слова (никогда не ссылки) — в {names}",
           "links": "до {n} страниц по ссылкам из сообщения загружаются с их сайтов",
           "feeds": "лент фактчекеров, читаемых с их сайтов: {n} (в этих запросах нет текста сообщений)",
           "head": "Что уходит с этого сервера: {what}.",
           "account": "публичные имена отслеживаемых каналов (ничего из сообщений) уходят в Telegram через отдельный "
                      "аккаунт"},

    "uk": {"nothing": "нічого з повідомлень не залишає цей сервер",
           "unused": " ({names} підключено, але вони працюють лише разом із мовною моделлю)",
           "llm": "текст повідомлення надсилається мовній моделі за адресою {url}",
           "search": "пошукові слова (ніколи не посилання) — до {names}",
           "links": "до {n} сторінок за посиланнями з повідомлення завантажуються з їхніх сайтів",
           "feeds": "стрічок фактчекерів, що читаються з їхніх сайтів: {n} (у цих запитах немає тексту повідомлень)",
           "head": "Що залишає цей сервер: {what}.",
           "account": "публічні імена відстежуваних каналів (нічого з повідомлень) надходять до Telegram через окремий "
                      "акаунт"},

}


def describe(o: Outflow, lang: str = "en") -> str:
    """One line: what leaves and to whom ("nothing from messages leaves the machine" with the defaults)."""
    w = _WORDS.get(lang, _WORDS["en"])
    account = [w["account"]] if o.account else []
    feeds = [w["feeds"].format(n=o.feeds)] if o.feeds else []
    if o.llm is None:
        return "; ".join([w["nothing"] + (w["unused"].format(names=", ".join(o.search)) if o.search else ""),
                          *account, *feeds])
    parts = [w["llm"].format(url=o.llm)]
    if o.search:
        parts.append(w["search"].format(names=", ".join(o.search)))
    if o.links:
        parts.append(w["links"].format(n=o.links))
    return "; ".join(parts + account + feeds)


def sentence(o: Outflow, lang: str = "en") -> str:
    """For end users (/start, /help): "What leaves this server: …."."""
    w = _WORDS.get(lang, _WORDS["en"])
    return w["head"].format(what=describe(o, lang))
