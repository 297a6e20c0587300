"""What from a message leaves the machine, and to whom, read from the running configuration: said by
`tipline doctor` and the start banner to operators, and by /start and /help to end users, in their language.

One description, so the three never disagree: with the defaults nothing leaves; an LLM gets the message
text; search providers get search words (never links, core/queries.py), and only on the LLM path; linked
pages are fetched from their sites; with the account reader on (docs/watch.md), watched channels' public
names go to Telegram's API through that account, and nothing from messages.
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


def _set(value: object) -> bool:
    secret = getattr(value, "get_secret_value", None)
    return bool(secret() if callable(secret) else value)


def outflow(s: Settings) -> Outflow:
    account = bool(s.telegram_api_id and _set(s.telegram_api_hash) and not s.offline)
    search = tuple(name for name, on in (("GDELT", s.gdelt_url), ("SearxNG", s.searxng_url),
                                         ("Brave Search", s.brave_api_key),
                                         ("Google Fact Check Tools", s.factcheck_api_key)) if _set(on))
    if s.offline or not s.llm_configured:
        return Outflow(None, () if s.offline else search, 0, account)
    return Outflow(s.llm_base_url or OPENAI_URL, search, max(s.max_links, 0), account)


_WORDS = {
    "en": {"nothing": "nothing from messages leaves the machine",
           "unused": " ({names} configured, used only with an LLM)",
           "llm": "the message text goes to the LLM at {url}", "search": "search words (never links) to {names}",
           "links": "up to {n} linked page(s) are fetched from their sites", "head": "What leaves this server: {what}.",
           "account": "watched channels' public names (nothing from messages) go to Telegram through a dedicated account"},
    "ru": {"nothing": "ничего из сообщений не покидает этот сервер",
           "unused": " ({names} подключены, но используются только вместе с языковой моделью)",
           "llm": "текст сообщения отправляется языковой модели по адресу {url}",
           "search": "поисковые слова (никогда не ссылки) — в {names}",
           "links": "до {n} страниц по ссылкам из сообщения загружаются с их сайтов",
           "head": "Что уходит с этого сервера: {what}.",
           "account": "публичные имена отслеживаемых каналов (ничего из сообщений) уходят в Telegram через отдельный "
                      "аккаунт"},
    "uk": {"nothing": "нічого з повідомлень не залишає цей сервер",
           "unused": " ({names} підключено, але вони працюють лише разом із мовною моделлю)",
           "llm": "текст повідомлення надсилається мовній моделі за адресою {url}",
           "search": "пошукові слова (ніколи не посилання) — до {names}",
           "links": "до {n} сторінок за посиланнями з повідомлення завантажуються з їхніх сайтів",
           "head": "Що залишає цей сервер: {what}.",
           "account": "публічні імена відстежуваних каналів (нічого з повідомлень) надходять до Telegram через окремий "
                      "акаунт"},
}


def describe(o: Outflow, lang: str = "en") -> str:
    """One line: what leaves and to whom ("nothing from messages leaves the machine" with the defaults)."""
    w = _WORDS.get(lang, _WORDS["en"])
    account = [w["account"]] if o.account else []
    if o.llm is None:
        return "; ".join([w["nothing"] + (w["unused"].format(names=", ".join(o.search)) if o.search else ""),
                          *account])
    parts = [w["llm"].format(url=o.llm)]
    if o.search:
        parts.append(w["search"].format(names=", ".join(o.search)))
    if o.links:
        parts.append(w["links"].format(n=o.links))
    return "; ".join(parts + account)


def sentence(o: Outflow, lang: str = "en") -> str:
    """For end users (/start, /help): "What leaves this server: …."."""
    w = _WORDS.get(lang, _WORDS["en"])
    return w["head"].format(what=describe(o, lang))
