"""The claim, not the wrapper: what of a forwarded chat message carries its claim.

Channel forwards wrap a claim in things no fact-check contains: a forward header ("Переслано из Readovka"),
an alarm ("СРОЧНО!", "⚡️ ТЕРМІНОВО"), a call to share or subscribe ("Перешлите всем, пока не удалили",
"Підписуйтесь"), hashtags, handles, links, emoji runs, a greeting, and a tag question ("Это правда?").
Each of those moved a paraphrase away from its fact-check in the encoders' space (the 5G forward above
fell from p 0.93 to 0.27). `claim_text` drops them, in every language the same way, and keeps every
sentence that may carry a claim; when nothing would be left the message is returned as it was.

The sentence list (`claim_sentences`) lets the matcher also score each sentence of a longer message on
its own: one sentence of context is enough to dilute a short claim.
"""

from __future__ import annotations

import re

from core.intake.claims import split_sentences

# A forward header is a line of its own or ends at a colon; "Источник:" only at a colon ("Источник в Кремле
# сообщил, что …" is a claim).
_FORWARD = re.compile(
    r"^\s*(?:-{2,}\s*)?(?:(?:forwarded\s+(?:from|message|by)|fwd?\b|переслано|пересланное\s+сообщение|"
    r"репост|repost(?:ed)?\s+from)\b(?:[^\n:]{0,60}:|[^\n]*$)|(?:джерело|источник|source)\s*:)",
    re.IGNORECASE | re.MULTILINE)
# Calls to share, subscribe or act; a sentence holding one carries no claim of its own.
_CALL = re.compile(
    r"\b(?:перешлите|перешли\s+(?:всем|друзьям|это)|пересылайте|пересылай|распростран(?:и|ите|яйте)\b|"
    r"поделитесь|поделись|делитесь|репост\w*|"
    r"подпис(?:ыв)?(?:ывайтесь|ывайся|аться|ывайтесь|ись|итесь)\w*|подпишись|подпишитесь|"
    r"пошир(?:те|ьте|юйте|ити|и)\b|перешл(?:іть|ить)\b|переслати|надішл(?:іть|и)\b|розішл(?:іть|и)\b|"
    r"підпис(?:уйтесь|уйся|уйтеся|атися)\b|підпиш(?:іться|ись|іть)\b|"
    r"share\s+(?:this|it|with|before|to|everywhere)|repost\w*|retweet\w*|forward\s+(?:this|to)\w*|"
    r"subscribe(?:\s+to)?\b|follow\s+us|"
    r"пока\s+не\s+удалил\w*|поки\s+не\s+видалил\w*|before\s+(?:they|it\s+gets?)\s+delete\w*|"
    r"ставьте\s+лайк|ставте\s+лайк|like\s+and)", re.IGNORECASE)
# Where the message says it came from, closing a sentence after a comma or dash, or standing alone: "…,
# переслано з «Кавказ сьогодні»", "…, кажуть у каналі «Світова політика»", "Так пишут в пабликах". Who said
# it ("так каже Лавров") is no wrapper: claims are often about what someone said.
_SOURCE = re.compile(
    r"(?:^|[,;:(—–-]\s*)(?:(?:переслано|переслали|переслав|переслала|forwarded|reposted)\b(?:\s+(?:з|із|из|от|від|"
    r"from)\b)?|(?:(?:так|как|як|as)\s+)?(?:кажуть|пишуть|пишут|пишет|пише|говорят|говорять|сообщают|"
    r"повідомляють|розповідають|рассказывают|says|say|writes|write)\s+(?:у|в|на|із|из|з|in|on)\s+(?:\w+\s+)?"
    r"(?:канал\w*|паблик\w*|паблік\w*|телеграм\w*|тг|студи\w*|студі\w*|эфир\w*|ефір\w*|соцсет\w*|"
    r"соцмереж\w*|чат\w*|групп\w*|груп\w*|channels?|chats?|groups?))[^.!?]*[.!?…]*$", re.IGNORECASE)
# A short sentence that only asks whether something is true, or only raises the alarm.
_TAG = re.compile(
    r"^(?:(?:а\s+)?(?:это|це|is\s+(?:this|it)|that'?s|this\s+is)?\s*(?:правда|true|real|фейк|fake|так)\s*(?:ли|чи)?\s*"
    r"(?:или|чи|or)?\s*(?:нет|ні|фейк|fake|not)?|(?:правда|чи\s+правда|кто[- ]нибудь\s+знает|хтось\s+знає|"
    r"anyone\s+know)\s*(?:это|це)?|срочно|терміново|термінова|breaking(?:\s+news)?|urgent|внимание|увага|"
    r"важно|важливо|молния|блискавка|шок|жесть|офигеть|wow|omg|капец|ого|жах|"
    r"(?:всем\s+)?привет\w*(?:\s+всем)?|привіт\w*(?:\s+всім)?|здравствуйте|доброе\s+утро|добрий\s+день|добрый\s+день|"
    r"доброго\s+ранку|hi|hello|hey|друзья|друзі|friends|народ|люди|читайте|дивіться|смотрите|look|"
    r"(?:кто|хто)\s+(?:в\s+курсе|в\s+темі)|что\s+думаете|що\s+думаєте|thoughts)\s*$", re.IGNORECASE)
_HANDLE = re.compile(r"(?<!\w)@\w{3,}")
_HASHTAG = re.compile(r"(?<!\w)#\w+")
_LINK = re.compile(r"(?:https?://|www\.|t\.me/)\S+", re.IGNORECASE)
_NOT_TEXT = re.compile(r"[^\w\s.,;:!?'\"’«»“”()%°$€£-]+")  # emoji, arrows, pictographs
_ALARM_PREFIX = re.compile(
    r"^\s*(?:срочно|терміново|breaking(?:\s+news)?|urgent|внимание|увага|важно|важливо|молния|блискавка|шок|"
    r"жесть|эксклюзив|ексклюзив|exclusive)\s*[!:.\-–—]*\s*", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")
_EMOJI_RUN = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200d]{2,}")


def _strip_sentence(sentence: str) -> str:
    s = _LINK.sub(" ", sentence)
    s = _HANDLE.sub(" ", s)
    s = _HASHTAG.sub(" ", s)
    s = _NOT_TEXT.sub(" ", s)
    s = " ".join(s.split())
    while True:
        cut = _ALARM_PREFIX.sub("", s)
        if cut == s:
            break
        s = cut
    return s.strip(" -–—:;,")


def _before(wrapper: re.Pattern[str], sentence: str) -> str:
    """The sentence up to `wrapper` (a call to share: "… коронавирус, перешлите всем"; a closing source: "…,
    переслано з «…»"); "" when what is left is under three words."""
    found = wrapper.search(sentence)
    if found is None:
        return sentence
    before = sentence[:found.start()]
    return before.strip(" ,;:-–—(") if len(_WORD.findall(before)) >= 3 else ""


def _carries_claim(sentence: str) -> bool:
    if not _WORD.search(sentence):
        return False
    bare = sentence.strip(" !?.…").strip()
    return not _TAG.match(bare)


def claim_sentences(text: str) -> list[str]:
    """The message's sentences that may carry a claim, wrapper removed, in order; [] when none does."""
    body = _EMOJI_RUN.sub("\n", _FORWARD.sub("", text))  # an emoji run ends a sentence as often as not
    out: list[str] = []
    for sentence in split_sentences(body):
        s = _before(_SOURCE, _before(_CALL, _strip_sentence(sentence)))
        if s and _carries_claim(s):
            out.append(s)
    return out


def claim_text(text: str) -> str:
    """The message without its wrapper; the message itself when nothing of it would be left."""
    kept = claim_sentences(text)
    return " ".join(kept) if kept else " ".join(text.split())
