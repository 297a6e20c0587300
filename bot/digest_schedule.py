"""Posting digests on schedule and alerts once per story: the background task `tipline run` starts.

`DigestService` owns what digests and alerts share: the builder, the store, one `DigestPoster` per
platform (each adapter registers its own) and the `Clock`. `run(stop)` loops on the clock: every tick
posts the digests that are due (each over the window since its period started) and looks for stories
that matched a REFUTED or MISLEADING fact-check and reached a chat's alert threshold.

Time comes only from the injected `Clock`: `SystemClock` in production; tests drive a manual clock and
the loop wakes when they advance it, so no test sleeps through real minutes. Schedules and alerted
stories are in SQLite (storage/digests.py): a restart neither skips a due digest (it is posted at the
first tick) nor repeats an alert (the story is claimed in the same transaction that checks it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import suppress
from datetime import datetime, timedelta, timezone
from typing import Protocol

from bot.digest import ALERT_VERDICTS, Digest, DigestBuilder, StoryAlert
from core.corroboration.trends import Story
from schema.models import Match
from storage.digests import AlertSetting, DigestSchedule, DigestStore
from storage.messages import resolve_story

log = logging.getLogger(__name__)

TICK_S = 60.0  # a digest is posted at most a minute late; alerts are looked for once a minute
ALERT_STORIES = 50  # stories past the lowest threshold matched per tick (the rest wait for the next)


class Clock(Protocol):
    def now(self) -> float:
        """Unix seconds."""

    async def sleep_until(self, t: float, stop: asyncio.Event) -> None:
        """Return at time `t`, or as soon as `stop` is set."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def sleep_until(self, t: float, stop: asyncio.Event) -> None:
        with suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, t - time.time()))


class DigestPoster(Protocol):
    """Per platform: post a digest or an alert as a new message in a chat (a reply when `reply_to`)."""

    async def post_digest(self, chat_id: str, thread_id: str | None, digest: Digest,
                          reply_to: str | None = None) -> None: ...

    async def post_alert(self, chat_id: str, thread_id: str | None, alert: StoryAlert) -> None: ...


def next_daily(now: float, minute: int) -> float:
    """The next HH:MM (minutes after midnight, UTC) strictly after `now`."""
    day = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    at = day + timedelta(minutes=minute)
    if at.timestamp() <= now:
        at += timedelta(days=1)
    return at.timestamp()


def next_after(s: DigestSchedule, now: float) -> float:
    if s.daily_minute is not None:
        return next_daily(now, s.daily_minute)
    nxt = s.next_at + s.period_s
    return nxt if nxt > now else now + s.period_s


class DigestService:
    def __init__(self, builder: DigestBuilder, store: DigestStore, clock: Clock | None = None, *,
                 alert_window_s: float = 7 * 86400.0, tick_s: float = TICK_S):
        self.builder = builder
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self.alert_window_s = alert_window_s
        self.tick_s = tick_s
        self.posters: dict[str, DigestPoster] = {}
        # story id -> (chats when matched, the auto-tier match or None): a story is matched again only
        # when it reached another chat.
        self._matched: dict[str, tuple[int, Match | None]] = {}
        self.ticks = 0

    def register(self, platform: str, poster: DigestPoster) -> None:
        self.posters[platform] = poster

    async def language(self, platform: str, chat_id: object, given: str = "") -> str:
        """The digest language of a chat: as set with `lang`, else what its stored messages mostly are."""
        if given:
            return given
        found = await self.store.chat_language(platform, chat_id)
        return found if found in ("en", "ru", "uk") else "en"

    async def post(self, platform: str, chat_id: str, thread_id: str | None, *, hours: float, top_k: int,
                   lang: str, reply_to: str | None = None) -> Digest:
        poster = self.posters.get(platform)
        if poster is None:
            raise LookupError(f"no digest poster for {platform}")
        now = self.clock.now()
        digest = await self.builder.build(now - hours * 3600.0, now, top_k=top_k, lang=lang)
        await poster.post_digest(chat_id, thread_id, digest, reply_to)
        return digest

    # --- the loop ---------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.tick()
            nxt = self.clock.now() + self.tick_s
            due = await self._next_due()
            until = min(nxt, due) if due is not None else nxt
            log.debug("digest: tick %d done; next at %.0f (now %.0f)", self.ticks, until, self.clock.now())
            await self.clock.sleep_until(until, stop)

    async def _next_due(self) -> float | None:
        try:
            return await self.store.next_due()
        except Exception:
            log.warning("digest: could not read the schedules", exc_info=True)
            return None

    async def tick(self) -> None:
        """Post what is due, then look for alerts; never raises (the loop must go on)."""
        self.ticks += 1
        try:
            await self.run_due()
        except Exception:
            log.exception("digest: scheduled digests failed")
        try:
            await self.run_alerts()
        except Exception:
            log.exception("digest: alerts failed")

    async def run_due(self) -> int:
        now = self.clock.now()
        posted = 0
        for s in await self.store.due(now):
            # Advanced before posting: a platform that keeps failing is not retried every minute.
            await self.store.advance(s.platform, s.chat_id, last_at=now, next_at=next_after(s, now))
            try:
                await self.post(s.platform, s.chat_id, s.thread_id, hours=s.period_s / 3600.0, top_k=s.top_k,
                                lang=s.lang or await self.language(s.platform, s.chat_id))
                posted += 1
            except Exception:
                log.exception("digest: could not post the digest of %s:%s", s.platform, s.chat_id)
        return posted

    async def run_alerts(self) -> int:
        settings = [a for a in await self.store.alert_settings() if a.platform in self.posters]
        if not settings:
            return 0
        now = self.clock.now()
        lowest = min(a.min_chats for a in settings)
        stories = await self.builder.stories(now - self.alert_window_s, now, min_chats=lowest)
        if not stories:
            return 0
        aliases = await self.builder.messages.story_aliases()
        done = {(a.platform, a.chat_id): {resolve_story(aliases, s) for s in await self.store.alerted(a.platform,
                                                                                                     a.chat_id)}
                for a in settings}
        live = {s.id for s in stories}
        for gone in [k for k in self._matched if k not in live]:
            del self._matched[gone]  # the cache holds only the stories still in the window
        sent = 0
        todo = [s for s in stories if any(len(s.chats) >= a.min_chats and s.id not in done[(a.platform, a.chat_id)]
                                          for a in settings) and not self._settled(s)]
        for story in todo[:ALERT_STORIES]:
            match = await self._match(story)
            if match is None or match.verdict not in ALERT_VERDICTS:
                continue
            for a in settings:
                if len(story.chats) >= a.min_chats and story.id not in done[(a.platform, a.chat_id)]:
                    sent += await self._alert(a, story, now)
        return sent

    def _settled(self, story: Story) -> bool:
        """Matched already, at this many chats, and not to a fact-check that alerts: nothing to do (so the
        per-tick limit goes to stories not looked at yet)."""
        seen = self._matched.get(story.id)
        return seen is not None and seen[0] == len(story.chats) and \
            (seen[1] is None or seen[1].verdict not in ALERT_VERDICTS)

    async def _match(self, story: Story) -> Match | None:
        seen = self._matched.get(story.id)
        if seen is not None and seen[0] == len(story.chats):
            return seen[1]
        item = await self.builder.item(story, "en", summarize=False)
        match = item.match if item is not None else None
        self._matched[story.id] = (len(story.chats), match)
        return match

    async def _alert(self, a: AlertSetting, story: Story, now: float) -> int:
        lang = a.lang or await self.language(a.platform, a.chat_id)
        item = await self.builder.item(story, lang)
        if item is None or item.match is None or item.match.verdict not in ALERT_VERDICTS:
            return 0
        if not await self.store.claim_alert(a.platform, a.chat_id, story.id, item.match.factcheck_id,
                                            len(story.chats), now):
            return 0  # alerted already (another tick, or before a restart)
        try:
            await self.posters[a.platform].post_alert(a.chat_id, a.thread_id, StoryAlert(item, a.min_chats, lang))
        except Exception:
            log.exception("digest: could not post an alert to %s:%s", a.platform, a.chat_id)
            await self.store.release_alert(a.platform, a.chat_id, story.id)  # the next tick tries again
            return 0
        log.info("digest: alerted %s:%s about story %s (%d chats)", a.platform, a.chat_id, story.id,
                 len(story.chats))
        return 1
