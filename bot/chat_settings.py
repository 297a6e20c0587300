"""Chat-scoped admin commands and what they switch on: tracking, auto mode, forgetting, stats.

    /track on|off   store this group's/channel's messages for "also reported by" (opt-in; off stops
                    storage at once, stored messages stay until /forget or retention)
    /auto on|off    in a group, answer ordinary messages on my own — only for strong ("auto") matches
    /forget         delete this chat's stored messages
    /forget me      anyone, anywhere but a channel: delete every check they asked for, their votes and
                    their messages in tracked chats (bot/personal.py)
    /stats          checks, verdict mix, match rate, repeats, tracked chats, messages stored

Rights: a configured admin (TIPLINE_ADMINS) anywhere; for /track, /auto and /forget also the chat's own
administrators (Telegram; a post in a channel is by definition by one of its admins). /stats covers
every chat, so it is for configured admins only. Every change and refusal goes to the audit log (a
/forget me under the person's pseudonym, not their id).

Also here: `CheckExtras`, the bot-layer hook around `Engine.check` that reuses stored verdicts for
repeat forwards and attaches "also reported by" (the engine itself is not touched), and
`tracked_message`, which turns an `IncomingMessage` of a tracked chat into what the corroborator stores.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from bot.admins import Admins, ChatAdminCheck
from bot.personal import Privacy, forgotten_text
from bot.repeats import RepeatTracker
from bot.requests import ChatSettingsRequest
from schema.models import Repetition, Result
from storage.domains import DomainStore
from storage.messages import MessageStore
from storage.repeats import RepeatStore
from storage.sqlite import Database
from storage.stats import check_stats

if TYPE_CHECKING:  # types only: core.corroboration.corroborator is imported where a message is tracked (tracked_message)
    from core.corroboration.corroborator import Corroborator, TrackedMessage

log = logging.getLogger(__name__)

CHAT_COMMANDS = ("track", "auto", "forget", "stats")
REFUSED = "Only admins can do that."
REFUSED_STATS = "Only the bot's admins can see the stats."
NOT_AVAILABLE = "Tracking is not available on this deployment."


def _on_off(args: str) -> bool | None:
    word = args.strip().lower()
    return {"on": True, "off": False}.get(word)


class ChatCommands:
    def __init__(self, db: Database, admins: Iterable[str] = (), corroborator: Corroborator | None = None,
                 store: MessageStore | None = None, privacy: Privacy | None = None):
        self.db = db
        self.admins = Admins(admins)
        self.is_admin = self.admins.is_admin
        self.corroborator = corroborator
        self.store = store or (corroborator.store if corroborator else MessageStore(db))
        self.audit_log = DomainStore(db)
        self.privacy = privacy or Privacy(db, corroborator=corroborator)


    async def _allowed(self, req: ChatSettingsRequest, is_chat_admin: ChatAdminCheck | None) -> bool:
        # /stats covers every chat: configured admins only.
        return await self.admins.allows(req.platform, req.user_id, req.chat_id, is_chat_admin,
                                        chat_admins=req.command != "stats")

    async def _audit(self, req: ChatSettingsRequest, action: str, detail: str = "") -> None:
        await self.audit_log.audit(platform=req.platform, chat_id=req.chat_id, user_id=req.user_id,
                                   action=action, detail=detail)

    async def handle(self, req: ChatSettingsRequest, *, is_chat_admin: ChatAdminCheck | None = None) -> str:
        cmd = req.command
        if cmd == "forget" and req.args.strip().lower() == "me":
            return await self.forget_me(req)
        if cmd in ("track", "auto") and _on_off(req.args) is None:
            return f"Usage: /{cmd} on or /{cmd} off"
        if cmd in ("track", "auto", "forget") and req.chat_kind == "private":
            if cmd == "forget":
                return "/forget works in groups and channels: send it there. /forget me deletes what I keep about you."
            return f"/{cmd} works in groups and channels: send it there."
        if cmd == "auto" and req.chat_kind == "channel":
            return "I never post in channels, so auto mode is for groups."
        if not await self._allowed(req, is_chat_admin):
            await self._audit(req, f"{cmd}.refused", req.args.strip())
            return REFUSED_STATS if cmd == "stats" else REFUSED
        if cmd == "stats":
            return await self.stats()
        if cmd in ("track", "forget") and self.corroborator is None:
            return NOT_AVAILABLE
        if cmd == "forget":
            n = await self.privacy.forget_chat(req.platform, req.chat_id)
            await self._audit(req, "forget", f"deleted={n}")
            return f"Deleted {n} stored message{'s' if n != 1 else ''} of this chat."
        on = bool(_on_off(req.args))
        flag = "tracking" if cmd == "track" else "auto"
        before = await self.store.set_flag(req.platform, req.chat_id, flag, on, by=req.user_id,
                                           kind=req.chat_kind, title=req.title, handle=req.handle)
        await self._audit(req, f"{cmd}.{'on' if on else 'off'}", f"was={'on' if before else 'off'}")
        if cmd == "track":
            if on:
                return ("Tracking is on: I store this chat's messages for 'also reported by' and for digests "
                        "of stories that spread to several tracked chats (kept for a limited time; /track off "
                        "stops it, /forget deletes what is stored).")
            return "Tracking is off: I no longer store this chat's messages. /forget deletes what is stored."
        if on:
            return "Auto mode is on: I answer messages here on my own, but only when they match a known fact-check."
        return "Auto mode is off: I answer only /check and mentions."

    async def forget_me(self, req: ChatSettingsRequest) -> str:
        """`/forget me`: whoever sends it, their own data (bot/personal.py)."""
        if req.user_id is None or req.chat_kind == "channel":
            return "In a channel I cannot tell who you are: send /forget me to me in a private chat."
        done = await self.privacy.forget(req.platform, req.user_id)
        # A private chat's id is the person's own id on Telegram: not kept either.
        await self.audit_log.audit(platform=req.platform, chat_id=None if req.chat_kind == "private" else req.chat_id,
                                   user_id=self.db.pseudonym(req.platform, req.user_id), action="forget.me",
                                   detail=f"checks={done.checks} votes={done.votes} jobs={done.jobs} "
                                          f"messages={len(done.messages)}")
        return forgotten_text(done)

    async def stats(self) -> str:
        week = datetime.fromtimestamp(time.time() - 7 * 86400, timezone.utc).isoformat()
        checks = await check_stats(self.db, week)
        total, recent, mix, matched = checks.total, checks.since, checks.verdicts, checks.matched
        counted = await RepeatStore(self.db).totals()
        repeats, distinct = counted.checks, counted.texts
        tracked = await self.store.tracked_chats()
        stored = await self.store.count()
        lines = [f"Checks: {total} ({recent} in the last 7 days)"]
        if total:
            lines.append("Verdicts: " + ", ".join(f"{v} {n} ({100 * n / total:.0f}%)" for v, n in mix))
            lines.append(f"Match rate: {100 * matched / total:.0f}% matched a known fact-check")
        if repeats:
            lines.append(f"Repeat checks: {repeats - distinct} of {repeats} reused a stored verdict")
        lines.append(f"Tracked chats: {len(tracked)}")
        lines.append(f"Messages stored: {stored}")
        return "\n".join(lines)


def tracked_message(platform: str, chat_id: object, message_id: object, text: str, at: datetime, *,
                    author: str = "", permalink: str = "", kind: str = "group") -> TrackedMessage:
    # Imported here: `tipline check` loads this module with the check service and tracks nothing (~0.02 s
    # of its CPU); a dict lookup once a chat is tracked.
    from core.corroboration.corroborator import TrackedMessage

    return TrackedMessage(platform=platform, chat_id=str(chat_id), message_id=str(message_id), text=text, at=at,
                          author=author, permalink=permalink, kind=kind)


def news_outlets(result: Result, limit: int = 5) -> list[str]:
    """Domains of the check's web/news sources (citations without a fact-checker's rating)."""
    out: list[str] = []
    for c in result.citations:
        if c.rating or not c.url.lower().startswith(("http://", "https://")):
            continue
        host = (urlsplit(c.url).hostname or "").lower().removeprefix("www.")
        if host and host not in out:
            out.append(host)
    return out[:limit]


class CheckExtras:
    """The hook `CheckService` calls around `Engine.check` (the engine stays untouched).

    `reuse(...)`: a repeat of a recently checked text gets the stored Result back at once, with the
    repetition counted. `enrich(...)`: counts the check and attaches "also reported by" (the service
    then stores the enriched Result, so /evidence shows the same).
    """

    def __init__(self, db: Database, platform: str | None = None, corroborator: Corroborator | None = None,
                 repeats: RepeatTracker | None = None):
        self.db = db
        self.platform = platform
        self.corroborator = corroborator
        self.repeats = repeats or RepeatTracker(db)

    async def reuse(self, text: str, scope: str, chat_id: object, forwarded_from: str | None = None) -> Result | None:
        seen = await self.repeats.seen(text, scope)
        if seen is None:
            return None
        stored = await self.db.get_check(seen.check_id)
        if stored is None:
            return None
        count = await self.repeats.record(text, scope, seen.check_id, self.platform, chat_id)
        result = stored.model_copy(update={"repetition": Repetition(times_this_week=count, first_check_id=seen.check_id)})
        return await self._corroborate(result, chat_id, forwarded_from)

    async def enrich(self, result: Result, text: str, scope: str, chat_id: object,
                     forwarded_from: str | None = None, *, photo: int | None = None) -> Result:
        """`photo`: the checked image's perceptual hash, for tracked messages carrying the same photo."""
        await self.repeats.record(text, scope, result.id, self.platform, chat_id)
        return await self._corroborate(result, chat_id, forwarded_from, photo)  # stored by the caller, once

    async def _corroborate(self, result: Result, chat_id: object, forwarded_from: str | None,
                           photo: int | None = None) -> Result:
        outlets = news_outlets(result)
        if self.corroborator is None:
            also = None  # tracking is off in this deployment
        else:
            try:
                # The asking chat is never its own corroboration. A shared service (the job queue's) has
                # no platform: Telegram ids are numbers and Slack's are C…/G…, so excluding the id on
                # both platforms cannot hit another chat.
                platforms = [self.platform] if self.platform else ["telegram", "slack"]
                also = await self.corroborator.lookup(result.text, exclude_chats=[(p, chat_id) for p in platforms],
                                                      exclude_names=[forwarded_from or ""], outlets=outlets,
                                                      photo=photo)
            except Exception:  # corroboration is an extra: never fail the verdict over it
                log.exception("corroboration lookup failed for check %s", result.id)
                also = None
        if also is None:
            return result
        if any(r.chat_id.startswith("@") for r in also.items):  # watched channels (bot/watch.py): their views
            from bot.watch import with_views
            from storage.watched import WatchStore

            try:
                also = await with_views(also, WatchStore(self.db))
            except Exception:  # an extra on an extra
                log.warning("could not add the watched channels' views to check %s", result.id, exc_info=True)
        return result.model_copy(update={"also_reported": also})
