"""Query cleaning for claim matching.

A forwarded message or pasted tweet carries noise around the claim: links, emoji, a forwarding
header, a tweet signature. Each step below is a small named function; `clean_query` applies only the
steps that measured as helping on the CLEF-2020 CheckThat! Task 2 *train* split (dev was only
reported). Each step's comment gives train MAP@5 as "dense / hybrid RRF / re-ranker (5-fold CV)",
without -> with the step; "dense" is the plain baseline (cosine to the claim+title embedding), "RRF"
the reciprocal-rank fusion of dense-claim, dense-title and BM25. Rule: keep a step when the mean of
the three changes is positive. Full table in docs/decisions/2026-11-24-matching-measurements.md.

Steps that measured as harmful are still defined here (so the measurement is reproducible with
`clean_query(text, steps=...)`) but are not in `DEFAULT_STEPS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# --- forwarding headers (chat forwards; no tweet has one, so no MAP effect on CLEF: neutral) ------

_FORWARD_HEADER = re.compile(
    r"^\s*(?:-{2,}\s*)?(?:forwarded\s+(?:from|message|by)|fwd?:|переслано\s+от|пересланное\s+сообщение)"
    r"[^\n]*(?:\n|$)",
    re.IGNORECASE | re.MULTILINE,
)


def strip_forward_header(text: str) -> str:
    """Drop "Forwarded from X" / "Переслано от X" / "Fwd:" header lines added by chat clients.
    KEPT: no CLEF tweet has one (measured identical), it only removes a chat client's own header."""
    return _FORWARD_HEADER.sub("", text)


# --- links ------------------------------------------------------------------------------------

# Tweets glue links to the preceding word ("#Trump2020pic.twitter.com/x", "today.https://t.co/x"),
# so the patterns do not require a word boundary before the link.
_PIC_LINK = re.compile(r"pic\.twitter\.com/\w+", re.IGNORECASE)
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)


def remove_pic_links(text: str) -> str:
    """Remove pic.twitter.com/... image links (they name no topic).
    KEPT (with remove_urls, after hashtag_to_words): .8068/.8856/.9114 -> .8165/.8853/.9092
    (mean +0.0024; alone on raw text: .8036/.8776/.9059 -> .8107/.8791/.9046)."""
    return _PIC_LINK.sub(" ", text)


def remove_urls(text: str) -> str:
    """Remove http(s):// and www. links (shortened t.co links carry no words).
    KEPT with remove_pic_links (see there); alone on raw: .8036/.8776/.9059 -> .8071/.8776/.9046."""
    return _URL.sub(" ", text)


# --- emoji ------------------------------------------------------------------------------------

_EMOJI = re.compile(
    "[\U0001F000-\U0001FAFF\U00002600-\U000027BF\U0001F1E6-\U0001F1FF\U0000FE0F\U0000200D\U00002B00-\U00002BFF]+"
)


def remove_emoji(text: str) -> str:
    """Remove emoji, flags, variation selectors and zero-width joiners.
    NOT KEPT: neutral (.8165/.8853/.9092 -> .8166/.8853/.9092)."""
    return _EMOJI.sub(" ", text)


# --- hashtags and mentions ----------------------------------------------------------------------

_HASHTAG = re.compile(r"#(\w+)")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
_MENTION = re.compile(r"(?<!\w)\.?@(\w+)")


def hashtag_to_words(text: str) -> str:
    """"#FreeIran2020" -> "Free Iran 2020": keep the words, drop the sign, split CamelCase.
    KEPT: .8036/.8776/.9059 -> .8068/.8856/.9114 (the largest gain of any step)."""
    return _HASHTAG.sub(lambda m: _CAMEL.sub(" ", m.group(1)), text)


def hashtag_drop_sign(text: str) -> str:
    """"#FreeIran2020" -> "FreeIran2020".  NOT KEPT (hashtag_to_words is better): .8036/.8776/.9059 -> .8050/.8777/.9053."""
    return _HASHTAG.sub(r"\1", text)


def mention_to_word(text: str) -> str:
    """".@BarackObama" -> "BarackObama".
    NOT KEPT: .8165/.8853/.9092 -> .8139/.8843/.9091."""
    return _MENTION.sub(r"\1", text)


def remove_mentions(text: str) -> str:
    """NOT KEPT: .8036/.8776/.9059 -> .7804/.8609/.8931 (handles name the people claims are about)."""
    return _MENTION.sub(" ", text)


# --- tweet signature ----------------------------------------------------------------------------

_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_SIGNATURE = re.compile(r"\s*[—–-]\s*[^—–\n]{0,80}\(@\w+\)\s*(?:" + _MONTHS + r"\s+\d{1,2},\s+\d{4})?\s*$")
_SIGNATURE_DATE = re.compile(r"(\(@\w+\))\s*" + _MONTHS + r"\s+\d{1,2},\s+\d{4}\s*$")


def strip_signature(text: str) -> str:
    """Drop the trailing "— Name (@handle) Month D, YYYY" of a pasted tweet.
    NOT KEPT: .8036/.8776/.9059 -> .7821/.8496/.8741 (the author is often the claim's subject)."""
    return _SIGNATURE.sub("", text)


def strip_signature_date(text: str) -> str:
    """Keep the author's name and handle, drop only the date of the signature.
    NOT KEPT: .8036/.8776/.9059 -> .8024/.8731/.8959."""
    return _SIGNATURE_DATE.sub(r"\1", text)


# --- whitespace -------------------------------------------------------------------------------

_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


def normalise_space(text: str) -> str:
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", text)).strip()


STEPS: dict[str, Callable[[str], str]] = {
    "forward_header": strip_forward_header,
    "pic_links": remove_pic_links,
    "urls": remove_urls,
    "emoji": remove_emoji,
    "hashtag_words": hashtag_to_words,
    "hashtag_sign": hashtag_drop_sign,
    "mention_word": mention_to_word,
    "mentions": remove_mentions,
    "signature": strip_signature,
    "signature_date": strip_signature_date,
}

# Measured on train (see docs/decisions/2026-11-24-matching-measurements.md); order matters: links go before hashtags because tweets
# glue "pic.twitter.com/..." onto the last hashtag.
DEFAULT_STEPS: tuple[str, ...] = ("forward_header", "pic_links", "urls", "hashtag_words")


def clean_query(text: str, steps: Sequence[str] | None = None) -> str:
    """Clean a query (tweet, forwarded chat message) for matching against fact-checks.

    Only the steps in `DEFAULT_STEPS` run unless `steps` names others (in the order given in `STEPS`
    semantics: the caller's order). Never returns an empty string for a non-empty input: if cleaning
    removes everything, the whitespace-normalised original comes back.
    """
    out = text or ""
    for name in DEFAULT_STEPS if steps is None else steps:
        out = STEPS[name](out)
    out = normalise_space(out)
    return out or normalise_space(text or "")
