"""Durable job queue workers: every check request is a row in SQLite before it is acknowledged.

    adapter: delivery -> CheckRequest -> JobQueue.submit(idem key, ...)  (persisted)  -> ack the platform
    worker:  JobStore.claim() -> ResponderFactory.build(payload) -> CheckService.run_check -> mark done

A job's payload is the serialised `CheckRequest` plus `where` (what the adapter needs to answer:
chat, message to reply to, thread). Nothing in memory is needed to run it, so a job left behind by a
crash or `kill -9` runs after the restart; the id of the reply message already sent is stored with
the job (`reply_ref`) and a resumed job edits that message instead of sending a second one.

The first reply waits: a check's "🔎 Checking…" is sent only once it has run `progress_after` seconds
(bot/progress_delay.py); a faster check sends its card as the one reply, after "typing…" (Telegram) or an
:eyes: reaction (Slack), signs a crash cannot leave behind.

Backpressure: past `queue_max` waiting jobs a new request is still taken, and its user is told
"busy — you are #N in line" once it has waited `progress_after` seconds (that notice becomes the reply message the verdict later replaces);
past `hard_cap` the request is refused with a clear sentence. Per-user and per-chat token buckets
(bot/limits.py) refuse floods the same way. Refusals are persisted too, so a re-delivery of a
refused request is recognised and not answered twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, Protocol

from bot.limits import RateLimiter
from bot.logs import job_context, set_check_id
from bot.notify import Notifier
from bot.progress_delay import DeferredResponder, Presence
from bot.render import Reply
from bot.repeats import fingerprint
from bot.check_service import CheckService, Responder
from bot.requests import CheckRequest
from storage.jobs import Job, JobStore

log = logging.getLogger(__name__)

BUSY_TEXT = "⏳ I'm busy right now — you are #{n} in line. I'll answer here as soon as it's your turn."
FULL_TEXT = ("😔 I'm overloaded and can't take more checks right now. "
             "Please send this again in a few minutes.")
MAX_ATTEMPTS = 3  # a job whose answer cannot be delivered this many times is marked failed
KEEP_FINISHED_S = 7 * 24 * 3600  # finished jobs (and their idempotency keys) are kept a week


class ResponderFactory(Protocol):
    """Per platform: rebuild a `Responder` from a job's `where` (after a restart, too)."""

    def build(self, where: Mapping[str, Any], reply_ref: str | None) -> Responder:
        """A responder answering at `where`; `reply_ref` is a reply message already sent (edit it)."""

    def reply_ref(self, responder: Responder) -> str | None:
        """The platform id of the reply message `responder` has sent, if any."""

    async def find_reply(self, where: Mapping[str, Any]) -> str | None:
        """The reply a job sent before a crash whose id was never recorded, found on the platform by the
        job's mark (`where["job"]`), or None: not found, or a platform that cannot be asked (Telegram's Bot
        API has no way to read a bot's own messages)."""


def _where(job: Job) -> dict[str, Any]:
    """Where a job answers, with its mark: a platform that keeps data on messages (Slack's metadata) tags
    the job's first reply with it, so a resumed job can find that reply (`ResponderFactory.find_reply`)."""
    return {**job.payload["where"], "job": job.id}


def request_to_payload(req: CheckRequest, where: Mapping[str, Any]) -> dict[str, Any]:
    return {"request": asdict(req), "where": dict(where)}


def request_from_payload(payload: Mapping[str, Any]) -> CheckRequest:
    known = {f.name for f in fields(CheckRequest)}
    return CheckRequest(**{k: v for k, v in payload["request"].items() if k in known})


Outcome = Literal["queued", "waiting", "duplicate", "limited", "full"]


@dataclass(frozen=True)
class Admission:
    job: Job
    outcome: Outcome
    position: int | None = None


class _Tracked:
    """Delegates to the platform responder and persists the reply message id as soon as it exists."""

    def __init__(self, inner: Responder, factory: ResponderFactory, store: JobStore, job: Job):
        self.inner = inner
        self.factory = factory
        self.store = store
        self.job_id = job.id
        self.ref = job.reply_ref

    def _before(self) -> None:
        if self.ref is None:  # this call sends the first reply message: say so before it exists
            self.store.note_reply_intent(self.job_id)

    async def _after(self) -> None:
        ref = self.factory.reply_ref(self.inner)
        if ref is not None and ref != self.ref:
            self.ref = ref
            await self.store.set_reply_ref(self.job_id, ref)

    async def progress(self, text: str) -> None:
        self._before()
        try:
            await self.inner.progress(text)
        finally:
            await self._after()

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        self._before()
        try:
            await self.inner.final(reply, request)
        finally:
            await self._after()

    async def say(self, text: str) -> None:
        self._before()
        try:
            await self.inner.say(text)
        finally:
            await self._after()


class JobQueue:
    def __init__(self, store: JobStore, service: CheckService, *, workers: int = 4, queue_max: int = 200,
                 hard_cap: int | None = None, limiter: RateLimiter | None = None,
                 shutdown_timeout: float = 20.0, retry_delay: float = 2.0, progress_after: float = 0.0):
        self.store = store
        # Seconds a check runs before its "🔎 Checking…" is sent (bot/progress_delay.py); 0 sends it at once.
        self.progress_after = progress_after
        self._presence: dict[str, Presence] = {}
        self.service = service
        self.workers = max(1, workers)
        self.queue_max = queue_max
        self.hard_cap = hard_cap if hard_cap is not None else max(queue_max * 5, queue_max + 100)
        self.limiter = limiter
        self.shutdown_timeout = shutdown_timeout
        self.retry_delay = retry_delay
        self._factories: dict[str, ResponderFactory] = {}
        # Per platform: how to tell an asker that their claim was reviewed (bot/notify.py). Shared by
        # every adapter's /review, so a verdict recorded on one platform reaches askers on the others.
        self.notifiers: dict[str, Notifier] = {}
        self._wake = asyncio.Event()
        self._stopping = False
        self._stopped = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()  # notices: kept referenced, awaited at stop
        self._later: set[asyncio.Task[None]] = set()  # notices still waiting out progress_after: cancelled at stop
        self._finished: dict[int, asyncio.Event] = {}  # job id -> set when it ends (REST clients wait on it)
        # Admission is count-then-insert: without a lock, 40 concurrent REST requests all counted 0
        # waiting jobs and all got in past a hard cap of 2. One process owns the queue, so a lock is
        # enough; each admission is ~2 ms of SQLite.
        self._admit = asyncio.Lock()
        self.resumed = 0  # jobs found running/held at start-up (left by a crash)

    def register(self, platform: str, factory: ResponderFactory, presence: Presence | None = None) -> None:
        self._factories[platform] = factory
        if presence is not None:
            self._presence[platform] = presence
        self._wake.set()

    # --- intake ------------------------------------------------------------------------------

    async def submit(self, idem_key: str, platform: str, req: CheckRequest, where: Mapping[str, Any]) -> Admission:
        """Persist a check request (or recognise a re-delivery). When this returns, the request is
        durable and the platform delivery may be acknowledged. Raises if the database cannot take it."""
        async with self._admit:
            return await self._submit(idem_key, platform, req, where)

    async def _submit(self, idem_key: str, platform: str, req: CheckRequest, where: Mapping[str, Any]) -> Admission:
        existing = await self.store.get(idem_key)
        if existing is not None:
            return Admission(existing, "duplicate")
        payload = request_to_payload(req, where)
        text_hash = fingerprint(req.text)  # how a later review finds who asked (bot/notify.py)
        enqueue = lambda status: self.store.enqueue(  # noqa: E731
            idem_key, platform, req.chat_id, req.requested_by, payload, status=status, text_hash=text_hash)
        if self.limiter is not None:
            user_key = None if req.requested_by is None else f"{platform}:{req.requested_by}"
            limited = self.limiter.check(user_key, f"{platform}:{req.chat_id}")
            if limited is not None:
                job, created = await enqueue("refused")
                if created:
                    self._notice(job, limited.message())
                return Admission(job, "limited" if created else "duplicate")
        pending = await self.store.pending_count()
        if pending >= self.hard_cap:
            job, created = await enqueue("refused")
            if created:
                log.warning("queue full (%d waiting): refused job %s", pending, job.id)
                self._notice(job, FULL_TEXT)
            return Admission(job, "full" if created else "duplicate")
        busy = pending >= self.queue_max
        at_once = busy and self.progress_after <= 0  # else the notice waits, as a check's "Checking…" does
        job, created = await enqueue("held" if at_once else "pending")
        if not created:
            return Admission(job, "duplicate")
        if busy:
            position = await self.store.position(job)
            if at_once:
                self._notice(job, BUSY_TEXT.format(n=position), unhold=True)
                return Admission(job, "waiting", position)
            task = asyncio.ensure_future(self._notice_later(job))
            self._later.add(task)
            task.add_done_callback(self._later.discard)
            self._wake.set()
            return Admission(job, "waiting", position)
        self._wake.set()
        return Admission(job, "queued")

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notice_later(self, job: Job) -> None:
        """A waiting job's "#N in line", sent only if it still waits `progress_after` seconds later: a job
        a worker takes sooner answers with its card alone. Held while the notice goes out, so a worker
        never races it with a second message."""
        await asyncio.sleep(self.progress_after)
        me = asyncio.current_task()
        if me is not None:  # past the sleep: stop() lets it finish (a cancel could strand it `held`)
            self._later.discard(me)
            self._tasks.add(me)
            me.add_done_callback(self._tasks.discard)
        if self._stopping or not await self.store.hold(job.id):
            return
        fresh = await self.store.get_id(job.id)
        if fresh is None or fresh.attempts or fresh.reply_ref is not None:
            # A worker ran it meanwhile and put it back (a failed attempt): it has answered or will edit its
            # own reply; a notice now would be a second message.
            await self.store.unhold(job.id)
            self._wake.set()
            return
        position = await self.store.position(job)
        self._notice(job, BUSY_TEXT.format(n=position), unhold=True)

    def _notice(self, job: Job, text: str, *, unhold: bool = False) -> None:
        """Tell the user now (not behind the queue). A held job's notice becomes its reply message;
        only then is the job claimable, so a worker never races it with a second message."""
        async def send() -> None:
            try:
                factory = self._factories.get(job.platform)
                if factory is not None:
                    responder = _Tracked(factory.build(_where(job), None), factory, self.store, job)
                    await responder.say(text)
            except Exception:
                log.warning("could not send a queue notice for job %s", job.id, exc_info=True)
            finally:
                if unhold:
                    await asyncio.shield(self.store.unhold(job.id))
                    self._wake.set()
        self._spawn(send())

    async def _reconcile(self, job: Job, factory: ResponderFactory, where: Mapping[str, Any]) -> Job:
        """A resumed job that may have sent its first reply unrecorded (killed in the ~2 ms between the
        platform applying it and the journal line): where the platform can be asked (Slack: the message
        carries the job's mark), that reply is found and edited instead of sending a second one."""
        if job.reply_ref is not None or job.id not in self.store.uncertain_jobs:
            return job
        self.store.uncertain_jobs.discard(job.id)
        try:
            ref = await factory.find_reply(where)
        except Exception:  # asking is a courtesy: without an answer the job sends anew, as before
            log.warning("could not look for job %s's earlier reply", job.id, exc_info=True)
            return job
        if ref is None:
            return job
        log.info("job %s: found the reply it sent before the restart; editing it", job.id)
        await self.store.set_reply_ref(job.id, ref)
        return replace(job, reply_ref=ref)

    async def wait_finished(self, job_id: int, timeout: float) -> Job | None:
        """The job once it is done, failed or refused; None while it is still waiting or running after
        `timeout` seconds. Waiting costs no polling: the worker that ends the job wakes its waiters."""
        event = self._finished.setdefault(job_id, asyncio.Event())
        job = await self.store.get_id(job_id)
        if job is None or job.status in ("done", "failed", "refused"):
            self._finished.pop(job_id, None)
            return job
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return None
        return await self.store.get_id(job_id)

    def _ended(self, job_id: int) -> None:
        event = self._finished.pop(job_id, None)
        if event is not None:
            event.set()

    # --- workers -----------------------------------------------------------------------------

    async def start(self) -> None:
        self.resumed = await self.store.recover()
        if self.resumed:
            log.info("queue: %d unfinished jobs from the last run are back in line", self.resumed)
        if self.store.uncertain_replies:
            # Which message it was depends on the job: a "Checking…" (left behind) or, for a check that ended
            # within progress_after, its card (sent again now: shown twice).
            log.warning("queue: %d jobs were sending their first reply when the last run ended; a message "
                        "they sent may be left behind or shown twice", self.store.uncertain_replies)
        self._workers = [asyncio.create_task(self._worker(), name=f"tipline-worker-{n}")
                         for n in range(self.workers)]
        self._workers.append(asyncio.create_task(self._prune(), name="tipline-jobs-prune"))

    async def _prune(self) -> None:
        while not self._stopping:
            try:
                await self.store.compact_journal()
                if pruned := await self.store.prune(KEEP_FINISHED_S):
                    log.info("queue: forgot %d finished jobs older than a week", pruned)
            except Exception:
                log.warning("queue: could not prune finished jobs", exc_info=True)
            try:
                await asyncio.wait_for(self._stopped.wait(), 3600)
            except TimeoutError:
                pass

    async def _worker(self) -> None:
        while not self._stopping:
            try:
                self._wake.clear()  # before claiming: a submit after this point wakes us
                job = await self.store.claim(platforms=tuple(self._factories))
                if job is None:
                    try:
                        await asyncio.wait_for(self._wake.wait(), 1.0)
                    except TimeoutError:
                        pass
                    continue
                self._wake.set()  # there may be more: let an idle sibling look too
                with job_context(job.id):
                    await self._run(job)
            except asyncio.CancelledError:
                raise
            except Exception:
                # The database hiccupped: a worker must outlive it (the job, if any, stays
                # `running` and is resumed at the next start).
                log.exception("queue worker error; continuing")
                await asyncio.sleep(1.0)

    async def _run(self, job: Job) -> None:
        factory = self._factories[job.platform]
        try:
            req = replace(request_from_payload(job.payload), platform=job.platform)  # whose check: the job's
            where = _where(job)
            job = await self._reconcile(job, factory, where)
            tracked = _Tracked(factory.build(where, job.reply_ref), factory, self.store, job)
            responder = DeferredResponder(tracked, after=self.progress_after, shown=job.reply_ref is not None,
                                          presence=self._presence.get(job.platform), req=req, where=where)
        except Exception as exc:  # a payload we cannot read will never run: say so in the table
            log.error("job %s has an unreadable payload", job.id, exc_info=True)
            await self.store.mark_failed(job.id, f"unreadable payload: {exc!r}")
            self._ended(job.id)
            return
        try:
            responder.open()
            try:
                check_id = await self.service.run_check(req, responder)
            finally:
                await responder.close()
        except asyncio.CancelledError:
            # Shutdown ran out of time: back in line, resumed (editing its reply) after the restart.
            await asyncio.shield(self.store.release(job.id))
            raise
        except Exception as exc:
            # The platform could not be reached: retry later, give up after MAX_ATTEMPTS.
            if job.attempts >= MAX_ATTEMPTS:
                log.error("job %s failed %d times; giving up", job.id, job.attempts, exc_info=True)
                await self.store.mark_failed(job.id, repr(exc))
                self._ended(job.id)
                return
            log.warning("job %s failed (attempt %d); retrying", job.id, job.attempts, exc_info=True)
            try:
                await asyncio.sleep(self.retry_delay * job.attempts)
            finally:
                await asyncio.shield(self.store.release(job.id))
            return
        set_check_id(check_id)
        await self.store.mark_done(job.id, check_id)
        self._ended(job.id)
        log.info("job %s done (check %s)", job.id, check_id)

    async def stop(self, timeout: float | None = None) -> None:
        """Stop taking work; let running checks finish within `timeout`, else put them back in line."""
        self._stopping = True
        self._stopped.set()
        self._wake.set()
        timeout = self.shutdown_timeout if timeout is None else timeout
        for waiting in list(self._later):
            waiting.cancel()  # not sent yet; the job is still `pending` and its check answers it
        workers = list(self._workers)
        if workers:
            _, late = await asyncio.wait(workers, timeout=timeout)
            for t in late:
                t.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        self._workers = []

    async def idle(self) -> bool:
        """True when nothing is waiting or running (tests and `docs/reliability.md` figures)."""
        counts = await self.store.counts()
        return not any(counts.get(s, 0) for s in ("held", "pending", "running"))


class SilentResponder:
    """For jobs nobody is waiting on in a chat (REST API): the result is stored, nothing is sent."""

    async def progress(self, text: str) -> None:
        return None

    async def final(self, reply: Reply, request: CheckRequest | None = None) -> None:
        return None

    async def say(self, text: str) -> None:
        return None


class SilentResponderFactory:
    def build(self, where: Mapping[str, Any], reply_ref: str | None) -> Responder:
        return SilentResponder()

    def reply_ref(self, responder: Responder) -> str | None:
        return None

    async def find_reply(self, where: Mapping[str, Any]) -> str | None:
        return None
