"""The words tipline says, in the user's language: replies follow the language of the checked message.

English, Russian and Ukrainian (the languages intake detects; the Ukrainian forms live in
core/i18n_uk.py). A missing translation falls back to English, never to another language the user
may not want (a Ukrainian reader is not answered in Russian), so adding a language never breaks a reply. Values are `str.format` templates; everything
interpolated is plain text that each adapter escapes for its markup.
"""

from __future__ import annotations

from core.i18n_uk import UK

LANGUAGES = ("en", "ru", "uk")

_STRINGS: dict[str, dict[str, str]] = {
    # verdict labels
    "label.SUPPORTED": {"en": "True", "ru": "Правда"},
    "label.REFUTED": {"en": "False", "ru": "Ложь"},
    "label.MISLEADING": {"en": "Misleading", "ru": "Вводит в заблуждение"},
    "label.MIXED": {"en": "Mixed", "ru": "Отчасти правда"},
    "label.NOT_ENOUGH_EVIDENCE": {"en": "Unverified", "ru": "Не подтверждено"},
    "label.NOT_CHECKABLE": {"en": "Not checkable", "ru": "Не проверяется"},
    # the card
    "card.confidence": {"en": "confidence {pct}%", "ru": "уверенность {pct}%"},
    "card.no_verdict": {"en": "no verdict", "ru": "без вердикта"},
    "card.sources": {"en": "Sources", "ru": "Источники"},
    "card.checked": {"en": "Checked: “{text}”", "ru": "Проверено: «{text}»"},
    "card.forwarded_from": {"en": "forwarded from {who}", "ru": "переслано от {who}"},
    "card.rated": {"en": "rated “{rating}”", "ru": "оценка «{rating}»"},
    "card.match": {"en": "match {score}", "ru": "сходство {score}"},
    "card.note": {"en": "Note: {note}", "ru": "Примечание: {note}"},
    "card.check_id": {"en": "Check id", "ru": "Номер проверки"},
    "card.mode.offline": {"en": "offline mode", "ru": "офлайн-режим"},
    "card.mode.llm": {"en": "LLM mode", "ru": "режим LLM"},
    "card.claims": {"en": "Claims checked", "ru": "Проверенные утверждения"},
    "related.auto": {"en": "Previously fact-checked", "ru": "Уже проверялось"},
    "related.suggest": {"en": "Possibly related fact-checks", "ru": "Возможно, связанные проверки"},
    "related.none": {"en": "Closest fact-checks (not the same claim)",
                     "ru": "Ближайшие проверки (не то же утверждение)"},
    # progress
    "progress.checking": {"en": "🔎 Checking…", "ru": "🔎 Проверяю…"},
    "stage.intake": {"en": "reading the message", "ru": "читаю сообщение"},
    "stage.claims": {"en": "finding the claims", "ru": "выделяю утверждения"},
    "stage.match": {"en": "matching against fact-checks", "ru": "сверяю с проверенными утверждениями"},
    "stage.evidence": {"en": "searching for evidence", "ru": "ищу доказательства"},
    "stage.verdict": {"en": "weighing the evidence", "ru": "взвешиваю доказательства"},
    # offline verdicts (core/offline_verdict.py)
    "offline.matched": {
        "en": "This is a claim {who} has already fact-checked{when}: “{claim}” — rated “{rating}” [1].",
        "ru": "Это утверждение уже проверял(а) {who}{when}: «{claim}» — оценка «{rating}» [1]."},
    "offline.when": {"en": " on {date}", "ru": " {date}"},
    "offline.a_factchecker": {"en": "a fact-checker", "ru": "фактчекер"},
    "offline.more_agree": {"en": " {n} more matching fact-check(s) agree {refs}.",
                           "ru": " Ещё проверок с тем же выводом: {n} {refs}."},
    "offline.conflict": {
        "en": " Note: another matching fact-check rated it “{rating}” [{n}], so treat this verdict with care.",
        "ru": " Внимание: другая подходящая проверка дала оценку «{rating}» [{n}], поэтому к вердикту стоит "
              "отнестись осторожно."},
    "offline.closest": {
        "en": "No previous fact-check clearly matches this claim, so there is no verdict yet. The closest ones "
              "may be related: {items}",
        "ru": "Ни одна прежняя проверка явно не совпадает с этим утверждением, поэтому вердикта пока нет. "
              "Возможно, связаны ближайшие: {items}"},
    "offline.nothing": {
        "en": "No previous fact-check in the knowledge base matches this claim, and offline mode cannot search "
              "the web, so there is no verdict.",
        "ru": "В базе нет проверки, совпадающей с этим утверждением, а в офлайн-режиме поиск в интернете "
              "недоступен, поэтому вердикта нет."},
    "offline.negated": {
        "en": "This claim was fact-checked by {who}{when}: “{claim}” — rated “{rating}” [1]. Your message seems to "
              "state the opposite, so that rating is not applied to it and there is no verdict.",
        "ru": "Это утверждение проверял(а) {who}{when}: «{claim}» — оценка «{rating}» [1]. Ваше сообщение, похоже, "
              "утверждает обратное, поэтому эта оценка к нему не применена и вердикта нет."},
    "note.offline": {"en": "Offline mode: verdicts come only from matching previously fact-checked claims.",
                     "ru": "Офлайн-режим: вердикт возможен только по совпадению с уже проверенными утверждениями."},
    "note.negated": {
        "en": "Your message seems to state the opposite of the fact-checked claim, so its rating is shown but not "
              "applied to your message.",
        "ru": "Ваше сообщение, похоже, утверждает противоположное проверенному утверждению, поэтому его оценка "
              "показана, но не применена к вашему сообщению."},
    "notcheckable.OPINION": {
        "en": "This reads as an opinion or a value judgement, not a statement of fact, so there is nothing to "
              "fact-check.",
        "ru": "Это мнение или оценка, а не утверждение о фактах, поэтому проверять здесь нечего."},
    "notcheckable.AMBIGUOUS": {
        "en": "This is too vague to check. Please rephrase it as a specific claim: who did what, when and where.",
        "ru": "Это слишком расплывчато для проверки. Сформулируйте конкретное утверждение: кто, что сделал, "
              "когда и где."},
    "notcheckable.NONE": {
        "en": "I couldn't find a claim to check in this message. Send a statement of fact, e.g. \"The Eiffel "
              "Tower was built in 1889\".",
        "ru": "Я не нашёл в сообщении утверждения для проверки. Пришлите утверждение о фактах, например "
              "«Эйфелеву башню построили в 1889 году»."},
    "notcheckable.QUESTION": {
        "en": "This is a question that states no fact, so there is nothing to fact-check. To check a claim, "
              "send the claim itself.",
        "ru": "Это вопрос, в котором нет утверждения о фактах, поэтому проверять нечего. Чтобы проверить "
              "утверждение, пришлите само утверждение."},
    "notcheckable.PROMO": {
        "en": "This reads as an advertisement or a call to action, not a statement of fact, so there is "
              "nothing to fact-check.",
        "ru": "Это похоже на рекламу или призыв, а не на утверждение о фактах, поэтому проверять нечего."},
    "note.notcheckable_offline": {
        "en": "Offline mode: a small model found no factual claim here (probability of a claim {pct}%). If you "
              "meant one, send it as a plain statement.",
        "ru": "Офлайн-режим: небольшая модель не нашла здесь утверждения о фактах (вероятность утверждения "
              "{pct}%). Если вы имели в виду утверждение, пришлите его простой фразой."},
    "note.disagree": {"en": "Matching fact-checks disagree.", "ru": "Подходящие проверки расходятся в оценках."},
}


for _key, _text in UK.items():
    _STRINGS[_key]["uk"] = _text


def t(key: str, language: str = "en", **values: object) -> str:
    """The text for `key` in `language` (English when there is no translation), filled with `values`."""
    forms = _STRINGS[key]
    template = forms.get(language) or forms["en"]
    return template.format(**values) if values else template


def has(key: str) -> bool:
    return key in _STRINGS
