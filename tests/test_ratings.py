"""Rating words -> verdicts: every rating the ingestion brief lists, in every language listed."""

from __future__ import annotations

import pytest

from schema.models import Verdict
from core.ingest.ratings import RATING_WORDS, match_rating, normalize_rating, rating_key, verdict_from_score

S, R, M, X, N, C = (Verdict.SUPPORTED, Verdict.REFUTED, Verdict.MISLEADING, Verdict.MIXED,
                    Verdict.NOT_ENOUGH_EVIDENCE, Verdict.NOT_CHECKABLE)

CASES = [
    # English: true side
    ("True", S), ("Mostly True", S), ("Correct", S), ("Accurate", S), ("Correct attribution", S),
    # English: false side
    ("False", R), ("Pants on Fire", R), ("Mostly False", R), ("Fake", R), ("Incorrect", R), ("Wrong", R),
    ("Hoax", R), ("Scam", R), ("Fabricated", R), ("Baseless", R), ("Four Pinocchios", R), ("Misattributed", R),
    # Pinocchios below four (documented in core/ingest/ratings.py)
    ("One Pinocchio", M), ("Two Pinocchios", X), ("Three Pinocchios", R), ("3 Pinocchios", R),
    # misleading family
    ("Misleading", M), ("Missing context", M), ("Out of context", M), ("Partly false", M), ("Exaggerated", M),
    ("Distorted", M), ("Miscaptioned", M), ("Altered", M), ("Manipulated", M), ("Outdated", M),
    # mixed family
    ("Half True", X), ("Mixture", X), ("Mixed", X), ("Partly true", X),
    # not enough evidence
    ("Unproven", N), ("Unverified", N), ("Unsupported", N), ("No evidence", N), ("Research in progress", N),
    ("Lacks evidence", N),
    # not checkable
    ("Satire", C), ("Opinion", C), ("Legend", C), ("Labeled satire", C),
    # Russian
    ("Ложь", R), ("Неправда", R), ("Фейк", R), ("Правда", S), ("Полуправда", X), ("Частично правда", X),
    ("Манипуляция", M), ("Вводит в заблуждение", M), ("Не доказано", N), ("Недостаточно данных", N),
    ("Дезинформация", R), ("Дезінформація", R), ("Disinformation", R), ("Не відповідає дійсності", R),
    ("Неправдиве твердження", R), ("Недостовірно", R), ("Ложное утверждение", R), ("Маніпулятивно", M),
    ("Без доказів", N),
    # Spanish
    ("Falso", R), ("Verdadero", S), ("Engañoso", M), ("Cierto", S), ("Parcialmente falso", M), ("Sin evidencia", N),
    # Portuguese
    ("Verdadeiro", S), ("Enganoso", M),
    # French
    ("Faux", R), ("Vrai", S), ("Trompeur", M), ("Infondé", R), ("Plutôt faux", R),
    # German
    ("Falsch", R), ("Richtig", S), ("Irreführend", M), ("Fehlender Kontext", M), ("Unbelegt", N),
    # Italian
    ("Vero", S), ("Fuorviante", M),
    # Ukrainian
    ("Маніпуляція", M),
    # inflected and coined forms, read by their beginnings (RATING_STEMS)
    ("Неправдиве", R), ("Хибне твердження", R), ("Фейкове відео", R), ("Фейковое фото", R), ("Дипфейк", R),
    ("Підробка", R), ("Подделка", R), ("Фальшивка", R), ("Вигадка", R), ("Сфабриковано", R), ("ІПСО", R),
    ("Manipulation", M), ("Маніпулятивне", M), ("Оманливе", M), ("Вирвано з контексту", M),
    ("Вырвано из контекста", M), ("Вводящее в заблуждение", M), ("Перебільшено", M), ("Пропаганда", M),
    ("Напівправдиве", X), ("Неподтвержденная информация", N), ("Сатирический пост", C), ("Это не так", R),
    ("AI-generated", R), ("Згенеровано ШІ", R),
    # more Russian and Ukrainian publishers' labels
    ("Несправжнє", R), ("Містифікація", R), ("Теорія змови", R), ("Монтаж", M), ("Старе відео", M),
    ("Без контексту", M), ("Перекручування", M), ("Чутки", N), ("Жарт", C), ("Не перевіряється", C), ("Вірно", S),
    # "not quite true" is no "true"
    ("Не зовсім правда", M), ("Не совсем правда", M), ("Правда з маніпуляцією", M), ("Not entirely true", M),
    # Polish and Georgian publishers on the same stories
    ("Fałsz", R), ("Nieprawda", R), ("Manipulacja", M), ("Prawda", S), ("Nieweryfikowalne", N),
    ("დეზინფორმაცია", R), ("მანიპულაცია", M),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_listed_rating(text: str, expected: Verdict) -> None:
    assert normalize_rating(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  PANTS-ON-FIRE!  ", R), ("half-true", X), ("mostly   false.", R), ("«Ложь»", R), ("ЛОЖЬ", R),
        ("plutot faux", R), ("irrefuhrend", M), ("Engañoso.", M), ("FALSE\n", R), ("Не правда", R),
        ("Неправда", R),  # also Ukrainian
        ("Правда", S),  # also Ukrainian
    ],
)
def test_case_punctuation_accents_whitespace(text: str, expected: Verdict) -> None:
    assert normalize_rating(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the longest phrase wins over a single word inside it
        ("Mostly False", R), ("Half True", X), ("Partly false", M), ("Not true", R), ("Untrue", R),
        # a rating followed by an explanation
        ("False. The photo was taken in 2015 in Chile.", R),
        ("Misleading: the figure leaves out imports", M),
        ("True, but misleading", M),
        ("Verdadeiro, mas", M),
        # earliest of two equally long matches: publishers lead with the rating
        ("Mixture of true and false information", X),
    ],
)
def test_phrases_inside_longer_text(text: str, expected: Verdict) -> None:
    assert normalize_rating(text) is expected


@pytest.mark.parametrize("text", ["Не фейк", "Not misleading", "не маніпуляція"])
def test_a_negated_rating_word_is_not_the_rating(text: str) -> None:
    assert match_rating(text) is None


def test_exact_mode_ignores_words_inside_prose() -> None:
    assert match_rating("It is true that the video exists", exact=True) is None
    assert match_rating("It is true that the video exists") is S
    assert match_rating("False", exact=True) is R


@pytest.mark.parametrize("text", ["", None, "   ", "Under review", "🤔", "Zebra"])
def test_unknown_text_is_not_enough_evidence(text: str | None) -> None:
    assert normalize_rating(text) is N
    assert match_rating(text) is None


@pytest.mark.parametrize(
    ("value", "best", "worst", "expected"),
    [
        (1, 5, 1, R), (2, 5, 1, R), (3, 5, 1, X), (4, 5, 1, S), (5, 5, 1, S),
        (1, None, None, R), (5, None, None, S),  # ClaimReview defaults: 1..5
        (0, 10, 0, R), (5, 10, 0, X), (9, 10, 0, S),
        (0.2, 1, 0, R), (0.8, 1, 0, S),
    ],
)
def test_numeric_ratings(value: float, best: float | None, worst: float | None, expected: Verdict) -> None:
    assert normalize_rating(None, value, best, worst) is expected
    assert verdict_from_score(value, best, worst) is expected


@pytest.mark.parametrize(("value", "best", "worst"), [(-1, 5, 1), (0, 5, 1), (6, 5, 1), (3, 3, 3), (float("nan"), 5, 1)])
def test_meaningless_numbers_give_no_verdict(value: float, best: float, worst: float) -> None:
    assert verdict_from_score(value, best, worst) is None
    assert normalize_rating("", value, best, worst) is N


def test_text_wins_over_number_when_recognised() -> None:
    # Publishers often leave a placeholder ratingValue; the words are what readers see.
    assert normalize_rating("False", 5, 5, 1) is R
    assert normalize_rating("Mostly True", 1, 5, 1) is S
    # Unrecognised words fall back to the number.
    assert normalize_rating("Pinocchio-meter: see article", 1, 5, 1) is R
    assert normalize_rating("Our own scale", 5, 5, 1) is S


def test_our_own_labels_round_trip() -> None:
    for verdict in Verdict:
        assert normalize_rating(verdict.value) is verdict, verdict
        assert normalize_rating(verdict.value.replace("_", " ").title()) is verdict


def test_table_has_no_word_in_two_groups() -> None:
    seen: dict[str, Verdict] = {}
    for verdict, words in RATING_WORDS.items():
        for word in words:
            key = rating_key(word)
            assert seen.setdefault(key, verdict) is verdict, word
