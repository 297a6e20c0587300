"""The review queue closes the loop: a 👎 on an unmatched check -> an admin's verdict -> a fact-check
the next identical forward matches at once."""

from bot.review import REFUSED, ReviewCommands, ReviewRequest
from bot.check_service import CheckService
from bot.requests import IncomingMessage
from bot.router import route
from schema.models import Verdict
from storage.domains import DomainStore
from storage.feedback import FeedbackStore

ADMIN = "4242"
CLAIM = "Purple elephants were spotted grazing on the lawn of the Ohio state capitol last night."


def req(args: str, user: str = ADMIN) -> ReviewRequest:
    return ReviewRequest(platform="telegram", chat_id=int(user), target_id=1, user_id=int(user), args=args)


async def test_admin_verdict_becomes_a_fact_check_the_next_check_matches(app):
    review = ReviewCommands(app.db, app.kb.add, [ADMIN])
    assert await review.handle(req("")) == "The review queue is empty."

    first = await CheckService(app.engine).check(CLAIM)  # checked and stored
    assert first.verdict == Verdict.NOT_ENOUGH_EVIDENCE
    assert await FeedbackStore(app.db).record(first.id, "telegram", 99, -1) is True
    listing = await review.handle(req(""))
    assert first.id in listing and "Purple elephants" in listing

    answer = await review.handle(req(f"{first.id} Pants on Fire https://checks.example/purple-elephants"))
    assert "Recorded “False”" in answer
    assert await FeedbackStore(app.db).open_reviews() == []

    again = await app.engine.check(CLAIM)
    assert again.verdict == Verdict.REFUTED
    assert again.citations[0].url == "https://checks.example/purple-elephants"
    actions = [e.action for e in await DomainStore(app.db).audit_entries()]
    assert "review.verdict" in actions


async def test_non_admins_are_refused_and_audited(app):
    review = ReviewCommands(app.db, app.kb.add, [ADMIN])
    assert await review.handle(req("", user="7")) == REFUSED
    assert (await DomainStore(app.db).audit_entries())[0].action == "review.refused"


async def test_bad_arguments_get_one_sentence(app):
    review = ReviewCommands(app.db, app.kb.add, [ADMIN])
    assert (await review.handle(req("abc False not-a-url"))).startswith("Usage:")
    assert "don't know the rating" in await review.handle(req("abc Banana https://x.example/a"))
    assert "no check with that id" in await review.handle(req("nope False https://x.example/a"))


def test_review_is_only_routed_in_private_chats():
    private = route(IncomingMessage("telegram", 5, "private", 1, "/review"), "tiplinebot")
    group = route(IncomingMessage("telegram", -100, "supergroup", 1, "/review"), "tiplinebot")
    assert isinstance(private, ReviewRequest) and private.args == ""
    assert group is None


async def test_finding_who_asked_about_a_claim_searches_indexes_only(tmp_path):
    """The askers of a reviewed claim are found by index (check id, text fingerprint, counted repeats),
    never by reading every finished job's payload as the review queue grows."""
    from storage.jobs import ASKERS_SQL, JobStore
    from storage.sqlite import Database

    db = await Database.open(tmp_path / "jobs.sqlite")
    try:
        store = JobStore(db)
        for n in range(30):
            job, _ = await store.enqueue(f"k{n}", "telegram", n % 3, 7, {"request": {"text": f"claim {n % 5}"},
                                                                          "where": {"reply_to": n}},
                                         text_hash=f"h{n % 5}")
            await store.mark_done(job.id, f"c{n % 4}")
        plan = [str(row[-1]) for row in await db.fetchall("EXPLAIN QUERY PLAN " + ASKERS_SQL, ("c1", "h2", "h2"))]
        # every read of jobs is a lookup by check id or fingerprint (or by row id), never all done jobs
        reads = [p for p in plan if p.startswith(("SCAN", "SEARCH")) and (" jobs " in p or " j " in p)]
        assert reads and all("INDEX jobs_check " in p or "INDEX jobs_text_hash " in p or "PRIMARY KEY" in p
                             for p in reads), plan
        found = await store.askers("c1", "h2")
        # check c1 (n % 4 == 1) or fingerprint h2 (n % 5 == 2), oldest first
        assert [j.idem_key for j, _ in found] == [f"k{n}" for n in range(30) if n % 4 == 1 or n % 5 == 2]
    finally:
        await db.close()
