"""/digest, /trending and /alerts: parsing, rights, and what each does.

    /digest on [daily HH:MM | every N h] [top K] [lang en|ru|uk]   post a digest here on schedule (UTC)
    /digest off | /digest now
    /trending [hours]                                              the same items, now, over `hours` (24)
    /alerts on N | /alerts off                                     one message per story that matches a
                                                                   REFUTED/MISLEADING fact-check and
                                                                   reached N tracked chats

All three are for admins: a configured admin (TIPLINE_ADMINS) anywhere, a chat's own administrators in
their group or channel (a digest names other chats and quotes their messages, so who may post one into
a chat is the chat's admins' call). Answers are in the chat's language (`lang`, else what its stored
messages mostly are, else English). Every change and refusal goes to the audit log.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from bot.admins import Admins, ChatAdminCheck
from bot.digest_schedule import DigestService, next_daily
from bot.requests import DigestRequest
from core.i18n import LANGUAGES, t
from storage.digests import AlertSetting, DigestSchedule
from storage.domains import DomainStore
from storage.sqlite import Database

log = logging.getLogger(__name__)

DIGEST_COMMANDS = ("digest", "trending", "alerts")
DEFAULT_DAILY_MINUTE = 8 * 60  # 08:00 UTC: a morning digest in Europe, where the seed's languages are read
DEFAULT_TOP = 5
MAX_TOP = 10  # a Telegram message (4096 characters) holds about ten items
MAX_PERIOD_H = 168
MAX_TRENDING_H = 720  # the retention default (30 days)
MAX_ALERT_CHATS = 1000


@dataclass(frozen=True)
class DigestPlan:
    period_s: float
    daily_minute: int | None
    top_k: int
    lang: str


_DAILY = re.compile(r"^daily(?:\s+(?P<h>\d{1,2}):(?P<m>\d{2}))?$")
_EVERY = re.compile(r"^every\s+(?P<n>\d{1,3})\s*h?$")


def parse_on(args: str) -> DigestPlan | None:
    """`[daily HH:MM | every N h] [top K] [lang xx]` in any order; None when anything is off."""
    words = args.lower().split()
    daily: int | None = DEFAULT_DAILY_MINUTE
    period = 86400.0
    top, lang = DEFAULT_TOP, ""
    i = 0
    while i < len(words):
        w = words[i]
        if w == "daily":
            if i + 1 < len(words) and ":" in words[i + 1]:
                m = _DAILY.match(f"daily {words[i + 1]}")
                if m is None or int(m["h"]) > 23 or int(m["m"]) > 59:
                    return None
                daily, period, i = int(m["h"]) * 60 + int(m["m"]), 86400.0, i + 2
            else:
                daily, period, i = DEFAULT_DAILY_MINUTE, 86400.0, i + 1
        elif w == "every":
            rest = " ".join(words[i:i + 3])
            m = None
            for n in (3, 2):
                m = _EVERY.match(" ".join(words[i:i + n]))
                if m is not None:
                    i += n
                    break
            if m is None or not 1 <= int(m["n"]) <= MAX_PERIOD_H:
                log.debug("digest: bad period %r", rest)
                return None
            daily, period = None, int(m["n"]) * 3600.0
        elif w == "top" and i + 1 < len(words) and words[i + 1].isdigit():
            top, i = int(words[i + 1]), i + 2
            if not 1 <= top <= MAX_TOP:
                return None
        elif w == "lang" and i + 1 < len(words) and words[i + 1] in LANGUAGES:
            lang, i = words[i + 1], i + 2
        else:
            return None
    return DigestPlan(period, daily, top, lang)


def _hours(args: str) -> int | None:
    a = args.strip().lower().removesuffix("h").strip()
    if not a:
        return 24
    if not a.isdigit() or not 1 <= int(a) <= MAX_TRENDING_H:
        return None
    return int(a)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


class DigestCommands:
    def __init__(self, db: Database, service: DigestService | None, admins: Admins):
        self.service = service
        self.admins = admins
        self.audit_log = DomainStore(db)

    async def _allowed(self, req: DigestRequest, is_chat_admin: ChatAdminCheck | None) -> bool:
        return await self.admins.allows(req.platform, req.user_id, req.chat_id, is_chat_admin)

    async def _audit(self, req: DigestRequest, action: str, detail: str = "") -> None:
        await self.audit_log.audit(platform=req.platform, chat_id=req.chat_id, user_id=req.user_id, action=action,
                                   detail=detail)

    async def handle(self, req: DigestRequest, *, is_chat_admin: ChatAdminCheck | None = None) -> str:
        """The answer to send ('' when the digest itself was the answer); never raises for bad input."""
        service = self.service
        lang = "en"
        if service is not None:
            # The chat's language: the one its digest was set up in, else what its messages mostly are.
            known = await service.store.schedule(req.platform, str(req.chat_id))
            lang = known.lang if known is not None and known.lang else \
                await service.language(req.platform, req.chat_id)
        if not await self._allowed(req, is_chat_admin):
            await self._audit(req, f"{req.command}.refused", req.args.strip()[:200])
            return t("digest.refused", lang)
        if service is None:
            return t("digest.not_available", lang)
        chat_id, thread = str(req.chat_id), None if req.thread_id is None else str(req.thread_id)
        words = req.args.split()
        head, rest = (words[0].lower() if words else ""), " ".join(words[1:])
        if req.command == "trending":
            hours = _hours(req.args)
            if hours is None:
                return t("trending.usage", lang)
            schedule = await service.store.schedule(req.platform, chat_id)
            return await self._post(req, service, chat_id, thread, hours, schedule, lang)
        if req.command == "alerts":
            return await self._alerts(req, head, rest, lang, chat_id, thread)
        if head == "off" and not rest:
            removed = await service.store.remove_schedule(req.platform, chat_id)
            await self._audit(req, "digest.off")
            return t("digest.off" if removed else "digest.was_off", lang)
        if head == "now" and not rest:
            schedule = await service.store.schedule(req.platform, chat_id)
            return await self._post(req, service, chat_id, thread, schedule.period_s / 3600.0 if schedule else 24.0,
                                    schedule, lang)
        plan = parse_on(rest) if head == "on" else None
        if plan is None:
            return t("digest.usage", lang)
        now = service.clock.now()
        nxt = next_daily(now, plan.daily_minute) if plan.daily_minute is not None else now + plan.period_s
        await service.store.set_schedule(DigestSchedule(req.platform, chat_id, plan.period_s, plan.daily_minute,
                                                        plan.top_k, plan.lang, thread, nxt), by=req.user_id)
        await self._audit(req, "digest.on", rest[:200])
        lang = plan.lang or lang
        if plan.daily_minute is not None:
            hhmm = f"{plan.daily_minute // 60:02d}:{plan.daily_minute % 60:02d}"
            return t("digest.on.daily", lang, hhmm=hhmm, k=plan.top_k, next=_when(nxt))
        return t("digest.on.every", lang, n=round(plan.period_s / 3600), k=plan.top_k, next=_when(nxt))

    @staticmethod
    async def _post(req: DigestRequest, service: DigestService, chat_id: str, thread: str | None, hours: float,
                    schedule: DigestSchedule | None, lang: str) -> str:
        """Post a digest now: '' when posted (it is the answer), else one sentence why not."""
        try:
            await service.post(req.platform, chat_id, thread, hours=hours,
                               top_k=schedule.top_k if schedule else DEFAULT_TOP, lang=lang,
                               reply_to=str(req.target_id) if req.chat_kind != "channel" else None)
        except Exception:  # the platform refused (not a member, no right to post): say so, not "checking failed"
            log.warning("digest: could not post in %s:%s", req.platform, chat_id, exc_info=True)
            return t("digest.failed", lang)
        return ""

    async def _alerts(self, req: DigestRequest, head: str, rest: str, lang: str, chat_id: str,
                      thread: str | None) -> str:
        assert self.service is not None
        if head == "off" and not rest:
            await self.service.store.remove_alerts(req.platform, chat_id)
            await self._audit(req, "alerts.off")
            return t("alerts.off", lang)
        words = rest.split()
        if head != "on" or len(words) not in (1, 3) or not words[0].isdigit() or \
                not 2 <= int(words[0]) <= MAX_ALERT_CHATS:
            return t("alerts.usage", lang)
        given = ""
        if len(words) == 3:
            if words[1].lower() != "lang" or words[2].lower() not in LANGUAGES:
                return t("alerts.usage", lang)
            given = words[2].lower()
        n = int(words[0])
        await self.service.store.set_alerts(AlertSetting(req.platform, chat_id, n, given, thread), by=req.user_id)
        await self._audit(req, "alerts.on", f"min_chats={n}")
        return t("alerts.on", given or lang, n=n)
