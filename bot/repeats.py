"""Repeat forwards: the same (near-identical) text checked again reuses the stored verdict at once.

Like Full Fact's repetition tracking: a viral message is forwarded to the bot many times; the second
and later times are answered from the stored check (no engine run) and counted, so the card can say
"checked 14 times this week".

"Near-identical" = equal after normalisation: forward headers, URLs' tracking noise, case, accents,
punctuation, emoji and whitespace are ignored (`fingerprint`). Reworded messages are not repeats:
they go through the engine (whose claim matching handles paraphrase). Repeats are per source-rule
scope, because a group's own domain rules can change the verdict.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from core.textclean import clean_query
from storage.repeats import RepeatStore
from storage.sqlite import Database

WEEK_S = 7 * 86400.0
REUSE_S = 7 * 86400.0  # a stored verdict older than this is re-checked (sources change)

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def fingerprint(text: str) -> str:
    """A hash of the text with everything that differs between forwards of one message removed."""
    t = clean_query(text or "", steps=["forward_header"])
    t = unicodedata.normalize("NFKD", t.casefold())
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    t = _NON_WORD.sub(" ", t).strip()
    return hashlib.sha256(t.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Seen:
    check_id: str  # the check whose verdict is reused (the first one in the reuse period)
    times_this_week: int  # earlier checks in the last 7 days (this one not included)


class RepeatTracker:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time):
        self.store = RepeatStore(db)
        self.clock = clock

    async def seen(self, text: str, scope: str) -> Seen | None:
        """The check to reuse for `text`, if it was checked within the reuse period."""
        now = self.clock()
        h = fingerprint(text)
        check_id = await self.store.first_since(h, scope, now - REUSE_S)
        if check_id is None:
            return None
        return Seen(check_id, await self.store.count_since(h, scope, now - WEEK_S))

    async def record(self, text: str, scope: str, check_id: str, platform: str | None = None,
                     chat_id: object = None) -> int:
        """Count one check of `text`; returns the checks of it in the last 7 days, this one included."""
        now = self.clock()
        return await self.store.record(fingerprint(text), scope, check_id, platform, chat_id, now,
                                       count_since_ts=now - WEEK_S)

    async def count_checks(self, since_ts: float) -> int:
        return await self.store.count_all_since(since_ts)
