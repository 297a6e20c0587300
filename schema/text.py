"""Text that every part downstream can trust: valid Unicode, no NUL or other control characters.

Made safe where text enters (a chat message, a REST body, a fact-check row, a tracked post), once, so the
tokenizer, SQLite, Qdrant and the platforms only ever see valid text. What it guards against, measured:
a lone surrogate (`{"text": "\\ud800 …"}` in JSON, or bytes that are not UTF-8 read with
surrogateescape) made the tokenizer raise TypeError and SQLite refuse the row ("surrogates not
allowed"); a NUL byte is cut off by C libraries. Lives on the bottom floor (`schema/`) so that adapters,
bot, core and storage can all use it.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
# C0 controls except tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def safe_text(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD and control characters (NUL included) removed.
    Valid text comes back unchanged (and fast: the common case is one regex search each)."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(REPLACEMENT, text)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text


def decode_bytes(data: bytes) -> str:
    """Bytes from a file, a pipe or a socket as safe text: invalid UTF-8 becomes U+FFFD."""
    return safe_text(data.decode("utf-8", errors="replace"))


def unreadable_share(text: str) -> float:
    """Share of the characters that are U+FFFD: what is left of bytes that were not text."""
    return text.count(REPLACEMENT) / len(text) if text else 0.0
