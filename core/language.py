"""Which language a message is in: py3langid (its model ships inside the package, offline), over the
languages our users' chats carry and multilingual-e5 reads.

Replies are written in English, Russian or Ukrainian (`reply_language`); a message in any other language is
still matched (e5 reads it) and answered in English. Russian and Ukrainian are close: when the classifier
hesitates between them, or names a third Cyrillic language on a short text, the letters only one of the two
has (і ї є ґ / ы э ё ъ) decide, as before the classifier.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

import numpy as np

# Languages the classifier may answer: those e5 reads well and chats about Russia and Ukraine carry.
LANGUAGES = ("en", "ru", "uk", "be", "bg", "es", "de", "fr", "it", "pt", "pl", "cs", "sk", "ro", "hu", "nl",
             "sv", "fi", "da", "no", "lt", "lv", "et", "el", "tr", "ka", "hy", "az", "kk", "ar", "he", "fa",
             "hi", "zh", "ja", "ko", "sr", "hr")
REPLY_LANGUAGES = ("en", "ru", "uk")
EN_FLOOR = 0.05  # a Latin-script text with at least this probability of English is English
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z]")
_LETTER = re.compile(r"[^\W\d_]")
_UKRAINIAN_ONLY = re.compile(r"[іїєґІЇЄҐ]")
_RUSSIAN_ONLY = re.compile(r"[ыэёъЫЭЁЪ]")
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    full = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    # Built anew over our languages' columns only, so the full table (28 MB, kept by `set_languages` for a
    # later reset) is freed: every megabyte counts in a one-shot check's peak memory.
    keep = [i for i, c in enumerate(full.nb_classes) if c in LANGUAGES]
    return LanguageIdentifier(np.ascontiguousarray(full.nb_ptc[:, keep]), full.nb_pc[keep],
                              [full.nb_classes[i] for i in keep], full.tk_nextmove, full.tk_output,
                              norm_probs=True, tk_row=full.tk_row)


def preload() -> None:
    """Load the classifier now (~0.8 s of CPU: its model is LZMA-compressed arrays). It loads on first use
    otherwise, which a one-shot `tipline check` wants; `tipline run` calls this in a worker thread at start,
    since a first use on the event loop (the REST API reads the language of every request) stalled the
    loop, and /healthz with it, for 0.9 s of a 300-request burst."""
    _identifier()


def _ru_or_uk(text: str) -> str:
    return "uk" if len(_UKRAINIAN_ONLY.findall(text)) > len(_RUSSIAN_ONLY.findall(text)) else "ru"


def detect_language(text: str) -> str:
    """An ISO 639-1 code. Mixed Cyrillic/Latin text follows the script with more letters, so a Russian
    comment on an English headline is answered in Russian."""
    cyr = len(_CYRILLIC.findall(text))
    lat = len(_LATIN.findall(text))
    if cyr > lat:
        return _cyrillic_language(text)
    if not any(ch.isalpha() for ch in text):
        return "en"
    with _lock:  # the identifier keeps per-call state
        ranked = dict(_identifier().rank(text))
    lang = max(ranked, key=ranked.__getitem__)
    if lat >= 0.5 * len(_LETTER.findall(text)) and (ranked.get("en", 0.0) >= EN_FLOOR or ranked[lang] < 0.5
                                                   or lang in ("ru", "uk", "be", "bg")):
        # Short English is often taken for French or Romanian ("Vaccines cause autism": fr 0.59, en 0.21);
        # the English model and scorer are the better reader of it, so English wins where it is plausible.
        return "en"
    return str(lang)


def _cyrillic_language(text: str) -> str:
    with _lock:
        lang, p = _identifier().classify(text)
    if lang in ("ru", "uk"):
        # The model confuses the two on short texts; the letters only one of them has are the surer sign.
        letters = _ru_or_uk(text)
        own = len(_UKRAINIAN_ONLY.findall(text)) + len(_RUSSIAN_ONLY.findall(text))
        return letters if own else str(lang)
    if lang in ("kk", "sr", "bg") and p >= 0.9 and len(text) >= 40:
        return str(lang)
    return _ru_or_uk(text)


def reply_language(language: str) -> str:
    return language if language in REPLY_LANGUAGES else "en"


_NAMES = {"es": "Spanish", "de": "German", "fr": "French", "it": "Italian", "pt": "Portuguese", "pl": "Polish",
          "cs": "Czech", "sk": "Slovak", "ro": "Romanian", "hu": "Hungarian", "nl": "Dutch", "sv": "Swedish",
          "fi": "Finnish", "da": "Danish", "no": "Norwegian", "lt": "Lithuanian", "lv": "Latvian",
          "et": "Estonian", "el": "Greek", "tr": "Turkish", "ka": "Georgian", "hy": "Armenian",
          "az": "Azerbaijani", "kk": "Kazakh", "ar": "Arabic", "he": "Hebrew", "fa": "Persian", "hi": "Hindi",
          "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "sr": "Serbian", "hr": "Croatian",
          "be": "Belarusian", "bg": "Bulgarian"}


def language_note(language: str) -> str | None:
    """The card's note for a message answered in English though written in another language."""
    if language in REPLY_LANGUAGES:
        return None
    return f"The message is in {_NAMES.get(language, language)}; tipline answers in English."
