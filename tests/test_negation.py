"""core.matching.negation: does a message state the opposite of the fact-checked claim? Real phrasings in English, Russian
and Ukrainian.

Claims are the seed's (core/data/seed_factchecks.jsonl) where one fits, else short claims of the same kind.
"""

from __future__ import annotations

import pytest

from core.i18n import t
from schema.models import Match, Verdict
from core.matching.negation import contradicts
from core.verdict.offline_verdict import decide

APOLLO = ("The Apollo moon landings were faked, and leaked film clips show astronauts being filmed on a "
          "studio set.")
G5 = "5G mobile networks are what spread the coronavirus around the world."
MMR = ("A CDC whistleblower revealed that the agency hid data showing the MMR vaccine sharply raises autism "
       "risk in Black boys.")
LIGHTNING = "Lightning never strikes the same place twice."
HONEY = "Honey never goes bad and jars thousands of years old have been found still edible."
WARMING = "Global warming stopped in 1998 and the planet has not warmed since."
OBAMA = "Barack Obama was not born in the United States, so his birth certificate is a fake."
BUCHA = ("A video from Bucha shows a 'dead body' moving its arm and another sitting up in the mirror, proving "
         "the massacre was staged.")
WHATSAPP = "Messages inviting you to upgrade to 'WhatsApp Gold' lead to a fake app that installs malware."
MARTINELLI = "Do not open the WhatsApp video called Martinelli, because it hacks your phone and nothing can fix it."
GARLIC = "Eating garlic protects you from catching COVID-19."
WALL = ("The Great Wall of China is the only man-made structure you can see with the naked eye from space or "
        "the Moon.")
BREATH = ("If you can hold your breath for ten seconds without coughing you do not have the coronavirus.")
MMS = "Drinking chlorine dioxide, the bleach sold as MMS, cures autism and tumours."
PLYMOUTH = ("A picture of Plymouth Rock at the waterline proves sea levels have not risen in the 400 years since "
            "the Pilgrims landed.")
HCQ = ("A Houston doctor proved in a viral video that hydroxychloroquine cures COVID-19, so nobody needs "
       "masks.")
FEMA = ("The 750 dollars FEMA gives hurricane victims is a loan, and if you don't repay it they can seize your "
        "property.")
ZELENSKY = "In an interview Zelensky admitted that he snorts cocaine for energy in the morning."
VACCINES = "Vaccines cause autism in children."
NO_AUTISM = "Vaccines do not cause autism."
FACEBOOK = "Facebook is about to charge every user a monthly fee unless they post a notice refusing it."

PESKOV = "Песков заявил, что массовые убийства в Буче были умело сделанной кровавой инсценировкой."
CHIPS = "В шприцах с вакциной для людей нашли электронные чипы для слежки."
EXPLODE = "Привитые от COVID-19 люди взрываются под действием излучения сетей 5G."
TRACTOR = "Жители Кыргызстана снесли трактором вышку 5G, испугавшись её излучения."
RU_5G = "Вышки 5G распространяют коронавирус."
RU_VACCINES = "Вакцины вызывают аутизм у детей."
RU_NO_AUTISM = "Вакцины не вызывают аутизм."
RU_MOON = "Высадка американцев на Луну была инсценировкой, всё сняли в павильоне."

UK_5G = "Вежі 5G поширюють коронавірус."
UK_VACCINES = "Вакцини спричиняють аутизм у дітей."
UK_MOON = "Висадка американців на Місяць була інсценуванням, усе зняли в павільйоні."
UK_CHIPS = "У шприцах із вакциною знайшли електронні чипи для стеження."

NEGATES_EN = [
    ("5G does NOT cause COVID", "5G causes COVID"),
    ("5G networks did not cause the coronavirus outbreak", G5),
    ("No, 5G networks do not spread the coronavirus.", G5),
    ("There is no link between 5G networks and the coronavirus", G5),
    ("It's a myth that 5G networks spread the coronavirus", G5),
    ("It is false that 5G spreads the coronavirus", G5),
    ("Debunked: 5G mobile networks spread the coronavirus", G5),
    ("5G spreading the coronavirus is a hoax", G5),
    ("5G networks spread the coronavirus. Fake!", G5),
    ("There is no evidence that 5G networks spread the coronavirus", G5),
    ("I don't think 5G networks spread the coronavirus", G5),
    ("Is it true that 5G doesn't spread the coronavirus?", G5),
    ("5G networks can't spread a virus", G5),
    ("No 5G network has ever spread the coronavirus", G5),
    ("The moon landings were not faked", APOLLO),
    ("It's a myth that the moon landings were faked", APOLLO),
    ("The astronauts weren't filmed in a studio", APOLLO),
    ("The Apollo landings were real, not faked", APOLLO),
    ("The moon landing conspiracy theory is nonsense", APOLLO),
    ("The Bucha massacre was not staged", BUCHA),
    ("Barack Obama was born in the United States", OBAMA),
    ("Eating garlic does not protect you from COVID-19", GARLIC),
    ("The Great Wall of China is not visible from space with the naked eye", WALL),
    ("Holding your breath for ten seconds does not show whether you have the coronavirus", BREATH),
    ("Drinking chlorine dioxide does not cure autism", MMS),
    ("The MMR vaccine does not raise autism risk, the CDC did not hide data", MMR),
    ("The FEMA 750 dollars is not a loan and they won't seize your property", FEMA),
    ("Zelensky never admitted that he snorts cocaine", ZELENSKY),
]

NEGATES_RU = [
    ("Вышки 5G не распространяют коронавирус", RU_5G),
    ("Неправда, что вышки 5G распространяют коронавирус", RU_5G),
    ("Это фейк, что вышки 5G распространяют коронавирус", RU_5G),
    ("Ложь, что вышки 5G распространяют коронавирус", RU_5G),
    ("Не верьте, что вышки 5G распространяют коронавирус", RU_5G),
    ("Миф о том, что вышки 5G распространяют коронавирус", RU_5G),
    ("Опровергнуто: вышки 5G распространяют коронавирус", RU_5G),
    ("Вышки 5G распространяют коронавирус — это фейк", RU_5G),
    ("Вышки 5G никогда не распространяли коронавирус", RU_5G),
    ("Нет никакой связи между вышками 5G и коронавирусом", RU_5G),
    ("Нет, вышки 5G не распространяют коронавирус.", RU_5G),
    ("Ни одна вышка 5G не распространяет коронавирус", RU_5G),
    ("Коронавирус не передаётся через вышки 5G", RU_5G),
    ("Нет доказательств, что вышки 5G распространяют коронавирус", RU_5G),
    ("Говорят, что вышки 5G распространяют коронавирус, но это не так", RU_5G),
    ("Вышки 5G распространяют коронавирус? Нет.", RU_5G),
    ("Вакцины не вызывают аутизм у детей", RU_VACCINES),
    ("Вакцины не вызывают аутизм — это миф", RU_VACCINES),
    ("Высадка на Луну не была инсценировкой", RU_MOON),
    ("Неправда, что высадку на Луну сняли в павильоне", RU_MOON),
    ("Американцы действительно высаживались на Луну, это не инсценировка", RU_MOON),
    ("Убийства в Буче не были инсценировкой", PESKOV),
    ("Чипов в шприцах с вакциной не нашли", CHIPS),
    ("Никаких чипов в вакцинах нет", CHIPS),
    ("Привитые люди не взрываются от излучения 5G", EXPLODE),
    ("Это неправда, что привитые люди взрываются от 5G", EXPLODE),
    ("Привитые взрываются от излучения 5G? Это полный бред", EXPLODE),
    ("Никто не сносил вышку 5G в Кыргызстане", TRACTOR),
]

NEGATES_UK = [
    ("Вежі 5G не поширюють коронавірус", UK_5G),
    ("Це неправда, що вежі 5G поширюють коронавірус", UK_5G),
    ("Неправда, що вежі 5G поширюють коронавірус", UK_5G),
    ("Це фейк, що вежі 5G поширюють коронавірус", UK_5G),
    ("Брехня, що вежі 5G поширюють коронавірус", UK_5G),
    ("Не вірте, що вежі 5G поширюють коронавірус", UK_5G),
    ("Міф про те, що вежі 5G поширюють коронавірус", UK_5G),
    ("Спростовано: вежі 5G поширюють коронавірус", UK_5G),
    ("Вежі 5G поширюють коронавірус — це фейк", UK_5G),
    ("Вежі 5G ніколи не поширювали коронавірус", UK_5G),
    ("Немає жодного зв'язку між вежами 5G і коронавірусом", UK_5G),
    ("Ні, вежі 5G не поширюють коронавірус.", UK_5G),
    ("Жодна вежа 5G не поширює коронавірус", UK_5G),
    ("Немає доказів, що вежі 5G поширюють коронавірус", UK_5G),
    ("Кажуть, що вежі 5G поширюють коронавірус, але це не так", UK_5G),
    ("Вежі 5G поширюють коронавірус? Ні.", UK_5G),
    ("Вакцини не спричиняють аутизм у дітей", UK_VACCINES),
    ("Висадка на Місяць не була інсценуванням", UK_MOON),
    ("Неправда, що висадку на Місяць зняли в павільйоні", UK_MOON),
    ("Чипів у шприцах із вакциною не знайшли", UK_CHIPS),
    ("Інформація про чипи у шприцах із вакциною не відповідає дійсності", UK_CHIPS),
    # across the two Cyrillic languages: a Ukrainian denial of the seed's Russian fact-checked claims
    ("Це неправда, що вежі 5G поширюють коронавірус", RU_5G),
    ("Вакцини не викликають аутизм у дітей", RU_VACCINES),
]

# Negation words, but on the claim's side: these must keep the inherited rating.
AGREES_EN = [
    ("NASA never went to the moon, it was all filmed in a studio", APOLLO),  # the misfire of the issue
    ("Americans never landed on the moon, the landings were filmed in a studio", APOLLO),
    ("The moon landing never happened", APOLLO),
    ("Nobody has ever been to the moon, the Apollo landings were staged", APOLLO),
    ("We never went to the moon. The landings were faked in a studio.", APOLLO),
    ("There was no moon landing, it was staged in a studio", APOLLO),
    ("The moon landing was fake", APOLLO),
    ("The moon landing was a lie", APOLLO),
    ("The moon landing? Never happened.", APOLLO),
    ("Nobody died in Bucha, the video proves the massacre was staged", BUCHA),
    ("Obama was not born in the US, his birth certificate is fake", OBAMA),
    ("Don't upgrade to WhatsApp Gold, it's a fake app with malware", WHATSAPP),
    ("Do not open the WhatsApp video called Martinelli, it hacks your phone", MARTINELLI),
    ("They don't want you to know that 5G networks spread the coronavirus", G5),
    ("Doctors won't tell you that vaccines cause autism", VACCINES),
    ("5G networks not only spread the coronavirus, they spread cancer", G5),
    ("No doubt 5G networks spread the coronavirus", G5),
    ("5G networks spread the coronavirus, and no one can convince me otherwise", G5),
    ("Vaccines cause autism, this is not a conspiracy theory", VACCINES),
    ("Vaccines cause autism, which nobody wants to admit", VACCINES),
    ("Please share: 5G networks spread the coronavirus, I'm not sure why nobody talks about it", G5),
    ("Global warming stopped in 1998", WARMING),
    ("The planet has not warmed since 1998", WARMING),
    ("Sea levels have not risen since the Pilgrims landed at Plymouth Rock", PLYMOUTH),
    ("Nobody needs masks because hydroxychloroquine cures COVID-19", HCQ),
    ("FEMA's 750 dollars is a loan, if you don't repay it they take your house", FEMA),
    ("If you can hold your breath 10 seconds without coughing you don't have covid", BREATH),
    ("Is it a myth that 5G networks spread the coronavirus?", G5),  # a question asserts nothing
]

AGREES_RU = [
    ("Американцы никогда не были на Луне, всё сняли в павильоне", RU_MOON),  # the misfire of the issue
    ("Американцы ни разу не высаживались на Луну", RU_MOON),
    ("Высадки на Луну не было, это была постановка", RU_MOON),
    ("Высадка на Луну — фейк", RU_MOON),
    ("Резни в Буче не было, это постановка", PESKOV),
    ("Никакой резни в Буче не было, всё это инсценировка", PESKOV),
    ("Песков прав, убийства в Буче были инсценировкой", PESKOV),
    ("Вышки 5G распространяют коронавирус, вам об этом не скажут", RU_5G),
    ("Вышки 5G не только распространяют коронавирус, но и вызывают рак", RU_5G),
    ("Не открывайте это видео: вышки 5G распространяют коронавирус", RU_5G),
    ("Не секрет, что вышки 5G распространяют коронавирус", RU_5G),
    ("Вышки 5G распространяют коронавирус, и никто ничего не делает", RU_5G),
    ("Я не знаю, правда ли, что вышки 5G распространяют коронавирус", RU_5G),
    ("Правда ли, что вышки 5G распространяют коронавирус?", RU_5G),
    ("Это фейк или правда, что вышки 5G распространяют коронавирус?", RU_5G),
    ("Вакцины вызывают аутизм, что бы ни говорили врачи", RU_VACCINES),
    ("Врачи скрывают: вакцины вызывают аутизм, а нам не говорят", RU_VACCINES),
    ("Чипы в вакцинах — не миф, их нашли в шприцах", CHIPS),
    ("Не будьте наивны, в шприцах с вакциной нашли чипы для слежки", CHIPS),
    ("В Кыргызстане снесли вышку 5G трактором, не верите — смотрите видео", TRACTOR),
    ("Привитые люди взрываются от 5G, об этом молчат СМИ", EXPLODE),
]

AGREES_UK = [
    ("Американці ніколи не були на Місяці, все зняли в павільйоні", UK_MOON),
    ("Американці жодного разу не висаджувалися на Місяць", UK_MOON),
    ("Висадки на Місяць не було, це була постановка", UK_MOON),
    ("Висадка на Місяць — фейк", UK_MOON),
    ("Вежі 5G поширюють коронавірус, вам про це не скажуть", UK_5G),
    ("Вежі 5G не лише поширюють коронавірус, а й викликають рак", UK_5G),
    ("Не відкривайте це відео: вежі 5G поширюють коронавірус", UK_5G),
    ("Не секрет, що вежі 5G поширюють коронавірус", UK_5G),
    ("Вежі 5G поширюють коронавірус, і ніхто нічого не робить", UK_5G),
    ("Я не знаю, чи правда, що вежі 5G поширюють коронавірус", UK_5G),
    ("Чи правда, що вежі 5G поширюють коронавірус?", UK_5G),
    ("Це фейк чи правда, що вежі 5G поширюють коронавірус?", UK_5G),
    ("Лікарі приховують: вакцини спричиняють аутизм, а нам не кажуть", UK_VACCINES),
    ("Чипи у вакцинах — не міф, їх знайшли у шприцах", UK_CHIPS),
    ("Не будьте наївними, у шприцах із вакциною знайшли чипи для стеження", UK_CHIPS),
    ("Резні в Бучі не було, це постановка", PESKOV),
    ("Американці ніколи не були на Місяці, все зняли в павільйоні", RU_MOON),
]

# The claim itself negates: the same negation agrees, dropping it contradicts.
NEGATED_CLAIMS = [
    ("vaccines don't cause autism", NO_AUTISM, False),
    ("Vaccines cause autism", NO_AUTISM, True),
    ("Lightning doesn't strike the same place twice", LIGHTNING, False),
    ("Lightning can strike the same place twice", LIGHTNING, True),
    ("Lightning does strike the same place twice", LIGHTNING, True),
    ("It is not true that lightning never strikes the same place twice", LIGHTNING, True),
    ("The idea that lightning never strikes twice is a myth", LIGHTNING, True),
    ("Honey doesn't spoil, archaeologists found edible honey in tombs", HONEY, False),
    ("Honey can go bad", HONEY, True),
    ("Вакцины не вызывают аутизм, это доказано", RU_NO_AUTISM, False),
    ("Вакцины не вызывают аутизм, не верьте антипрививочникам", RU_NO_AUTISM, False),
    ("Вакцины вызывают аутизм", RU_NO_AUTISM, True),
]

# Russian and English in one message, or a message in one language and a claim in the other.
MIXED = [
    ("Говорят что 5G towers cause COVID, это правда?", G5, False),
    ("Говорят что 5G towers cause COVID, это правда?", "5G towers cause COVID", False),
    ("Это фейк, что 5G causes COVID", "5G causes COVID", True),
    ("5G не вызывает COVID", "5G causes COVID", True),
    ("Вышки 5G распространяют коронавирус", G5, False),
    ("Вышки 5G не распространяют коронавирус", G5, True),
    ("Американцы никогда не были на Луне, всё сняли в павильоне", APOLLO, False),
    ("Це неправда, що вежі 5G поширюють коронавірус", G5, True),
    ("Вежі 5G поширюють коронавірус", G5, False),
    ("Американці ніколи не були на Місяці, все зняли в павільйоні", APOLLO, False),
    ("Кажуть, що 5G towers cause COVID, це правда?", G5, False),
    # a negation after "if" is a condition: the seed's Facebook notice hoax retold
    ("Facebook почне брати щомісячну плату, якщо не опублікувати заяву", FACEBOOK, False),
    ("Facebook начнёт брать ежемесячную плату, если не опубликовать заявление", FACEBOOK, False),
    ("Facebook will charge every user a monthly fee if they don't post a notice refusing it", FACEBOOK, False),
    ("Facebook не будет брать ежемесячную плату с пользователей", FACEBOOK, True),
    ("Facebook will not charge users a monthly fee", FACEBOOK, True),
]


@pytest.mark.parametrize(("message", "claim"), NEGATES_EN + NEGATES_RU + NEGATES_UK)
def test_a_message_negating_the_claim_is_detected(message, claim):
    assert contradicts(message, claim)


@pytest.mark.parametrize(("message", "claim"), AGREES_EN + AGREES_RU + AGREES_UK)
def test_negation_words_on_the_claims_side_are_not_a_contradiction(message, claim):
    assert not contradicts(message, claim)


@pytest.mark.parametrize(("message", "claim", "expected"), NEGATED_CLAIMS)
def test_a_negated_claim_is_compared_negation_for_negation(message, claim, expected):
    assert contradicts(message, claim) is expected


@pytest.mark.parametrize(("message", "claim", "expected"), MIXED)
def test_mixed_languages(message, claim, expected):
    assert contradicts(message, claim) is expected


def test_repeating_the_claim_is_never_a_contradiction():
    for claim in (APOLLO, G5, MMR, LIGHTNING, HONEY, WARMING, OBAMA, BUCHA, WHATSAPP, MARTINELLI, BREATH, PLYMOUTH,
                  HCQ, FEMA, PESKOV, CHIPS, EXPLODE, TRACTOR, RU_NO_AUTISM, RU_MOON, UK_5G, UK_VACCINES, UK_MOON,
                  UK_CHIPS):
        assert not contradicts(claim, claim), claim
        assert not contradicts(claim.upper(), claim), claim


def test_there_are_enough_cases_in_each_language():
    assert len(NEGATES_EN) >= 15 and len(NEGATES_RU) >= 15 and len(NEGATES_UK) >= 15
    assert len(AGREES_EN) >= 15 and len(AGREES_RU) >= 15 and len(AGREES_UK) >= 15


# --- the offline verdict: a disputed match is shown, not applied (core/matching/denial.py decides) -------------------

def _match(claim: str, verdict: Verdict = Verdict.REFUTED, method: str = "hybrid") -> Match:
    return Match(factcheck_id="fc1", claim=claim, url="https://factcheck.example/1", publisher="Example Checks",
                 rating_text="False", verdict=verdict, similarity=0.97, method=method, tier="auto")


def test_offline_verdict_inherits_an_undisputed_match():
    v = decide("NASA never went to the moon, it was all filmed in a studio", [_match(APOLLO)])
    assert v.verdict == Verdict.REFUTED and t("note.negated", "en") not in v.notes
    assert v.inherited_from == "https://factcheck.example/1"


def test_offline_verdict_shows_but_does_not_inherit_a_disputed_claim():
    v = decide("It's a myth that the moon landings were faked", [_match(APOLLO)], disputed=True)
    assert v.verdict == Verdict.NOT_ENOUGH_EVIDENCE and v.inherited_from is None
    assert t("note.negated", "en") in v.notes
    assert v.citations and v.citations[0].snippet == APOLLO  # shown as "possibly related"
    ru = decide("Неправда, что вышки 5G распространяют коронавирус", [_match(RU_5G)], language="ru", disputed=True)
    assert ru.verdict == Verdict.NOT_ENOUGH_EVIDENCE and t("note.negated", "ru") in ru.notes


def test_an_exact_link_match_is_never_second_guessed():
    v = decide("This is fake! https://factcheck.example/1", [_match(G5, method="url")], disputed=True)
    assert v.verdict == Verdict.REFUTED
