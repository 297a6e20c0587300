"""Telling the askers when an admin reviews a claim (the platform-neutral half).

When an admin records a verdict with `/review <id> <rating> <url>`, everyone who asked about that
claim is told, in the chat where they asked and as a reply to the message that was checked.
"Everyone who asked" = the jobs (storage/jobs.py) that finished with the reviewed check, or with
another stored check of the same claim (same `bot.repeats.fingerprint` of the text). A job's
payload says where to answer (`where`, as the platform's responder factory wrote it), so nothing
in memory is needed. Jobs are pruned after a week (bot/queue.py), which bounds the scan below.

Each asker (platform, chat, checked message) is notified once: a row in `review_notices`
(migration 7) is claimed *before* sending, so two admins reviewing at once cannot both send; if
the platform refuses the message the row is removed again, so a later review can still reach them.

The sending is per platform (`Notifier`, in each adapter); so is the escaping (`notice_text`
takes the platform's escape and link functions).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bot.card import Markup
from bot.render import VERDICT_EMOJI
from bot.repeats import fingerprint
from schema.models import Verdict
from storage.jobs import JobStore
from storage.notices import ReviewNoticeStore
from storage.sqlite import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Asker:
    """One place to answer: a finished check job's platform, chat and `where` (from its payload)."""

    job_id: int
    platform: str
    chat_id: str
    target: str  # the checked message (Telegram message id, Slack ts, or the slash command's trigger)
    where: dict[str, Any]
    reply_ref: str | None  # the verdict card the bot sent back then, if any
    check_id: str  # the check this asker got (the reviewed one or another check of the same claim)
    requested_by: str | None = None  # the platform user id of who asked, when known


@dataclass(frozen=True)
class ReviewNotice:
    """What the askers are told: the claim has been reviewed, the new rating, the link, the check id."""

    check_id: str
    claim: str
    verdict: Verdict
    rating: str  # as the admin typed it, e.g. "Pants on Fire"
    url: str


class Notifier(Protocol):
    """Per platform: send `notice` to `asker` (a reply to the checked message). Raises if it cannot."""

    async def notify(self, asker: Asker, notice: ReviewNotice) -> None: ...


CLAIM_CHARS = 160


def notice_text(notice: ReviewNotice, markup: Markup) -> str:
    """The notice in a platform's markup (bot/card.py); every admin- or user-supplied string goes through
    `markup.text`/`markup.link`."""
    esc, link, bold, code = markup.text, markup.link, markup.bold, markup.code
    claim = " ".join(notice.claim.split())
    if len(claim) > CLAIM_CHARS:
        claim = claim[:CLAIM_CHARS - 1].rstrip() + "…"
    label = notice.verdict.label if notice.verdict != Verdict.NOT_CHECKABLE else "Not checkable"
    rating = f" (rated “{esc(notice.rating)}”)" if notice.rating.strip().lower() != label.lower() else ""
    return "\n".join([
        f"🔔 {bold(esc('This claim has now been reviewed by a person.'))}",
        f"“{esc(claim)}”",
        f"New rating: {esc(VERDICT_EMOJI.get(notice.verdict, ''))} {bold(esc(label))}{rating}",
        f"Review: {link(notice.url, notice.url)}",
        f"Check id: {code(esc(notice.check_id))}",
    ])


def _target(payload: Mapping[str, Any]) -> str:
    request = payload.get("request") or {}
    where = payload.get("where") or {}
    # Telegram answers `reply_to`; Slack's request target is the checked message's ts.
    return str(where.get("reply_to") or request.get("target_id") or "")


async def find_askers(db: Database, check_id: str) -> list[Asker]:
    """Every finished job whose check is `check_id` or a check of the same claim text."""
    result = await db.get_check(check_id)
    if result is None:
        return []
    claim = fingerprint(result.text)
    askers: list[Asker] = []
    seen: set[tuple[str, str, str]] = set()
    for job, check_text in await JobStore(db).askers(check_id, claim):
        payload = job.payload
        if job.text_hash is None:  # a job from before fingerprints were stored: match it by its texts
            asked = str((payload.get("request") or {}).get("text") or "")
            if job.check_id != check_id and not any(t and fingerprint(t) == claim for t in (check_text, asked)):
                continue
        if not isinstance(payload.get("where"), dict):
            continue
        target = _target(payload)
        key = (job.platform, job.chat_id, target)
        if not target or key in seen:  # the same message asked twice (/check, then a mention) is one asker
            continue
        seen.add(key)
        askers.append(Asker(job_id=job.id, platform=job.platform, chat_id=job.chat_id, target=target,
                            where=payload["where"], reply_ref=job.reply_ref, check_id=job.check_id or "",
                            requested_by=job.user_id))
    return askers


class ReviewNotices:
    """Finds the askers of a reviewed claim and sends each one notice, once, through its platform."""

    def __init__(self, db: Database, notifiers: Mapping[str, Notifier]):
        self.db = db
        self.store = ReviewNoticeStore(db)
        # Shared with the job queue when there is one (every adapter of the process registers its
        # notifier there), so a review made on Telegram also reaches the Slack askers.
        self.notifiers = notifiers

    async def _claim(self, asker: Asker, reviewed: str) -> bool:
        return await self.store.claim(asker.platform, asker.chat_id, asker.target, reviewed, asker.job_id)

    async def _unclaim(self, asker: Asker) -> None:
        await self.store.unclaim(asker.platform, asker.chat_id, asker.target)

    async def send(self, notice: ReviewNotice) -> int:
        """Notify every asker not yet notified; returns how many were told now."""
        told = 0
        for asker in await find_askers(self.db, notice.check_id):
            notifier = self.notifiers.get(asker.platform)
            if notifier is None:  # that platform is not running in this process: leave them for later
                log.info("no %s notifier here; asker of job %s not notified", asker.platform, asker.job_id)
                continue
            if not await self._claim(asker, notice.check_id):
                continue  # told already (an earlier review of this claim, or a concurrent one)
            try:
                await notifier.notify(asker, notice)
            except Exception:
                log.warning("could not notify the asker of job %s (%s chat %s)", asker.job_id, asker.platform,
                            asker.chat_id, exc_info=True)
                await self._unclaim(asker)
                continue
            told += 1
        return told

    async def notified(self) -> list[tuple[str, str, str, str]]:
        """(platform, chat id, target, reviewed check id) of every notice sent (tests, audits)."""
        return await self.store.sent()
