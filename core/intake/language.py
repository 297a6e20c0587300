"""Which language a message is in: py3langid (its model ships inside the package, offline), over the
languages our users' chats carry and multilingual-e5 reads.

Replies are written in English, Russian or Ukrainian (`reply_language`); a message in any other language is
still matched (e5 reads it) and answered in English. Russian and Ukrainian are close: when the classifier
hesitates between them, or names a third Cyrillic language on a short text, the letters only one of the two
has (і ї є ґ / ы э ё ъ) decide, as before the classifier.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import threading
from array import array
from functools import lru_cache
from pathlib import Path
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
log = logging.getLogger(__name__)


_cache_dir: list[Path] = []  # where the compact table is kept; set once by the composition root


def use_cache_dir(path: Path) -> None:
    """Keep the classifier's compact table under `path` (the models dir): later starts map it instead of
    decompressing the package's model (0.8 s of CPU, ~110 MB of peak memory, ~65 MB kept)."""
    _cache_dir[:] = [path]


def _package_model() -> Path:
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    return Path(MODEL_DIR) / MODEL_FILE


def _compact_dir(root: Path) -> Path:
    from importlib.metadata import version

    model = _package_model()
    st = model.stat()
    tag = hashlib.sha1(",".join(LANGUAGES).encode()).hexdigest()[:8]
    return root / f"py3langid-{version('py3langid')}-{st.st_size}-{tag}"


def _full_subset() -> Any:
    from py3langid.langid import LanguageIdentifier

    full = LanguageIdentifier.from_model_file(str(_package_model()), norm_probs=True)
    # Built anew over our languages' columns only, so the full table (28 MB, kept by `set_languages` for a
    # later reset) is freed.
    keep = [i for i, c in enumerate(full.nb_classes) if c in LANGUAGES]
    return LanguageIdentifier(np.ascontiguousarray(full.nb_ptc[:, keep]), full.nb_pc[keep],
                              [full.nb_classes[i] for i in keep], full.tk_nextmove, full.tk_output,
                              norm_probs=True, tk_row=full.tk_row)


def _save_compact(ident: Any, folder: Path) -> None:
    """The subset's arrays as .npy files, written in a private folder and renamed (no half cache is read)."""
    tmp = folder.with_name(f"{folder.name}.{os.getpid()}.part")
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        np.save(tmp / "ptc.npy", ident.nb_ptc)
        np.save(tmp / "pc.npy", np.asarray(ident.nb_pc))
        np.save(tmp / "nextmove.npy", np.frombuffer(ident.tk_nextmove, dtype=f"u{ident.tk_nextmove.itemsize}"))
        np.save(tmp / "row.npy", np.frombuffer(ident.tk_row, dtype=f"u{ident.tk_row.itemsize}"))
        np.save(tmp / "output.npy", np.asarray(ident.tk_output, dtype=np.int32))
        (tmp / "classes.txt").write_text("\n".join(ident.nb_classes), encoding="utf-8")
        tmp.rename(folder)
    except OSError:  # read-only, full, or another process got there first: the next start tries again
        log.info("could not keep the language classifier's table in %s", folder, exc_info=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load_compact(folder: Path) -> Any:
    from py3langid.langid import LanguageIdentifier

    def mapped(name: str) -> Any:
        return np.load(folder / name, mmap_mode="r")

    # The transition table and scores are mapped: a text touches a few pages of them. The row offsets are
    # plain Python ints, since the classifier shifts them and a numpy uint16 would overflow.
    row = mapped("row.npy")
    return LanguageIdentifier(mapped("ptc.npy"), np.load(folder / "pc.npy"),
                              (folder / "classes.txt").read_text(encoding="utf-8").split("\n"),
                              mapped("nextmove.npy"), mapped("output.npy"), norm_probs=True,
                              tk_row=array({2: "H", 4: "I", 8: "L"}[row.dtype.itemsize], row.tobytes()))


@lru_cache(maxsize=1)
def _identifier() -> Any:
    folder = _compact_dir(_cache_dir[0]) if _cache_dir else None
    if folder is not None and (folder / "classes.txt").is_file():
        try:
            return _load_compact(folder)
        except (OSError, ValueError):  # a damaged table: rebuilt below
            log.warning("the language classifier's table in %s could not be read; rebuilding it", folder)
            shutil.rmtree(folder, ignore_errors=True)
    ident = _full_subset()
    if folder is None:
        return ident
    _save_compact(ident, folder)
    # The mapped table (ours, or another process's that got there first) keeps less in memory than `ident`.
    return _load_compact(folder) if (folder / "classes.txt").is_file() else ident


def preload() -> None:
    """Load the classifier now. It loads on first use otherwise, which a one-shot `tipline check` wants;
    `tipline run` calls this in a worker thread at start, since a first use on the event loop (the REST API
    reads the language of every request) stalled the loop, and /healthz with it, for 0.9 s of a 300-request
    burst."""
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
