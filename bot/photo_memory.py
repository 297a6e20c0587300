"""What tipline remembers of the photos people send: a checked image's perceptual hash is kept with its
check (core/corroboration/photo_hash.py), a photo an admin reviewed (`/review`, bot/review.py) is remembered by that
hash, and the next forward of the same photo, with or without text, is answered at once with that review's
verdict: no OCR, no matching, no evidence.

Hashing is CPU work (~2 ms for a Telegram photo) and runs in a worker thread; an image that cannot be
hashed is simply not remembered.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from core.i18n import t
from core.intake.image_limits import ImageLimits, ImageRefused
from core.verdict.offline_verdict import decide
from core.corroboration.photo_hash import MATCH_DISTANCE, nearest, photo_hash
from schema.models import FactCheck, Match, Result, new_check_id
from storage.photos import PhotoStore, ReviewedPhoto
from storage.sqlite import Database

log = logging.getLogger(__name__)


class PhotoMemory:
    def __init__(self, db: Database, limits: ImageLimits | None = None, max_distance: int = MATCH_DISTANCE):
        self.store = PhotoStore(db)
        self.limits = limits or ImageLimits()
        self.max_distance = max_distance

    async def hash(self, data: bytes) -> int | None:
        """The image's perceptual hash, or None when it cannot be hashed (the check goes on without it)."""
        try:
            return await asyncio.to_thread(photo_hash, data, self.limits)
        except ImageRefused as exc:
            log.info("photo not hashed: %s", exc)
            return None

    async def reviewed(self, photo: int) -> ReviewedPhoto | None:
        """The most recent review of this photo (or of one within `max_distance` bits of it)."""
        known = await self.store.reviewed()
        found = nearest(photo, [r.hash for r in known], self.max_distance)
        if not found:
            return None
        best = min(d for _, d in found)
        return known[min(i for i, d in found if d == best)]  # the newest of the nearest

    async def remember_review(self, check_id: str, factcheck: FactCheck) -> bool:
        """After `/review` recorded a verdict for a check: remember its image, if it had one."""
        photo = await self.store.check_photo(check_id)
        if photo is None:
            return False
        await self.store.record_review(check_id, photo, factcheck)
        return True


def reviewed_answer(review: ReviewedPhoto, caption: str, language: str) -> Result:
    """The card for a forward of a reviewed photo: the review's fact-check as the matched claim, its rating
    as the verdict, and a note saying where it comes from."""
    fc = review.factcheck
    match = Match(factcheck_id=fc.id, claim=fc.claim, title=fc.title, url=fc.url, publisher=fc.publisher,
                  published_at=fc.published_at, rating_text=fc.rating_text, verdict=fc.verdict, similarity=1.0,
                  method="decided", tier="auto")
    decided = decide(caption or fc.claim, [match], language=language)
    when = datetime.fromtimestamp(review.reviewed_at, UTC).date().isoformat()
    return Result(id=new_check_id(), text=caption or fc.claim, language=language, verdict=decided.verdict,
                  label=t(f"label.{decided.verdict.value}", language), confidence=decided.confidence,
                  reasoning=decided.reasoning, citations=decided.citations, matches=decided.matches, mode="offline",
                  notes=[t("note.photo_reviewed", language, date=when), *decided.notes],
                  inherited_from=decided.inherited_from)
