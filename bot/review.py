"""The admins' review queue: checks that got a 👎 without a matching fact-check wait here until an
admin records a verdict, which becomes a fact-check in the knowledge base (so the next person who
forwards the same claim gets an answer at once).

    /review                                  the open items, oldest first
    /review <check id> <rating> <url>        record a verdict, e.g. /review 3f9a1c2b7d False https://…

Only configured admins (TIPLINE_ADMINS); every use and refusal is written to the audit table. A reviewed
check of a photo has the photo remembered by its perceptual hash (bot/photo_memory.py): its next forward is
answered at once with the verdict recorded here.
A recorded verdict is also sent to everyone who asked about the claim (bot/notify.py), through the
per-platform notifiers this object is given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import date

from bot.admins import Admins
from bot.photo_memory import PhotoMemory
from bot.notify import Notifier, ReviewNotice, ReviewNotices
from bot.requests import ReviewRequest
from schema.models import FactCheck, Verdict
from core.ingest.ratings import match_rating
from storage.domains import DomainStore
from storage.feedback import FeedbackStore
from storage.sqlite import Database

log = logging.getLogger(__name__)

REFUSED = "Only admins can use the review queue."
USAGE = ("Usage: /review lists the open items; /review <check id> <rating> <url> records a verdict, "
         "e.g. /review 3f9a1c2b7d False https://example.org/fact-check")
REVIEW_PUBLISHER = "tipline reviewers"
_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)


AddFactChecks = Callable[[Sequence[FactCheck]], Awaitable[int]]


class ReviewCommands:
    def __init__(self, db: Database, add_factchecks: AddFactChecks | None, admins: Iterable[str] = (),
                 notifiers: Mapping[str, Notifier] | None = None, photos: PhotoMemory | None = None):
        self.db = db
        self.notices = ReviewNotices(db, notifiers if notifiers is not None else {})
        self.feedback = FeedbackStore(db)
        self.audit = DomainStore(db)
        self.add_factchecks = add_factchecks
        self.admins = Admins(admins)
        self.is_admin = self.admins.is_admin
        self.photos = photos  # a reviewed check's photo is remembered (bot/photo_memory.py)

    async def handle(self, req: ReviewRequest) -> str:
        if not self.is_admin(req.platform, req.user_id):
            await self._audit(req, "review.refused", req.args[:200])
            return REFUSED
        parts = req.args.split()
        if not parts:
            return await self.listing()
        if len(parts) < 3 or not _URL.match(parts[-1]):
            return USAGE
        check_id, rating, url = parts[0], " ".join(parts[1:-1]), parts[-1]
        verdict = match_rating(rating)
        if verdict is None:
            return f"I don't know the rating “{rating}”: use words like True, False, Misleading, Mixed, Unproven."
        result = await self.db.get_check(check_id)
        if result is None:
            return "I have no check with that id: copy the id from the review list or the verdict card."
        if self.add_factchecks is None:
            return "The knowledge base is not available in this process; nothing was recorded."
        fc = FactCheck(claim=result.text[:1000], title=f"Reviewed: {result.text[:120]}", url=url,
                       publisher=REVIEW_PUBLISHER, published_at=date.today(), rating_text=rating,
                       verdict=verdict, language=result.language)
        await self.add_factchecks([fc])
        photo = False
        if self.photos is not None:
            try:
                photo = await self.photos.remember_review(check_id, fc)
            except Exception:  # the verdict is recorded either way
                log.exception("could not remember the photo of check %s", check_id)
        resolved = await self.feedback.resolve(check_id)
        await self._audit(req, "review.verdict", f"check={check_id} rating={rating} url={url}")
        label = verdict.label if verdict != Verdict.NOT_CHECKABLE else "Not checkable"
        try:
            told = await self.notices.send(ReviewNotice(check_id=check_id, claim=result.text, verdict=verdict,
                                                        rating=rating, url=url))
        except Exception:  # the verdict is recorded either way; the admin must hear that
            log.exception("could not notify the askers of check %s", check_id)
            told = None
        if told is None:
            notified = " (Telling the askers failed; see the log.)"
        elif told:
            notified = f" Told {told} asker{'s' if told != 1 else ''} in the chats where they asked."
        else:
            notified = ""
        return (f"Recorded “{label}” for check {check_id}; the next check of this claim will match it."
                + (" Its photo is remembered: the next forward of it gets this verdict at once." if photo else "")
                + ("" if resolved else " (It was not on the open review list.)") + notified)

    async def listing(self, limit: int = 10) -> str:
        items = await self.feedback.open_reviews()
        if not items:
            return "The review queue is empty."
        lines = [f"Open reviews ({len(items)}), oldest first:"]
        for item in items[:limit]:
            result = await self.db.get_check(item.check_id)
            text = (result.text[:100] + ("…" if len(result.text) > 100 else "")) if result else "(check missing)"
            verdict = result.label if result else "?"
            lines.append(f"• {item.check_id} — “{text}” ({verdict}; {item.reason})")
        if len(items) > limit:
            lines.append(f"… and {len(items) - limit} more.")
        lines.append(USAGE)
        return "\n".join(lines)

    async def _audit(self, req: ReviewRequest, action: str, detail: str) -> None:
        try:
            await self.audit.audit(platform=req.platform, chat_id=req.chat_id, user_id=req.user_id, action=action,
                                   detail=detail)
        except Exception:  # the audit must never turn an answer into an error
            log.exception("could not write the audit entry %s", action)
