"""Intake: turn whatever a user sent into clean text the rest of the engine can trust.

Unicode NFC, control characters and NUL bytes removed, whitespace collapsed, a length cap with a note
(never a silent cut), URLs pulled out, and the language guessed so replies follow the user's. A message
over the cap is first reduced to its distinct sentences, then to its most check-worthy ones, and only
then cut: 100 KB of one refuted sentence used to be cut to its first 4,096 characters and come back
"Unverified 79 %", while the sentence alone is a 1.00 match.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from core.intake.claims import checkworthiness, split_sentences
from core.intake.claim_text import claim_text
from core.intake.language import detect_language
from schema.text import decode_bytes, safe_text, unreadable_share

URL_RE = re.compile(r"""(?i)\b((?:https?://|www\.)[^\s<>"'«»]+)""")
_TRAILING_PUNCT = ".,;:!?)]}>'\"…"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\u2060\ufeff]")
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


class EmptyInput(ValueError):
    """Nothing checkable was sent (empty, whitespace, or only control characters)."""


@dataclass(frozen=True)
class Intake:
    text: str
    urls: list[str]
    language: str
    notes: list[str] = field(default_factory=list)
    truncated: bool = False
    claim: str = ""  # the text without its wrapper (core/intake/claim_text.py): what is matched and gated

    @property
    def claim_or_text(self) -> str:
        return self.claim or self.text


def extract_urls(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in URL_RE.finditer(text):
        url = m.group(1).rstrip(_TRAILING_PUNCT)
        if url.lower().startswith("www."):
            url = "https://" + url
        seen.setdefault(url, None)
    return list(seen)


def clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


_NOT_WORD = re.compile(r"\W+")


def _sentence_key(sentence: str) -> str:
    return _NOT_WORD.sub(" ", sentence.casefold()).strip()


def reduce_long(text: str, max_chars: int) -> tuple[str, str] | None:
    """A text over `max_chars` as its distinct sentences (first occurrence of each, in order) or, when
    those are still too long, as the most check-worthy of them that fit (in their original order).
    Returns (text, what was done) or None when nothing fits (one sentence longer than the cap)."""
    distinct: dict[str, str] = {}
    for sentence in split_sentences(text):
        distinct.setdefault(_sentence_key(sentence), sentence)
    sentences = list(distinct.values())
    joined = " ".join(sentences)
    if len(joined) <= max_chars:
        return (joined, f"{len(sentences)} distinct sentence(s)") if joined else None
    ranked = sorted(range(len(sentences)), key=lambda i: (-checkworthiness(sentences[i]), i))
    keep: list[int] = []
    used = 0
    for i in ranked:
        cost = len(sentences[i]) + (1 if keep else 0)
        if used + cost <= max_chars:
            keep.append(i)
            used += cost
    if not keep:
        return None
    return " ".join(sentences[i] for i in sorted(keep)), (
        f"the {len(keep)} most check-worthy of its {len(sentences)} distinct sentences")


# Random bytes read as UTF-8 come out ~50 % U+FFFD; a message with a few broken characters, a few %.
BINARY_SHARE = 0.2


def intake(raw: str | bytes, max_chars: int = 4096) -> Intake:
    raw = decode_bytes(raw) if isinstance(raw, bytes) else safe_text(raw)
    if unreadable_share(raw) > BINARY_SHARE:
        raise EmptyInput(f"This looks like binary data, not text ({unreadable_share(raw):.0%} of it is not readable "
                         "characters), so there is nothing to check: send the message as text.")
    text = clean(raw)
    if not any(ch.isalnum() for ch in text):
        raise EmptyInput("There is no text to check: send the message or claim you want checked.")
    notes: list[str] = []
    truncated = False
    urls = extract_urls(text)  # from the whole message: a link in a dropped sentence still counts
    if len(text) > max_chars:
        truncated = True
        reduced = reduce_long(text, max_chars)
        if reduced is not None and any(ch.isalnum() for ch in reduced[0]):
            text = reduced[0]
            notes.append(f"The message was longer than {max_chars} characters; {reduced[1]} were checked "
                         f"({len(text)} characters).")
        else:
            cut = text.rfind(" ", 0, max_chars)
            text = text[: cut if cut > max_chars * 0.8 else max_chars].rstrip()
            notes.append(f"The message was longer than {max_chars} characters; only the first {len(text)} were checked.")
    claim = claim_text(text)
    return Intake(text=text, urls=urls, language=detect_language(claim), notes=notes, truncated=truncated,
                  claim=claim)
