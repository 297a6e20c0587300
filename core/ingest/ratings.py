"""Fact-checkers' own rating words -> our six verdicts.

Every fact-checker has its own scale ("Pants on Fire", "Four Pinocchios", "Engañoso", "Фейк"), so
the knowledge base stores their words verbatim (`FactCheck.rating_text`) and a normalised `Verdict`
computed here. The table is plain data grouped by verdict: to support a new publisher, add its words
to the right group. A word that lands in two groups is a bug and fails at import time.

Decisions (tiplines differ; these follow the common practice and are documented so they can be argued):
- "Mostly false" is REFUTED and "Mostly true" SUPPORTED: the fact-checker's bottom line is clear and
  users read verdicts, not scales. "Half true" / "Partly true" / "Mixture" are MIXED.
- "Partly false" (Meta's programme label) is MISLEADING, not MIXED: it flags a claim whose headline
  message is wrong even though some details are right.
- Washington Post Pinocchios follow the paper's own glosses: one = "some shading of the facts"
  (MISLEADING), two = "half true" (MIXED), three = "mostly false" (REFUTED, like "Mostly false"),
  four and "Bottomless" = false (REFUTED). The "Geppetto checkmark" is SUPPORTED.
- "Outdated" is MISLEADING: it was true once, and repeating it as current misleads.
- "Correct attribution" is SUPPORTED and "Misattributed" REFUTED: the checked claim is "X said Y".
- Satire, opinion and legends are NOT_CHECKABLE: there is no factual claim to rate. "Originated as
  satire" is REFUTED: the satire is being passed around as fact, and as fact it is false.
- "Baseless" / "Infondé" are REFUTED (the checker says there is nothing behind it), while "Unproven",
  "Unsupported", "No evidence" are NOT_ENOUGH_EVIDENCE (the checker could not settle it).
- "Disinformation" (EUvsDisinfo's one label, and a common one on Russian and Ukrainian fact-checks) and
  "Conspiracy theory" are REFUTED: the checker files the claim as false, not as unsettled.
- Unknown words are NOT_ENOUGH_EVIDENCE: we never guess a verdict from words we do not know. At ingest,
  such a rating (with no readable number either) is reported and stored unrated (core/ingest/fields.py).
"""

from __future__ import annotations

import math
import re
import unicodedata

from schema.models import Verdict

_S = Verdict.SUPPORTED
_R = Verdict.REFUTED
_M = Verdict.MISLEADING
_X = Verdict.MIXED
_N = Verdict.NOT_ENOUGH_EVIDENCE
_C = Verdict.NOT_CHECKABLE

# Grouped by verdict; inside a group, by language. Keys are normalised with `rating_key` when the lookup
# table is built, so write them naturally (accents, hyphens and case do not matter).
RATING_WORDS: dict[Verdict, tuple[str, ...]] = {
    _S: (
        # English
        "true", "mostly true", "correct", "mostly correct", "accurate", "mostly accurate", "largely accurate",
        "correct attribution", "geppetto checkmark",
        # our own labels and the FEVER data set, so exported data round-trips
        "supported", "supports",
        # Russian / Ukrainian
        "правда", "в основном правда", "скорее правда", "подтверждено", "достоверно", "переважно правда",
        "підтверджено", "вірно", "верно", "точно",
        # Spanish / Portuguese / Italian
        "verdadero", "cierto", "mayormente cierto", "mayormente verdadero", "verdad", "verdadeiro",
        "vero",
        # French / German
        "vrai", "plutot vrai", "exact", "richtig", "wahr", "stimmt", "uberwiegend richtig",
        # Polish
        "prawda",
    ),
    _R: (
        # English
        "false", "mostly false", "pants on fire", "fake", "incorrect", "wrong", "hoax", "scam", "fabricated",
        "baseless", "untrue", "not true", "not correct", "inaccurate", "mostly inaccurate", "bogus",
        "misattributed", "originated as satire", "ai generated", "false claim", "fake news", "debunked", "fiction",
        "disinformation", "conspiracy theory",
        "three pinocchios", "four pinocchios", "bottomless pinocchio",
        "refuted", "refutes",
        # Russian / Ukrainian
        "ложь", "неправда", "не правда", "фейк", "в основном ложь", "скорее ложь", "в основном неправда",
        "не соответствует действительности", "это неправда", "это фейк", "брехня", "переважно неправда",
        "видеофейк", "фотофейк", "безосновательно",  # "baseless", as in English above
        "дезинформация", "дезінформація", "конспирология", "конспірологія", "не відповідає дійсності",
        "неправдиве твердження", "неправдиво", "недостовірно", "недостовірна інформація", "недостоверно",
        "недостоверная информация", "ложное утверждение", "это не так", "це не так", "неточно",
        "сгенерировано ии", "згенеровано ші", "не так", "теория заговора", "теорія змови", "містифікація",
        "мистификация", "несправжнє", "несправжній", "несправжня", "несправжні",
        # Spanish / Portuguese / Italian
        "falso", "mayormente falso", "bulo", "no es cierto", "no es verdad", "insostenible", "fake",
        "nao e verdade", "boato", "insustentavel", "non e vero", "notizia falsa", "bufala",
        # French / German
        "faux", "plutot faux", "infonde", "pas vrai", "intox", "inexact", "falsch", "uberwiegend falsch",
        "frei erfunden", "nicht wahr", "nicht richtig", "erfunden",
    ),
    _M: (
        # English
        "misleading", "missing context", "needs context", "lacks context", "out of context", "false context",
        "partly false", "partially false", "mostly misleading", "exaggerated", "exaggeration", "distorted",
        "distortion", "miscaptioned", "altered", "altered photo", "altered video", "manipulated",
        "manipulated media", "doctored", "cherry picks", "spin", "outdated", "true but", "correct but",
        "one pinocchio", "mislabeled",
        # Russian / Ukrainian
        "манипуляция", "вводит в заблуждение", "вырвано из контекста", "вне контекста", "искажение",
        "преувеличение", "частично ложь", "частично неправда", "маніпуляція", "вводить в оману",
        "перебільшення", "частково неправда", "поза контекстом", "манипулятивно", "маніпулятивно",
        "в заблуждение", "в оману",  # "вводящее в заблуждение", "що вводить в оману": every form of the verb
        "без контексту", "без контекста", "монтаж", "старе відео", "старе фото", "старое видео", "старое фото",
        "перекручування", "перекручено", "правда з маніпуляцією", "правда с манипуляцией", "distorts the facts",
        "не зовсім правда", "не совсем правда", "не зовсім так", "не совсем так", "not quite true",
        "not entirely true", "not the whole truth",
        # Spanish / Portuguese / Italian
        "enganoso", "parcialmente falso", "fuera de contexto", "sin contexto", "falta contexto",
        "exagerado", "impreciso", "distorsionado", "fora de contexto", "distorcido", "verdadeiro mas",
        "nao e bem assim", "montagem", "fuorviante", "parzialmente falso", "decontestualizzato",
        "fuori contesto", "manipolato",
        # French / German
        "trompeur", "manque de contexte", "hors contexte", "partiellement faux", "exagere", "detourne",
        "irrefuhrend", "fehlender kontext", "teilweise falsch", "aus dem kontext gerissen", "manipuliert",
        "verzerrt", "ubertrieben",
    ),
    _X: (
        # English
        "half true", "half truth", "mixture", "mixed", "partly true", "partially true", "two pinocchios",
        # Russian / Ukrainian
        "полуправда", "частично правда", "наполовину правда", "напівправда", "частково правда",
        # Spanish / Portuguese / Italian
        "verdad a medias", "medio cierto", "parcialmente cierto", "parcialmente verdadero",
        "mitad verdadero", "meia verdade", "parcialmente verdadeiro", "parzialmente vero", "mezza verita",
        # French / German
        "a moitie vrai", "partiellement vrai", "en partie vrai", "halb wahr", "halbwahr", "teilweise richtig",
        "teilweise wahr",
    ),
    _N: (
        # English
        "unproven", "unverified", "unsupported", "no evidence", "research in progress", "lacks evidence",
        "unsubstantiated", "not enough evidence", "not enough info", "not enough information",
        "insufficient evidence", "unclear", "undetermined", "inconclusive", "too early to tell",
        "not proven", "no proof",
        # Russian / Ukrainian
        "не доказано", "бездоказательно", "недостаточно данных", "недостаточно доказательств", "не подтверждено",
        "неподтверждено", "нет доказательств", "недостатньо даних", "не доведено", "не підтверджено",
        "без доказательств", "без доказів", "чутки", "слухи", "disputed",
        # Spanish / Portuguese / Italian
        "sin evidencia", "sin evidencias", "sin pruebas", "inchequeable", "no verificable",
        "sem evidencias", "sem provas", "ainda e cedo para dizer", "sem comprovacao", "senza prove",
        "non verificato", "non dimostrato",
        # French / German
        "non prouve", "non verifie", "invérifiable", "unbelegt", "unbewiesen", "nicht belegt",
        "unklar",
    ),
    _C: (
        # English
        "satire", "labeled satire", "labelled satire", "opinion", "legend", "not checkable",
        "not a claim", "parody", "humor", "joke",
        # Russian / Ukrainian
        "сатира", "мнение", "пародия", "думка", "пародія", "жарт", "шутка", "не перевіряється",
        "неперевірювано", "не проверяется", "непроверяемо",
        # Spanish / Portuguese / Italian / French / German
        "satira", "opinion", "opiniao", "parodia", "opinione", "satirique", "meinung",
    ),
}

# Word beginnings, for the forms a phrase table cannot list: Russian and Ukrainian inflect ratings by gender and
# case ("Неправдиве", "Фейкове відео", "Маніпулятивне"), and
# publishers coin compounds ("Дипфейк", "Фотофейк"). Read only when no phrase matched, one word at a time.
RATING_STEMS: dict[Verdict, tuple[str, ...]] = {
    _S: ("правдив", "достоверн", "достовірн", "prawdziw"),
    _R: (
        "фейк", "дипфейк", "діпфейк", "фотофейк", "видеофейк", "відеофейк", "deepfake", "неправдив", "хибн",
        "фальш", "фальсиф", "подделк", "поддельн", "підробк", "підробл", "сфабрик", "fabricat", "вигадк", "вигадан",
        "выдумк", "выдуман", "брехн", "ложн", "недостоверн", "недостовірн", "дезинформ", "дезінформ",
        "disinform", "конспиролог", "конспіролог", "ипсо", "іпсо", "fałsz", "nieprawd", "ყალბ", "დეზინფორმაც",
    ),
    _M: (
        "манипул", "маніпул", "manipul", "оманлив", "викривл", "спотвор", "искаж", "перебільш", "преувелич",
        "misrepresent", "misleading", "смонтирован", "змонтован", "фотошоп", "photoshop", "вырван", "вирван",
        "пропаганд", "მანიპულაც",
    ),
    _X: ("полуправд", "напівправд"),
    _N: ("недоказ", "бездоказ", "неподтвержд", "непідтвердж", "недовед", "unverif", "unsubstantiat",
         "nieweryfikowal"),
    _C: ("сатир", "satir", "пароди", "пароді", "sarcas"),
}
# "Не фейк", "not misleading": a rating word right after one of these is not the rating.
_NEGATORS = frozenset({"не", "ні", "нет", "not", "no", "nie", "non", "ne", "nicht", "არ"})

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_PINOCCHIO_VERDICTS = {1: _M, 2: _X, 3: _R, 4: _R}


def rating_key(text: str) -> str:
    """Casefold, drop accents and punctuation, collapse spaces: "Half-True!" -> "half true"."""
    text = unicodedata.normalize("NFKD", text)
    # Dropping combining marks also folds ё->е and й->и; harmless because keys go through the same path.
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"[^\w]+|_", " ", text)
    return " ".join(text.split())


def _build_table() -> dict[str, Verdict]:
    table: dict[str, Verdict] = {}

    def add(word: str, verdict: Verdict) -> None:
        key = rating_key(word)
        if table.get(key, verdict) is not verdict:
            raise ValueError(f"rating word {word!r} is listed under both {table[key].name} and {verdict.name}")
        table[key] = verdict

    for verdict, words in RATING_WORDS.items():
        for word in words:
            add(word, verdict)
    # "2 Pinocchios", "Two Pinocchio", "pinocchios: 3": every spelling the Post and re-publishers use.
    for word, n in _NUMBER_WORDS.items():
        for noun in ("pinocchio", "pinocchios"):
            add(f"{word} {noun}", _PINOCCHIO_VERDICTS[n])
            add(f"{noun} {word}", _PINOCCHIO_VERDICTS[n])
    return table


_TABLE: dict[str, Verdict] = _build_table()
_MAX_WORDS = max(len(key.split()) for key in _TABLE)
# Longest beginning first, so "неправдив" is never read as "правдив" inside a longer stem list.
_STEMS: tuple[tuple[str, Verdict], ...] = tuple(sorted(
    ((rating_key(stem), verdict) for verdict, stems in RATING_STEMS.items() for stem in stems),
    key=lambda pair: -len(pair[0])))


def _stem_verdict(words: list[str]) -> Verdict | None:
    for i, word in enumerate(words):
        if i and words[i - 1] in _NEGATORS:
            continue
        for stem, verdict in _STEMS:
            if word.startswith(stem):
                return verdict
    return None


def match_rating(text: str | None, *, exact: bool = False) -> Verdict | None:
    """The verdict for rating words we know, or None.

    First the whole text is looked up; then (unless `exact`) the longest known phrase inside it,
    so "Mostly False" is never read as "False" and "False. The photo is from 2015" still matches.
    Equal-length phrases: the earliest wins, since publishers put the rating first.
    `exact=True` is for free text (feed summaries) where a stray "true" must not count.
    """
    if not text:
        return None
    key = rating_key(text)
    if key in _TABLE:
        return _TABLE[key]
    if exact or not key:
        return None
    words = key.split()
    for size in range(min(_MAX_WORDS, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            verdict = _TABLE.get(" ".join(words[start:start + size]))
            if verdict is not None and not (start and words[start - 1] in _NEGATORS):
                return verdict
    return _stem_verdict(words)


def verdict_from_score(value: float | None, best: float | None = None, worst: float | None = None) -> Verdict | None:
    """A numeric ClaimReview rating as a verdict, or None when it cannot be read.

    ClaimReview's convention is worst=1 (false) .. best=5 (true), so those are the defaults. The
    position on the scale is cut into thirds around the middle: on 1..5, 1-2 refute, 3 is mixed,
    4-5 support. Out-of-range values (publishers use 0 or -1 for "not rated") mean nothing.
    """
    if value is None:
        return None
    best = 5.0 if best is None else best
    worst = 1.0 if worst is None else worst
    if any(math.isnan(x) or math.isinf(x) for x in (value, best, worst)) or best == worst:
        return None
    fraction = (value - worst) / (best - worst)
    if not 0.0 <= fraction <= 1.0:
        return None
    if fraction < 0.375:
        return _R
    if fraction <= 0.625:
        return _X
    return _S


def normalize_rating(
    text: str | None, value: float | None = None, best: float | None = None, worst: float | None = None
) -> Verdict:
    """The verdict for a fact-checker's rating: its words if we know them, else its number, else unknown.

    Words win over numbers because publishers fill ratingValue inconsistently (many leave a
    placeholder 1 or -1 on every review) while alternateName is what their readers see.
    """
    verdict = match_rating(text)
    if verdict is None:
        verdict = verdict_from_score(value, best, worst)
    return verdict if verdict is not None else Verdict.NOT_ENOUGH_EVIDENCE
