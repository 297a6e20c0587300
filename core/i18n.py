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
    # digests, /trending and alerts (bot/digest.py, bot/digest_commands.py)
    "digest.title": {"en": "📰 What spread in the tracked chats, last {hours} h",
                     "ru": "📰 Что распространялось в отслеживаемых чатах за {hours} ч"},
    "digest.empty": {"en": "No story reached two or more tracked chats in the last {hours} h.",
                     "ru": "За последние {hours} ч ни одна история не появилась в двух и более отслеживаемых чатах."},
    "digest.first_seen": {"en": "First seen {when} in", "ru": "Впервые: {when} в"},
    "digest.also": {"en": "Also reported by:", "ru": "Также писали:"},
    "digest.more": {"en": "(+{n} more)", "ru": "(и ещё {n})"},
    "digest.count": {"en": "{chats} chats ({channels} channels), {messages} messages",
                     "ru": "чатов: {chats} (каналов: {channels}), сообщений: {messages}"},
    "digest.growth": {"en": "+{n} chats in the last {hours} h", "ru": "+{n} чатов за последние {hours} ч"},
    "digest.unchecked": {"en": "Not checked yet", "ru": "Ещё не проверено"},
    "digest.footer": {"en": "{shown} of {total} stories shown. Only chats whose admins turned /track on are read.",
                      "ru": "Показано историй: {shown} из {total}. Читаются только чаты, где админы включили /track."},
    "digest.check_button": {"en": "Check #{n}", "ru": "Проверить №{n}"},
    "digest.gone": {"en": "That story is no longer stored (its chat was forgotten or it is past retention).",
                    "ru": "Эта история больше не хранится (чат удалён или истёк срок хранения)."},
    "digest.usage": {
        "en": "Usage: /digest on [daily HH:MM | every N h] [top K] [lang en|ru|uk], /digest off, /digest now. "
              "Times are UTC.",
        "ru": "Использование: /digest on [daily ЧЧ:ММ | every N h] [top K] [lang en|ru|uk], /digest off, "
              "/digest now. Время — UTC."},
    "digest.on.daily": {"en": "Digest is on: daily at {hhmm} UTC, top {k} stories. Next: {next}.",
                        "ru": "Дайджест включён: ежедневно в {hhmm} UTC, историй: {k}. Следующий: {next}."},
    "digest.on.every": {"en": "Digest is on: every {n} h, top {k} stories. Next: {next}.",
                        "ru": "Дайджест включён: каждые {n} ч, историй: {k}. Следующий: {next}."},
    "digest.off": {"en": "Digest is off.", "ru": "Дайджест выключен."},
    "digest.was_off": {"en": "Digest was not on here.", "ru": "Дайджест здесь не был включён."},
    "digest.refused": {"en": "Only admins can do that.", "ru": "Это могут только админы."},
    "digest.not_available": {"en": "Digests need tracking, which is not available on this deployment.",
                             "ru": "Для дайджестов нужно отслеживание, а оно в этой установке недоступно."},
    "digest.posting": {"en": "Posting the digest here…", "ru": "Публикую дайджест…"},
    "digest.failed": {"en": "I could not post the digest here: is the bot a member of this chat, allowed to post?",
                      "ru": "Не удалось опубликовать дайджест здесь: бот состоит в этом чате и может писать в него?"},
    "trending.usage": {"en": "Usage: /trending [hours], e.g. /trending 6 (1 to 720 hours).",
                       "ru": "Использование: /trending [часы], например /trending 6 (от 1 до 720 часов)."},
    "alerts.usage": {"en": "Usage: /alerts on N (N tracked chats, 2 to 1000) or /alerts off.",
                     "ru": "Использование: /alerts on N (N отслеживаемых чатов, от 2 до 1000) или /alerts off."},
    "alerts.on": {"en": "Alerts are on: I post here once per story that matches a false or misleading fact-check "
                        "and reaches {n} tracked chats.",
                  "ru": "Оповещения включены: я напишу сюда один раз о каждой истории, которая совпадает с "
                        "проверкой «ложь» или «вводит в заблуждение» и появилась в {n} отслеживаемых чатах."},
    "alerts.off": {"en": "Alerts are off.", "ru": "Оповещения выключены."},
    "alert.title": {"en": "A claim fact-checked as “{label}” is spreading: {chats} tracked chats",
                    "ru": "Распространяется утверждение с оценкой «{label}»: отслеживаемых чатов — {chats}"},
    "alert.spread": {"en": "Spread to {n} chats:", "ru": "Появилось в чатах ({n}):"},
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
    "card.match": {"en": "same claim: {score}", "ru": "то же утверждение: {score}"},  # the match's probability
    "card.note": {"en": "Note: {note}", "ru": "Примечание: {note}"},
    "card.check_id": {"en": "Check id", "ru": "Номер проверки"},
    "card.mode.offline": {"en": "offline mode", "ru": "офлайн-режим"},
    "card.mode.llm": {"en": "LLM mode", "ru": "режим LLM"},
    # A check without an LLM that still asked outside services (GDELT by default) is not "offline".
    "card.mode.local": {"en": "no language model", "ru": "без языковой модели"},
    "card.asked": {"en": "sent to {names}", "ru": "отправлено в {names}"},
    "card.linked_pages": {"en": "the linked sites", "ru": "сайты по ссылкам"},
    # a fact-check file an admin sends the bot (bot/factcheck_files.py)
    "ingest.done": {"en": "{name}: {added} new, {updated} updated, {skipped} skipped. The knowledge base now has "
                          "{total} fact-checks.",
                    "ru": "{name}: новых {added}, обновлено {updated}, пропущено {skipped}. Теперь в базе "
                          "{total} фактчеков."},
    "ingest.failed": {"en": "Nothing was added from {name}: {error}",
                      "ru": "Из {name} ничего не добавлено: {error}"},
    "ingest.too_big": {"en": "{name} is over the {mb} MB Telegram lets bots download: send it with "
                             "`tipline ingest --server` or POST /v1/factchecks instead.",
                       "ru": "{name} больше {mb} МБ, которые Telegram даёт скачать ботам: загрузите его через "
                             "`tipline ingest --server` или POST /v1/factchecks."},
    "ingest.reading": {"en": "Adding the fact-checks in {name}…", "ru": "Добавляю фактчеки из {name}…"},
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
    # offline verdicts (core/verdict/offline_verdict.py)
    "offline.matched": {
        "en": "This is a claim {who} has already fact-checked{when}: “{claim}” — rated “{rating}” [1].",
        "ru": "Это утверждение уже проверял(а) {who}{when}: «{claim}» — оценка «{rating}» [1]."},
    "offline.unrated": {
        "en": "This is a claim {who} has already fact-checked{when}: “{claim}” [1]. No rating of theirs was recorded "
              "here, so there is no verdict: read the fact-check.",
        "ru": "Это утверждение уже проверял(а) {who}{when}: «{claim}» [1]. Их оценка здесь не записана, поэтому "
              "вердикта нет: прочитайте саму проверку."},
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
    # images (bot/images.py, core/intake/image_limits.py, core/intake/ocr.py)
    "card.image_text": {"en": "Text read from the image: “{text}”", "ru": "Текст, распознанный на изображении: «{text}»"},
    "note.image_no_text": {"en": "No text could be read from the image: only the caption was checked.",
                           "ru": "На изображении не удалось распознать текст: проверена только подпись."},
    "note.photo_reviewed": {"en": "This photo was reviewed by this bot's admins on {date}: their verdict is shown.",
                            "ru": "Это фото проверили администраторы бота {date}: показан их вердикт."},
    "digest.photo": {"en": "📷 A photo without text", "ru": "📷 Фото без текста"},
    "image.not_image": {"en": "I can only read text from PNG, JPEG or WebP images, and this file is not one.",
                        "ru": "Я умею читать текст только с изображений PNG, JPEG или WebP, а этот файл не из них."},
    "image.too_large": {"en": "That image is too large for me to read: the limit is {mb} MB.",
                        "ru": "Это изображение слишком большое: я читаю файлы до {mb} МБ."},
    "image.too_many_pixels": {"en": "That image has too many pixels for me to read: the limit is {mp} megapixels.",
                              "ru": "В этом изображении слишком много пикселей: я читаю до {mp} мегапикселей."},
    "image.ocr_off": {"en": "Image checks are off on this server (no text recognition engine is installed): "
                            "please send the text of the message instead.",
                      "ru": "Проверка изображений на этом сервере выключена (не установлен движок распознавания "
                            "текста): пришлите, пожалуйста, текст сообщения."},
    "image.timeout": {"en": "Reading the text in that image took too long, so I stopped: try a smaller or "
                            "clearer image, or send the text.",
                      "ru": "Распознавание текста на этом изображении заняло слишком много времени, и я его "
                            "остановил: пришлите изображение поменьше или почётче либо сам текст."},
    "image.unreadable": {"en": "I could not read that image: the file seems to be damaged.",
                         "ru": "Не получилось прочитать это изображение: похоже, файл повреждён."},
    "image.download_failed": {"en": "I could not download that image: please send it again.",
                              "ru": "Не получилось скачать это изображение: пришлите его, пожалуйста, ещё раз."},
    "image.file_unreadable": {"en": "I could not open the image file {path}.",
                              "ru": "Не получилось открыть файл изображения {path}."},
    "image.no_text": {"en": "I found no text in that image to check: send the claim as text, or add it as "
                            "a caption.",
                      "ru": "Я не нашёл на этом изображении текста для проверки: пришлите утверждение текстом "
                            "или добавьте его в подпись."},
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
