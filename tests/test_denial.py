"""The denial decision (core/matching/denial.py): the shipped model, the real e5 encoder, pairs written for this test
(none of them in eval/realistic)."""

from __future__ import annotations

import pytest

from core.intake.claim_text import claim_text
from core.matching.denial import Denial, default_denial
from core.encoders.multilingual import E5Encoder
from core.matching.negation import POLARITY_FEATURES
from core.textclean import clean_query

G5 = "5G mobile networks are what spread the coronavirus around the world."
RU_5G = "Вышки 5G распространяют коронавирус."
MOON = "The Apollo moon landings were faked and filmed in a studio."
CHIPS = "COVID-19 vaccines contain microchips to track people."
NO_TROOPS = "There are no Russian soldiers fighting in eastern Ukraine."  # a claim that is itself negative
NO_EVIDENCE = "The Netherlands has shown no proof of who shot down the airliner."

DISPUTES = [
    ("It's a myth that 5G towers spread the coronavirus. Stop sharing this.", G5),
    ("Неправда, что вышки 5G разносят коронавирус, это давно опровергли", RU_5G),
    ("Не вірте: вежі 5G не поширюють коронавірус, це черговий вкид", RU_5G),
    ("The moon landings were real, the 'studio' story is a hoax", MOON),
    ("Никаких микрочипов в вакцинах от ковида нет, это выдумка", CHIPS),
    ("Чипи у вакцинах? Маячня, жодних чипів там немає", CHIPS),
    ("Это ложь, что российских военных на востоке Украины нет: их пленные дают показания", NO_TROOPS),
]
AGREES = [
    ("СРОЧНО! Вышки 5G распространяют коронавирус, перешлите всем пока не удалили", RU_5G),
    ("Вежі 5G поширюють коронавірус, ось чому всі хворіють", RU_5G),
    ("They never went to the moon, it was all shot in a studio", MOON),
    ("В вакцины от ковида вшивают микрочипы, чтобы следить за людьми", CHIPS),
    ("Is it true that covid vaccines have tracking chips in them?", CHIPS),
    ("Якщо не вакцинуватися, не вживлять чип для стеження — у вакцинах чипи", CHIPS),
    ("Никаких российских солдат на Донбассе нет, воюют местные шахтёры 🚜 Переслано", NO_TROOPS),
    ("Нідерланди так і не показали жодного доказу, хто збив літак. Поширте!", NO_EVIDENCE),
]


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder()


def _p(model: Denial, encoder: E5Encoder, message: str, claim: str) -> float:
    text = claim_text(message)
    vector, claim_vector = encoder.queries_sync([clean_query(text), clean_query(claim)])
    return model.probability(text, claim, vector, claim_vector)


def test_the_shipped_model_is_there_and_matches_the_rules_it_reads():
    model = default_denial()
    assert model is not None
    assert model.mean.shape == model.weights.shape and model.mean.shape[0] > len(POLARITY_FEATURES)


@pytest.mark.parametrize(("message", "claim"), DISPUTES)
def test_a_denial_is_told_apart(encoder: E5Encoder, message: str, claim: str):
    model = default_denial()
    assert model is not None
    assert _p(model, encoder, message, claim) >= model.threshold


@pytest.mark.parametrize(("message", "claim"), AGREES)
def test_a_restatement_is_not_a_denial(encoder: E5Encoder, message: str, claim: str):
    model = default_denial()
    assert model is not None
    assert _p(model, encoder, message, claim) < model.threshold


def test_a_model_for_other_features_is_refused(tmp_path):
    import json
    from core.matching.denial import DEFAULT_PATH

    data = json.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    data["rules"] = data["rules"][:-1]
    with pytest.raises(ValueError, match="trained on other features"):
        Denial.from_dict(data)
