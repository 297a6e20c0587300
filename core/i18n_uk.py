"""Ukrainian wording of every string in core/i18n.py (merged into it at import).

Kept apart so that a new English/Russian string can be added in one place and its Ukrainian form
here; tests/test_i18n.py fails while a key has no Ukrainian form. A Ukrainian message never gets a
Russian reply: a missing form falls back to English.
"""

from __future__ import annotations

UK: dict[str, str] = {
    "label.SUPPORTED": "Правда",
    "label.REFUTED": "Неправда",
    "label.MISLEADING": "Вводить в оману",
    "label.MIXED": "Частково правда",
    "label.NOT_ENOUGH_EVIDENCE": "Не підтверджено",
    "label.NOT_CHECKABLE": "Не перевіряється",
    "card.confidence": "впевненість {pct}%",
    "card.no_verdict": "без вердикту",
    "card.sources": "Джерела",
    "card.checked": "Перевірено: «{text}»",
    "card.forwarded_from": "переслано від {who}",
    "card.rated": "оцінка «{rating}»",
    "card.match": "схожість {score}",
    "card.note": "Примітка: {note}",
    "card.check_id": "Номер перевірки",
    "card.mode.offline": "офлайн-режим",
    "card.mode.llm": "режим LLM",
    "card.claims": "Перевірені твердження",
    "related.auto": "Уже перевірялося",
    "related.suggest": "Можливо, пов'язані перевірки",
    "related.none": "Найближчі перевірки (не те саме твердження)",
    "progress.checking": "🔎 Перевіряю…",
    "stage.intake": "читаю повідомлення",
    "stage.claims": "виокремлюю твердження",
    "stage.match": "звіряю з перевіреними твердженнями",
    "stage.evidence": "шукаю докази",
    "stage.verdict": "зважую докази",
    "offline.matched": "Це твердження вже перевіряв(ла) {who}{when}: «{claim}» — оцінка «{rating}» [1].",
    "offline.when": " {date}",
    "offline.a_factchecker": "фактчекер",
    "offline.more_agree": " Ще перевірок із тим самим висновком: {n} {refs}.",
    "offline.conflict": " Увага: інша відповідна перевірка дала оцінку «{rating}» [{n}], тож до вердикту варто "
                        "поставитися обережно.",
    "offline.closest": "Жодна попередня перевірка явно не збігається з цим твердженням, тому вердикту поки немає. "
                       "Можливо, пов'язані найближчі: {items}",
    "offline.nothing": "У базі немає перевірки, що збігається з цим твердженням, а в офлайн-режимі пошук в інтернеті "
                       "недоступний, тому вердикту немає.",
    "offline.negated": "Це твердження перевіряв(ла) {who}{when}: «{claim}» — оцінка «{rating}» [1]. Ваше "
                       "повідомлення, схоже, стверджує протилежне, тому цю оцінку до нього не застосовано і "
                       "вердикту немає.",
    "note.offline": "Офлайн-режим: вердикт можливий лише за збігом із уже перевіреними твердженнями.",
    "note.negated": "Ваше повідомлення, схоже, стверджує протилежне до перевіреного твердження, тому його оцінку "
                    "показано, але не застосовано до вашого повідомлення.",
    "notcheckable.OPINION": "Це думка чи оцінка, а не твердження про факти, тож перевіряти тут нічого.",
    "notcheckable.AMBIGUOUS": "Це занадто розпливчасто для перевірки. Сформулюйте конкретне твердження: хто, що "
                              "зробив, коли і де.",
    "notcheckable.NONE": "Я не знайшов у повідомленні твердження для перевірки. Надішліть твердження про факти, "
                         "наприклад «Ейфелеву вежу збудували 1889 року».",
    "notcheckable.QUESTION": "Це запитання, у якому немає твердження про факти, тож перевіряти нічого. Щоб "
                             "перевірити твердження, надішліть саме твердження.",
    "notcheckable.PROMO": "Це схоже на рекламу чи заклик, а не на твердження про факти, тож перевіряти нічого.",
    "note.notcheckable_offline": "Офлайн-режим: невелика модель не знайшла тут твердження про факти (імовірність "
                                 "твердження {pct}%). Якщо ви мали на увазі твердження, надішліть його простою "
                                 "фразою.",
    "note.disagree": "Відповідні перевірки розходяться в оцінках.",
}
