"""Does a message state the opposite of a fact-checked claim? (`contradicts`), in English, Russian and Ukrainian.

Used by the offline verdict (core/verdict/offline_verdict.py): a message that negates a checked claim
("5G does NOT cause COVID" against "5G causes COVID") matches it as closely as one repeating it, and
inheriting the rating would invert the answer. Counting negation words and comparing parity does not
work: "NASA never went to the moon, it was all filmed in a studio" agrees with the claim "The Apollo
moon landings were faked…", and "vaccines don't cause autism" agrees with "Vaccines do not cause
autism". So polarity is decided relative to the claim:

1. Debunk frames flip what they frame: "it's a myth that X", "неправда, что X", "це брехня, що X",
   "debunked: X", "X — фейк", "X is a hoax"; a frame standing alone ("Fake!", "Это ложь.") flips the whole message.
   Frames inside a question ("Is it a myth that X?", "это правда или фейк?") assert nothing.
2. A negation word ("not", "n't", "never", "no", "не", "никогда", "нет", "ни", "ніколи", "немає", …) scopes
   over the next few content words of its clause. Several in one clause are one negation ("никогда не были", "ни одна
   вышка не…"). Not negations: "no," / "нет," as an interjection, "not only" / "не только", "no doubt",
   an imperative ("don't share this", "не открывайте") and a negated verb of knowing or saying
   ("they don't want you to know that X", "вам не скажут, что X"), and a negation a few words after "if"
   ("if you don't post this notice", "якщо не опублікувати") — none of these deny X.
3. The words one negation covers are looked up in the other text (words are aligned by prefix, so
   "Луне"/"Луну" and "caused"/"causes" are one word). It is a contradiction when the other text has
   some of them and negates none ("did not cause the coronavirus outbreak" against "5G … spread the
   coronavirus"), provided the negated clause shares at least two words with the other text (so "NASA
   never went to the moon, it was all filmed in a studio" is not weighed on "moon" alone). Both ways
   round: a negation in the claim that the message drops is a contradiction too. "Vaccines do not
   cause autism" and "vaccines don't cause autism" negate the same words: no contradiction.
4. A claim that something was faked ("were faked", "staged", "инсценировка", "постановка") is
   itself a denial of an event, so with such a claim denying the event is agreeing with it: "NASA never
   went to the moon", "американцы никогда не были на Луне", "it was fake", "the landing was a lie" are
   the hoax side, while "the landings were not faked", "it's a myth that it was staged" contradict it.
5. When the texts share fewer than two content words (a Russian message and an English claim), words
   cannot be aligned and each text's overall polarity (after rules 1, 2 and 4) is compared instead.

A misfire costs a verdict (the rating is shown, not inherited); a miss inverts one. Where unsure the
rules lean to flagging. Known limits are in docs/architecture.md ("Negation guard").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_SCOPE = 4  # content words a negation covers: "did not cause the coronavirus outbreak"
WHOLE = -2  # the cue of a frame standing alone
HOAX = "<hoax>"  # one word for every "it was faked" word, so "fake" aligns with "staged" and "инсценировка"

_NEGATIONS = frozenset("""
not n't no never none nobody nothing neither nor nowhere cannot impossible dont doesnt didnt isnt arent
wasnt werent cant wont havent hasnt wouldnt couldnt shouldnt aint
не нет ни никогда никто ничто ничего нигде никак никакой никакая никакое никакие никаких никакого
никому никого нельзя невозможно отнюдь
ні ніколи ніхто ніщо нічого ніде ніяк ніякий ніяка ніяке ніякі ніяких ніякого нікому нікого немає неможливо
жоден жодна жодне жодні жодного жодної жодних
""".split())

# Function words: never content, so they neither align texts nor fall under a negation's scope.
_STOP = frozenset("""
a an the and or but if then so as of in on at to for from by with about into onto over under up down out
than that this these those there here it its they them their he him his she her we us our you your
i me my is are was were be been being am 's 're do does did done have has had will would shall should can
could may might must just also even ever really actually very too all any some every each only such what
which who whom whose when where why how get got make made let yes ok okay please now still already again
one ones people lot lots much many more most say says said claim claims true really
и или но а же ли бы что чтобы как так то это этот эта эти этого этой тот та те того там тут здесь вот
в во на с со к ко по о об от до из за для при про под над без через у же уже еще ещё вообще именно
он она оно они его ее её их им ей мы нас нам вы вас вам я меня мне ты тебя тебе
был была было были быть есть будет будут является являются всё все весь вся всех всем
да ну очень тоже также только даже просто вроде якобы говорят пишут правда ли хотя разу действительно
і й або чи але що щоб як це цей ця ці цього цієї ті те там тут ось від із зі для при про під над без
через він вона воно вони його її їх їм їй ми нас нам ви вас вам мене мені ти тебе тобі був була було були
бути є буде будуть усе усі всі все весь вся всіх всім дуже теж також тільки лише навіть нібито кажуть
пишуть справді вже ще між раз
""".split())

_BE = frozenset("is are was were be been being 's 're был была было были быть бывал бывали "
                "був була було були бути бував бували є".split())

# A negated verb of knowing, saying or wanting is about the speaker, not the claim:
# "they don't want you to know that…", "doctors won't tell you", "I'm not sure", "вам не скажут".
_EPISTEMIC = re.compile(
    r"^(?:know\w*|knew|sure|tell\w*|told|say\w*|said|talk\w*|want\w*|hear\w*|mention\w*|report\w*|"
    r"understand\w*|explain\w*|знаю|знают|знает|знал\w*|знать|знаете|уверен\w*|скаж\w*|расскаж\w*|"
    r"рассказыва\w*|говор\w*|покаж\w*|показыва\w*|хот[ия]т|хочу|хочет|понима\w*|сообща\w*|пишут|пишет|"
    r"знає|знав\w*|знати|знаєте|впевнен\w*|розкаж\w*|розповіда\w*|каж\w*|показу\w*|хочуть|хоче|розумі\w*|"
    r"повідомля\w*|пише)$")
# "if you don't post this notice", "якщо не опублікувати", "если вы не": a negation a few words after "if" is a
# condition, not a denial. Across languages (rule 5) it flipped the whole message: "Facebook почне брати плату, якщо
# не опублікувати заяву" lost the verdict of "Facebook is about to charge every user a monthly fee unless they post
# a notice".
_CONDITIONAL = frozenset("if якщо якби если ежели".split())
CONDITION_REACH = 3  # tokens between "if" and the negation: "if you do n't", "если вы не", "якщо не"
_FILLER = frozenset("please just so and then also пожалуйста и просто никогда і й будь ласка ніколи".split())
# Imperatives, Russian and Ukrainian: "не открывайте", "не верьте", "не поширюйте", "не робіть", "не їжте".
_IMPERATIVE = re.compile(r"(?:йте|ите|ьте|ай|яй|іть|їть|жте)$")
_NOT_A_NEGATION = re.compile(
    r"\b(?:not\s+only|not\s+just|no\s+doubt|no\s+wonder|no\s+surprise|or\s+not|"
    r"не\s+только|не\s+просто|не\s+секрет|не\s+зря|не\s+случайно|не\s+так\s+ли|не\s+правда\s+ли|"
    r"не\s+лише|не\s+тільки|не\s+дарма|не\s+випадково|чи\s+не\s+так)\b")
# Words that say an event was faked; a claim with one (un-negated) is a hoax claim (rule 4).
_HOAX_WORD = re.compile(
    r"^(?:fake[sdr]?|faking|fakery|hoax(?:es|ed)?|staged|staging|fabricat\w*|forged|forgery|doctored|"
    r"фейк\w*|инсцен\w*|постанов\w*|фальсиф\w*|фальшив\w*|поддел\w*|сфабрик\w*|інсцен\w*|підроб\w*)$")
# An event happening or being real; denying it is the hoax side of a hoax claim (rule 4).
_OCCURRENCE = re.compile(
    r"^(?:went|go|goes|gone|going|happen\w*|occur\w*|exist\w*|land\w*|took|visit\w*|walk\w*|real|genuine|"
    r"true|die[sd]?|dead|death\w*|kill\w*|murder\w*|massacre\w*|"
    r"был\w*|быв\w*|случ\w*|произо\w*|сущест\w*|высад\w*|высаж\w*|летал\w*|летел\w*|полет\w*|ступ\w*|"
    r"погиб\w*|умер\w*|убит\w*|убив\w*|убил\w*|настоящ\w*|реальн\w*|правд\w*|резн\w*|"
    r"був\w*|бул[аои]|бува\w*|відбу\w*|стал[ао]?с[яь]|існу\w*|висадж\w*|літал\w*|політ\w*|загин\w*|помер\w*|"
    r"вбит\w*|вбив\w*|вбил\w*|справжн\w*|різанин\w*)$")
# "were not filmed" is a passive, not "were not (there)": the participle keeps the negation.
_PARTICIPLE = re.compile(r"^(?:\w+(?:ed|en|wn)|born|shot|made|built|set|put|hit|shown)$")
_THEORY = re.compile(r"^(?:conspirac\w*|theor\w*|claims?|rumou?rs?|заговор\w*|теори\w*|слух\w*|утвержден\w*|"
                     r"змов\w*|теорі\w*|чутк\w*|твердженн\w*)$")

# --- debunk frames (rule 1) --------------------------------------------------------------------------------
_FAKE_EN = r"(?:fake(?:\s+news)?|a\s+fake|a\s+hoax|hoax|staged)"  # "fake" words: hoax side of a hoax claim
_FALSE_EN = (r"(?:not\s+true|n't\s+true|untrue|false|a\s+myth|myth|a\s+lie|lies?|nonsense|rubbish|baseless|"
             r"manipulation|propaganda|"
             r"wrong|not\s+the\s+case|misinformation|disinformation|debunked|bs|bullshit|"
             r"a\s+conspiracy\s+theory|a\s+(?:complete|total)\s+(?:lie|myth|fabrication))")
# Russian and Ukrainian ("брехня", "міф", "вигадка", "маячня", "інсценування") in one pattern: a Telegram post
# mixes them, and the frames around these words ("что"/"що", "это"/"це") are built alike.
_FAKE_CYR = r"(?:фейк\w*|постановк\w*|инсценировк\w*|інсценуванн\w*|інсценізаці\w*)"
_FALSE_CYR = (r"(?:неправда|не\s+правда|ложь|ложью|вран[ье]\w*|брехня|миф\w*|выдумк\w*|чушь|бред|"
             r"утк[аой]|сказк\w*|дезинформаци\w*|не\s+так|манипуляци\w*|вброс\w*|пропаганд\w*|"
             r"маніпуляці\w*|вкид\w*|"
             r"міф\w*|вигадк\w*|маячн\w*|нісенітниц\w*|дезінформаці\w*|казк\w*)")
_END = r"(?=\s*(?:[^\w\s]|$))"  # the predicate ends the clause: "is a fake." but not "is a fake app"


@dataclass(frozen=True)
class _Frame:
    pattern: re.Pattern[str]
    prefix: bool  # frames what follows ("it's false that X"), else what precedes ("X is false")
    fake: bool  # its predicate says "faked": agreement, not denial, for a hoax claim


def _frames(fake: str, false: str, prefix: bool, template: str) -> list[_Frame]:
    return [_Frame(re.compile(template.format(p=fake)), prefix, True),
            _Frame(re.compile(template.format(p=false)), prefix, False)]


_FRAMES: list[_Frame] = [
    # "it's a myth that X", "it is not true that X", "неправда, что X", "это фейк, будто X"
    *_frames(_FAKE_EN, _FALSE_EN, True, r"(?:\b(?:it|this|that)\s*(?:is|'s|was)\s+)?\b{p}\s+(?:that|to\s+say)\b"),
    *_frames(_FAKE_CYR, _FALSE_CYR, True, r"(?:\b(?:это|це)\s+)?\b{p}\s*,?\s*(?:что|будто|чтобы|о\s+том\s*,?\s*что|"
             r"що|ніби|нібито|буцімто|начебто|про\s+те\s*,?\s*що)\b"),
    # "Myth: X", "Debunked: X", "Фейк: X"
    *_frames(r"(?:fake|hoax)", r"(?:myth|false|debunked|not\s+true|fact[\s-]?check\s*:\s*false)", True,
             r"^\W*{p}\s*[:!—–-]"),
    *_frames(r"(?:фейк)", r"(?:миф|ложь|неправда|опровергнуто|опровержение|міф|брехня|спростовано|спростування|"
             r"манипуляция|маніпуляція|вброс|вкид|бред|чушь|маячня|(?:очередной|черговий)\s+(?:вброс|вкид|фейк))",
             True, r"^\W*{p}\s*[:!—–-]"),
    # disbelief and denial: "don't believe that X", "I don't think X", "не верьте, что X", "no evidence that X"
    _Frame(re.compile(r"\b(?:do\s+not|do\s+n't|dont|never)\s+(?:believe|fall\s+for|trust)\b|"
                      r"\bi\s+(?:do\s+not|do\s+n't|dont)\s+(?:think|believe)\b|\bi\s+doubt\b|"
                      r"\b(?:no|zero|not\s+any|without\s+any)\s+(?:evidence|proof)\b|"
                      r"\bthe\s+(?:myth|lie)\s+(?:that|of)\b|\b(?:debunk\w*|disprov\w*|refut\w*|deni\w*|deny)\b|"
                      r"\bstop\s+(?:spreading|sharing)\b"), True, False),
    _Frame(re.compile(r"\bне\s+(?:вер(?:ьте|ь|ю|им)|ведитесь|думаю|считаю)\b|\bсомневаюсь\b|"
                      r"\b(?:нет|никаких|не\s+существует)\s+(?:никаких\s+)?"
                      r"(?:доказательств|данных|подтверждени[йя]|свидетельств)\b|"
                      r"\bмиф\w*\s+(?:о|об|про)\b|\b(?:опроверг\w*|развенчива\w*|отрица\w*)\b"), True, False),
    _Frame(re.compile(r"\bне\s+(?:вір(?:те|ь|ю|имо)|ведіться|думаю|вважаю)\b|\bсумніва\w*\b|"
                      r"\b(?:немає|нема|жодних|не\s+існує)\s+(?:жодних\s+)?"
                      r"(?:доказ\w*|даних|підтвердженн\w*|свідчен\w*)\b|"
                      r"\bміф\w*\s+про\b|\b(?:спростов\w*|розвінчу\w*|заперечу\w*)\b"), True, False),
    # "X is a hoax", "X has been debunked", "X — фейк", "X оказалось фейком", "X не соответствует действительности"
    *_frames(_FAKE_EN, _FALSE_EN, False,
             r"\b(?:is|are|was|were|'s|'re)\s+(?:just\s+|all\s+|simply\s+|completely\s+|totally\s+)?{p}" + _END),
    _Frame(re.compile(r"\b(?:has|have|had)\s+been\s+(?:debunked|disproven|disproved|refuted)\b"), False, False),
    *_frames(_FAKE_EN, _FALSE_EN, False, r"(?:\s[—–-]+|^)\s*(?:(?:this|that|it)\s*(?:is|'s)\s+)?{p}" + _END),
    *_frames(_FAKE_CYR, _FALSE_CYR, False, r"(?:[—–-]+|\b(?:это|це)\b|^)\s*(?:(?:всё|все|это|усе|це)\s+)?"
             r"(?:(?:полн|наглая|очередн|абсолютн|откровенн|чист|повн|нахабн|черговн?|відверт)\w*\s+)?{p}" + _END),
    *_frames(r"(?:фейком|постановкой|инсценировкой|постановкою|інсценуванням)",
             r"(?:ложью|мифом|выдумкой|уткой|неправдой|брехнею|міфом|вигадкою|неправдою)", False,
             r"\b(?:является|был[оаи]?|оказал(?:ся|ась|ось|ись)|є|був|бул[оаи]|виявил(?:ся|ася|ося|ися|ось))\s+{p}\b"),
    _Frame(re.compile(r"\bне\s+соответству\w+\s+действительности\b|"
                      r"\b(?:опровергнут[оаы]?|развенчан[оаы]?|разоблачен[оаы]?)\b|"
                      r"\bне\s+відповіда\w+\s+дійсності\b|\b(?:спростован[оаі]?|розвінчан[оаі]?|викрит[оаі]?)\b"),
           False, False),
]

# A new subject ends a negation's scope: "if you don't repay it they can seize your property".
_SUBJECTS = frozenset("they we he she i они мы он она я вони ми він вона".split())
_PRONOUNS = frozenset("it this that это то всё все це те усе".split())
_COMPLEMENTIZER = frozenset("that whether if что чтобы будто ли що щоб ніби нібито чи".split())
_CLAUSE_WORDS = frozenset("but however although though while whereas instead because which "
                          "а но однако зато хотя потому поэтому который которая которое которые которых "
                          "але проте однак зате хоча тому який яка яке які яких".split())
_SENTENCE = re.compile(r"[^.!?…\n]+[.!?…]*")
_TOKEN = re.compile(r"n't|'s|'re|\w+|[^\w\s]")


@dataclass(frozen=True)
class _Hoax:
    """A claim that something was faked (rule 4): the words of its clause saying so (the event: "the Apollo
    moon landings were faked") and all its words (the rest are details: "filmed on a studio set")."""
    event: list[str]
    words: list[str]

    def is_event(self, word: str) -> bool:
        """An event word, an occurrence word, or no word of the claim at all."""
        return (_OCCURRENCE.match(word) is not None or any(_same(word, e) for e in self.event)
                or not any(_same(word, w) for w in self.words))


@dataclass
class _Token:
    word: str
    form: str
    start: int
    content: bool
    clause: int
    negated: bool = False
    cue: int = -1  # which negation or frame negates it (its offset): words of one negation are compared together


@dataclass
class _Text:
    tokens: list[_Token] = field(default_factory=list)
    whole_framed: bool = False  # a frame standing alone: "Fake!", "Это ложь."

    def clauses(self) -> dict[int, list[_Token]]:
        out: dict[int, list[_Token]] = {}
        for t in self.tokens:
            if t.content:
                out.setdefault(t.clause, []).append(t)
        return out

    def content(self) -> list[_Token]:
        return [t for t in self.tokens if t.content]

    def polar(self) -> bool:
        return self.whole_framed or any(t.negated for t in self.tokens)


def _normalise(text: str) -> str:
    text = text.casefold().replace("ё", "е").replace("’", "'").replace("‘", "'").replace("`", "'")
    text = re.sub(r"(?<=\w)-(?=\w)", " ", text)  # "man-made", "COVID-19": one clause, not two
    text = re.sub(r"(\w)n't\b", r"\1 n't", text)
    return re.sub(r"\bcannot\b", "can not", text)


def _stem(word: str) -> str:
    if _HOAX_WORD.match(word):
        return HOAX
    if word.isascii():  # a light English stemmer: "causes", "caused", "causing" -> "caus"
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        if word.endswith("e") and len(word) > 3:
            word = word[:-1]
    return word


def _same(a: str, b: str) -> bool:
    """One word in two inflections, compared on a prefix: "луне"/"луну", "вакцины"/"вакцинация"."""
    if a == b:
        return True
    if HOAX in (a, b):
        return False
    common = len(next((a[:i] for i in range(min(len(a), len(b)), 0, -1) if a[:i] == b[:i]), ""))
    return common >= min(5, max(3, min(len(a), len(b)) - 1))


def _is_content(word: str) -> bool:
    return word not in _STOP and word not in _NEGATIONS and word.isalnum() and (
        len(word) >= 3 or any(c.isdigit() for c in word))


def _occurrence(words: list[str]) -> bool:
    """Does this stretch speak of an event happening or being real (not of a passive "were filmed")?"""
    for i, w in enumerate(words):
        if _OCCURRENCE.match(w) and w not in _BE:
            return True
        if w in _BE:
            after = next((x for x in words[i + 1:] if _is_content(x) or x in _BE), "")
            if not _PARTICIPLE.match(after) or _OCCURRENCE.match(after):
                return True
    return False


def _hoax(claim: str) -> _Hoax | None:
    """The claim as a hoax claim, if it says (without negating it) that something was faked."""
    parsed = _parse(claim, _Hoax([], []))  # "is a fake" read as content here, not as a debunk frame
    clauses = parsed.clauses().values()
    event = [t.word for c in clauses if any(t.word == HOAX and not t.negated for t in c) for t in c]
    return _Hoax(event, [t.word for c in clauses for t in c]) if event else None


def _parse(text: str, hoax: _Hoax | None) -> _Text:
    """Tokens with clause numbers and negation (rules 1, 2 and 4); `hoax`: the claim, if a hoax claim."""
    out = _Text()
    norm = _normalise(text)
    clause = 0
    after_question = False
    for sent in _SENTENCE.finditer(norm):
        s, base = sent.group(), sent.start()
        question = s.rstrip().endswith("?")
        consumed: list[tuple[int, int]] = [m.span() for m in _NOT_A_NEGATION.finditer(s)]
        targets: list[tuple[int, int, bool, int]] = []  # (start, end, fake frame, id)
        if not question:
            for fr in _FRAMES:
                if fr.fake and hoax:
                    continue  # "it was fake" agrees with "were faked": its words are content (HOAX)
                for m in fr.pattern.finditer(s):
                    if any(a < m.end() and m.start() < b for a, b in consumed):
                        continue
                    consumed.append(m.span())
                    span = (m.end(), len(s)) if fr.prefix else (0, m.start())
                    targets.append((*span, fr.fake, base + m.start()))
        words = [(m.group(), m.start()) for m in _TOKEN.finditer(s)]
        toks: list[_Token] = []
        negations: list[int] = []
        for i, (w, start) in enumerate(words):
            if not w[0].isalnum() and w not in ("n't", "'s", "'re"):
                if w not in ("'", '"') and not (w == "," and _continues([x for x, _ in words[i + 1: i + 4]])):
                    clause += 1
                continue
            if w in _CLAUSE_WORDS:
                clause += 1
            inside = any(a <= start < b for a, b in consumed)
            toks.append(_Token(_stem(w), w, base + start, _is_content(w) and not inside, clause))
            if w in _NEGATIONS and not inside:
                negations.append(len(toks) - 1)
        raw = [w for w, _ in words if w[0].isalnum() or w in ("n't", "'s", "'re")]
        for i in negations:
            _apply_negation(toks, raw, i, hoax)
        for a, b, _fake, frame in targets:
            target = [t for t in toks if base + a <= t.start < base + b]
            framed = [t for t in target if t.content]
            if hoax and framed and not any(t.word == HOAX or _THEORY.match(t.form) for t in target) \
                    and all(hoax.is_event(t.word) for t in framed):
                continue  # "the moon landing was a lie": the hoax side of "the landings were faked"
            if all(t.form in _PRONOUNS or t.form in _FILLER for t in target):
                out.whole_framed = True  # "Fake!", "This is false.", "Это фейк.", "Don't believe it"
            for t in framed:
                t.negated = not t.negated
                t.cue = frame if t.negated else -1
        if after_question and negations and not any(t.content for t in toks):
            out.whole_framed = True  # "5G spreads COVID? No.", "…? It does not.", "…? Нет."
        after_question = question
        out.tokens.extend(toks)
        clause += 1
    if out.whole_framed:
        for t in out.tokens:
            if not t.negated:
                t.negated, t.cue = True, WHOLE
    return out


def _continues(after: list[str]) -> bool:
    """A comma that does not end the clause: before "that"/"что" ("неправда, что X"), and before a negated
    tail that needs the words before it ("the landings were real, not faked", "…, это не инсценировка")."""
    return bool(after) and (after[0] in _COMPLEMENTIZER or after[0] in _NEGATIONS or
                            after[0] in _PRONOUNS and any(w in _NEGATIONS for w in after[1:]))


def _opens_clause(toks: list[_Token], raw: list[str], i: int) -> bool:
    """Only filler words ("please", "just", "и") come before token i in its clause."""
    j = i - 1
    while j >= 0 and toks[j].clause == toks[i].clause:
        if raw[j] not in _FILLER:
            return False
        j -= 1
    return True


def _apply_negation(toks: list[_Token], raw: list[str], i: int, hoax: _Hoax | None) -> None:
    """Mark the content words under the negation word at `i` (rule 2), unless it is no denial."""
    cue = toks[i]
    nxt = raw[i + 1] if i + 1 < len(raw) else ""
    prev = raw[i - 1] if i else ""
    if cue.word in ("no", "нет", "ні") and (i + 1 == len(raw) or toks[i + 1].clause != cue.clause or nxt in _STOP):
        return  # "No, 5G does not…", "Нет, это…": an interjection; the rest of the sentence says it
    if (cue.word in ("n't", "not") and prev == "do" and _opens_clause(toks, raw, i - 1)) or \
            (cue.word in ("dont", "never") and _opens_clause(toks, raw, i)) or \
            (cue.word == "не" and _IMPERATIVE.search(nxt) and _opens_clause(toks, raw, i)):
        return  # "Don't share this", "Never open…", "Не открывайте видео": a warning, not a denial
    if any(raw[j] in _CONDITIONAL and toks[j].clause == cue.clause for j in range(max(0, i - CONDITION_REACH), i)):
        return  # "if you don't post the notice": a condition
    scope = [j for j in range(i + 1, len(toks)) if toks[j].clause == cue.clause]
    head = next((j for j in scope if toks[j].content), None)
    if head is None:
        return
    if any(_EPISTEMIC.match(w) for w in raw[i + 1: head + 1]):
        return  # "they don't want you to know that…", "вам не скажут, что…"
    covered: list[_Token] = []
    for j in scope:
        if raw[j] in _COMPLEMENTIZER or raw[j] in _SUBJECTS or len(covered) == MAX_SCOPE:
            break
        if toks[j].content:
            covered.append(toks[j])
    if hoax and not any(t.word == HOAX for t in covered) and _occurrence([prev] + raw[i + 1: head + 1]):
        return  # "never went to the moon", "никогда не были на Луне": the hoax side (rule 4)
    # "никогда не были", "ни одна вышка не…": one negation, however many words say it
    cue_id = next((t.cue for t in covered if t.negated), cue.start)
    for t in covered:
        t.negated, t.cue = True, cue_id


def _conflict(a: _Text, b: _Text) -> bool:
    """A negation in `a`, over words `b` shares, that `b` does not carry (none of those words negated in `b`).
    "did not cause the coronavirus outbreak" vs "5G … spread the coronavirus": yes. "The planet has not warmed
    since 1998" vs "… 1998 and the planet has not warmed since": no, `b` negates "warmed" too."""
    words_a, words_b = a.content(), b.content()
    negations: dict[int, list[_Token]] = {}
    for t in words_a:
        if t.negated:
            negations.setdefault(t.cue, []).append(t)
    for covered in negations.values():
        clauses = {t.clause for t in covered}
        if _overlap([t for t in words_a if t.clause in clauses], words_b) < 2:
            continue  # a part of `a` about something else: "NASA never went to the moon, it was all filmed…"
        hits = [u for t in covered for u in words_b if _aligned(t, u, words_a)]
        if hits and not any(u.negated for u in hits):
            return True
    return False


def _aligned(t: _Token, u: _Token, words_a: list[_Token]) -> bool:
    """`u` is the word `t` stands for, not an un-negated same-stem neighbour of it: in "Global warming stopped in
    1998 and the planet has not warmed since", a "warming" elsewhere is the claim's "warming", not "warmed"."""
    return _same(t.word, u.word) and (u.form == t.form or
                                      not any(s.form == u.form and not s.negated for s in words_a))


def _overlap(c: list[_Token], d: list[_Token]) -> int:
    return len({t.word for t in c if any(_same(t.word, u.word) for u in d)})


def contradicts(message: str, claim: str) -> bool:
    """True when `message` states the opposite of `claim` (see the module docstring for the rules)."""
    hoax = _hoax(claim)
    m, c = _parse(message, hoax), _parse(claim, hoax)
    if _overlap(m.content(), c.content()) < 2:
        return m.polar() != c.polar()
    return _conflict(m, c) or _conflict(c, m)


POLARITY_FEATURES = ("rules_contradict", "message_polar", "claim_polar", "message_framed", "across_languages",
                     "message_negates_claim", "claim_negates_message", "question", "message_negated", "framed_words",
                     "message_negation_words", "message_frames", "claim_negation_words", "claim_frames")


def _cues(text: str) -> tuple[int, int]:
    """Negation words and debunk frames in a text, counted raw: the rules above let a frame cancel a negation
    ("Никаких чипов нет, это выдумка" reads as the hoax side), the counts do not."""
    s = _normalise(text)
    consumed = [m.span() for m in _NOT_A_NEGATION.finditer(s)]
    words = sum(1 for m in _TOKEN.finditer(s)
                if m.group() in _NEGATIONS and not any(a <= m.start() < b for a, b in consumed))
    return words, sum(len(fr.pattern.findall(s)) for fr in _FRAMES)


def polarity_features(message: str, claim: str) -> list[float]:
    """What the rules above see in a pair, as inputs of the learned decision (core/matching/denial.py): the rules'
    own answer, the pieces it is made of, and the raw cue counts."""
    hoax = _hoax(claim)
    m, c = _parse(message, hoax), _parse(claim, hoax)
    across = _overlap(m.content(), c.content()) < 2
    m_c, c_m = _conflict(m, c), _conflict(c, m)
    said = m.polar() != c.polar() if across else (m_c or c_m)
    return [float(v) for v in (said, m.polar(), c.polar(), m.whole_framed, across, m_c, c_m,
                               message.rstrip().endswith("?"), any(t.negated for t in m.tokens),
                               sum(t.negated and t.cue >= 0 for t in m.tokens), *_cues(message), *_cues(claim))]
