"""The review queue closes the loop: a 👎 on an unmatched check -> an admin's verdict -> a fact-check
the next identical forward matches at once."""

from bot.review import REFUSED, ReviewCommands, ReviewRequest
from bot.chat import IncomingMessage, route
from core.models import Verdict
from storage.domains import DomainStore
from storage.feedback import FeedbackStore

ADMIN = "4242"
CLAIM = "Purple elephants were spotted grazing on the lawn of the Ohio state capitol last night."


def req(args: str, user: str = ADMIN) -> ReviewRequest:
    return ReviewRequest(platform="telegram", chat_id=int(user), target_id=1, user_id=int(user), args=args)


async def test_admin_verdict_becomes_a_fact_check_the_next_check_matches(app):
    review = ReviewCommands(app.db, app.kb.add, [ADMIN])
    assert await review.handle(req("")) == "The review queue is empty."

    first = await app.engine.check(CLAIM)
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
