"""'Also reported by' for real: tracked messages in SQLite + embedded Qdrant + the ONNX model.

One app per module (building it costs seconds); every test uses its own chat ids so tests don't see
each other's messages (lookups exclude nothing else).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from bot.app import build_app
from bot.chat_settings import ChatCommands, ChatSettingsRequest, CheckExtras
from bot.render import to_reply
from bot.repeats import RepeatTracker, fingerprint
from core.corroboration.story_model import prepare_text
from evals.story_detector import pair_score
from core.corroboration.corroborator import INLINE_ROW_CHARS, Corroborator, TrackedMessage, _row_of, _secs
from schema.models import Result, Verdict
from storage.message_vectors import (
    VECTOR,
    MessageVectors,
    StoredMessageVector,
    point_id,
)
from storage.messages import MessageStore, resolve_story
from storage.vectors import Point
from tests.conftest import isolated_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOW = datetime.now(UTC)
_ids = itertools.count(1)

STORY = "Explosions reported in Kyiv this morning, air defence is active over the city"
STORY_2 = "Explosions heard in Kiev this morning; air defense working over the capital"
STORY_3 = "Air defence active over Kyiv after explosions this morning, residents told to shelter"
PORT = ("Grain ship hit by a drone in the port of Odesa overnight, crew evacuated",
        "Drone struck a grain ship in Odessa port overnight; the crew was evacuated",
        "Crew evacuated after overnight drone strike on grain ship at Odesa port")
METRO = ("Kharkiv metro closed all day after power station shelled, trains stopped",
         "Kharkov metro stopped: trains halted all day after power station shelling")
PLANT = "Zaporizhzhia nuclear plant lost external power again tonight, diesel generators running"
OTHER = "Recipe of the day: how to bake sourdough bread at home with only flour and water"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    settings = isolated_settings(tmp_path_factory.mktemp("track") / "data", model_dir)
    async with build_app(settings, seed=False) as a:
        yield a


async def tracked(app, n: int = 1, kind: str = "channel") -> list[str]:
    """n fresh tracked chat ids."""
    out = []
    for _ in range(n):
        cid = f"-100{next(_ids):06d}"
        await app.corroborator.store.set_flag("telegram", cid, "tracking", True, by=1, kind=kind,
                                              handle=f"@chan{cid[-4:]}")
        out.append(cid)
    return out


def msg(chat: str, text: str, at: datetime, mid: int | None = None) -> TrackedMessage:
    mid = mid if mid is not None else next(_ids)
    return TrackedMessage("telegram", chat, str(mid), text, at, author=f"@chan{chat[-4:]}",
                          permalink=f"https://t.me/chan{chat[-4:]}/{mid}")


async def test_same_story_from_other_chats_within_the_window(app):
    c = app.corroborator
    a, b, d, e, asker = await tracked(app, 5)
    await c.ingest(msg(d, STORY, NOW - timedelta(days=9)))  # outside the 7-day window
    await c.ingest(msg(a, STORY, NOW - timedelta(hours=3)))
    await c.ingest(msg(b, STORY_2, NOW - timedelta(hours=2)))
    await c.ingest(msg(e, OTHER, NOW - timedelta(hours=1)))
    await c.ingest(msg(asker, STORY, NOW - timedelta(minutes=5)))  # the asking chat itself

    found = await c.lookup(STORY_3, exclude_chats=[("telegram", asker)], at=NOW)
    assert found is not None
    assert [i.chat_id for i in found.items] == [a, b]  # equal credibility: earliest first
    assert found.total == 2
    assert found.first_seen_in.chat_id == a and found.first_seen_at == found.items[0].at
    assert found.items[0].link.startswith("https://t.me/")
    # The same question nine days ago sees the old message and not the new ones.
    old = await c.lookup(STORY_3, exclude_chats=[("telegram", asker)], at=NOW - timedelta(days=9, hours=-1))
    assert old is not None and [i.chat_id for i in old.items] == [d]
    # Asked from chat a: a is not its own corroboration.
    from_a = await c.lookup(STORY_3, exclude_chats=[("telegram", a)], at=NOW)
    assert a not in [i.chat_id for i in from_a.items]
    assert await c.lookup(OTHER + " and a pinch of salt", exclude_chats=[("telegram", e)], at=NOW) is None


async def test_a_lookup_scores_on_the_loop_in_a_thread_and_while_counts_are_busy_alike(app):
    """A short text is scored on the event loop, a long one in a worker thread; both give the same answer.
    While a worker thread holds the document-frequency counts (a bulk load's chunk), the lookup waits in
    a thread, not on the loop: other tasks keep running, and it answers once the counts are free."""
    c = app.corroborator
    a, b, asker = await tracked(app, 3)
    await c.ingest(msg(a, PORT[0], NOW - timedelta(hours=3)))
    await c.ingest(msg(b, PORT[1], NOW - timedelta(hours=2)))
    ask = [("telegram", asker)]
    on_loop = await c.lookup(PORT[2], exclude_chats=ask, at=NOW)
    assert on_loop is not None and {i.chat_id for i in on_loop.items} == {a, b}
    c.inline_row_chars = 0  # every text now counts as long
    try:
        in_thread = await c.lookup(PORT[2], exclude_chats=ask, at=NOW)
    finally:
        c.inline_row_chars = INLINE_ROW_CHARS
    assert in_thread == on_loop

    held, release = threading.Event(), threading.Event()

    def count_meanwhile() -> None:  # as _count_many does in a worker thread
        with c._lock:
            held.set()
            release.wait(10)
    worker = threading.Thread(target=count_meanwhile)
    worker.start()
    assert held.wait(10)
    lookup = asyncio.create_task(c.lookup(PORT[2], exclude_chats=ask, at=NOW))
    ticks = 0
    for _ in range(20):  # the loop keeps serving while the lookup waits for the counts
        await asyncio.sleep(0.01)
        ticks += 1
    assert not lookup.done() and ticks == 20
    release.set()
    assert await asyncio.wait_for(lookup, 10) == on_loop
    worker.join()


async def test_chains_form_one_persisted_story(app):
    c = app.corroborator
    a, b, x = await tracked(app, 3)
    s1 = await c.ingest(msg(a, PORT[0], NOW - timedelta(hours=5)))
    s2 = await c.ingest(msg(b, PORT[1], NOW - timedelta(hours=4)))
    s3 = await c.ingest(msg(x, PORT[2], NOW - timedelta(hours=3)))
    assert s1 == s2 == s3 and s1.startswith(f"telegram:{a}:")  # the story is named after its first message
    stored = [m for m in await c.store.since((NOW - timedelta(hours=6)).timestamp()) if m.chat_id in (a, b, x)]
    aliases = await c.store.story_aliases()
    assert len(stored) == 3 and {resolve_story(aliases, m.story_id) for m in stored} == {s1}


async def test_reopened_corroborator_loads_stories_from_qdrant_and_sqlite(app):
    a, b = await tracked(app, 2)
    await app.corroborator.ingest(msg(a, METRO[0], NOW - timedelta(hours=2)))
    fresh = Corroborator(app.corroborator.store, app.corroborator.vectors, app.embedder,
                         multilingual=app.corroborator.multilingual)
    await fresh.open()
    assert fresh.indexed == app.corroborator.indexed == await app.corroborator.vectors.count()
    found = await fresh.lookup(METRO[1], exclude_chats=[("telegram", b)], at=NOW)
    assert found is not None and [i.chat_id for i in found.items] == [a]


async def test_open_reconciles_the_vectors_with_sqlite(app):
    """A lost vector write is embedded again, a vector without its row is dropped, and a point written
    before the story fields existed (an older data dir) gets them from its row."""
    c = app.corroborator
    a, b, x = await tracked(app, 3)
    flood = ("Tram depot in Lviv flooded after the storm, tram lines 2 and 6 suspended until Friday",
             "Storm floods Lviv tram depot; lines 2 and 6 stopped until Friday",
             "Lviv: tram lines 2 and 6 suspended until Friday after the storm flooded the depot")
    lost, old_style = msg(a, flood[0], NOW - timedelta(hours=3)), msg(b, flood[1], NOW - timedelta(hours=2))
    await c.ingest(lost)
    await c.ingest(old_style)
    await c.vectors.delete([lost.key])
    [vecs] = (await c.vectors.vectors_of([old_style.key])).values()
    vec = vecs[VECTOR]
    await app.vectors.upsert(c.vectors.name, [Point(point_id(old_style.key), vecs, {
        "key": old_style.key, "platform": "telegram", "chat": f"telegram:{b}", "message_id": old_style.message_id,
        "ts": _secs(old_style.at)})])
    orphan = msg(x, flood[2], NOW - timedelta(hours=1))
    await app.vectors.upsert(c.vectors.name, [Point(point_id(orphan.key), {VECTOR: vec}, {
        "key": orphan.key, "chat": f"telegram:{x}", "ts": _secs(orphan.at)})])

    fresh = Corroborator(c.store, c.vectors, app.embedder, multilingual=c.multilingual)
    await fresh.open()
    stored = await c.vectors.scoring_data([lost.key, old_style.key, orphan.key])
    assert set(stored) == {lost.key, old_style.key}
    assert stored[old_style.key].complete and stored[old_style.key].story == stored[lost.key].story == lost.key
    assert stored[old_style.key].terms and fresh.indexed == await c.vectors.count() == await c.store.count()
    found = await fresh.lookup(flood[2], exclude_chats=[("telegram", x)], at=NOW)
    assert found is not None and {i.chat_id for i in found.items} == {a, b}


async def test_opt_out_stops_storage_immediately(app):
    c = app.corroborator
    (chat,) = await tracked(app, 1, kind="group")
    before = await c.store.count()
    assert await c.ingest(msg(chat, "Water supply will be cut in the whole region tomorrow", NOW)) is not None
    cmds = ChatCommands(app.db, ["7"], c)
    answer = await cmds.handle(ChatSettingsRequest("telegram", chat, "group", 1, 7, "track", "off"))
    assert "off" in answer
    assert await c.ingest(msg(chat, "Second message after opting out", NOW)) is None
    assert await c.store.count() == before + 1
    assert await c.store.count("telegram", chat) == 1


async def test_untracked_chat_is_never_stored(app):
    c = app.corroborator
    before, vectors_before = await c.store.count(), await c.vectors.count()
    assert await c.ingest(msg("-100999999", STORY, NOW)) is None
    assert await c.store.count() == before and await c.vectors.count() == vectors_before


async def test_forget_deletes_the_chat_everywhere(app):
    c = app.corroborator
    a, b = await tracked(app, 2)
    for h in (3, 2, 1):
        await c.ingest(msg(a, f"{PLANT} (update {h})", NOW - timedelta(hours=h)))
    vectors_before = await c.vectors.count()
    assert (await c.lookup(PLANT, exclude_chats=[("telegram", b)], at=NOW)) is not None
    cmds = ChatCommands(app.db, [], c)
    refused = await cmds.handle(ChatSettingsRequest("telegram", a, "group", 1, 99, "forget"))
    assert refused.startswith("Only admins") and await c.store.count("telegram", a) == 3

    async def chat_admin() -> bool:
        return True
    answer = await cmds.handle(ChatSettingsRequest("telegram", a, "group", 1, 99, "forget"), is_chat_admin=chat_admin)
    assert answer == "Deleted 3 stored messages of this chat."
    assert await c.store.count("telegram", a) == 0
    assert await c.vectors.count() == vectors_before - 3
    assert await c.lookup(PLANT, exclude_chats=[("telegram", b)], at=NOW) is None
    audit = await cmds.audit_log.audit_entries(5)
    assert [e.action for e in audit[:2]] == ["forget", "forget.refused"]


async def test_retention_cleanup_removes_old_messages(app):
    c = app.corroborator
    a, b = await tracked(app, 2)
    old = msg(a, "Bridge over the Dnipro closed for repairs until spring", NOW - timedelta(days=31))
    new = msg(a, "Bridge over the Dnipro closed for repairs until spring, city says", NOW - timedelta(days=1))
    await c.ingest(old)
    await c.ingest(new)
    assert await c.store.count("telegram", a) == 2
    removed = await c.cleanup()
    assert removed >= 1
    assert set(await c.store.get([old.key, new.key])) == {new.key}
    assert set(await c.vectors.scoring_data([old.key, new.key])) == {new.key}
    found = await c.lookup("Dnipro bridge closed for repairs until spring", exclude_chats=[("telegram", b)],
                           at=NOW - timedelta(days=31))
    assert found is None


async def test_tiers_follow_agreement_and_contradiction(app):
    c = app.corroborator
    a, b, x, asker = await tracked(app, 4)
    text = "Train service between Lviv and Przemysl suspended today because of a power outage"
    await c.ingest(msg(a, text, NOW - timedelta(hours=2)))
    one = await c.lookup(text, exclude_chats=[("telegram", asker)], at=NOW)
    assert one.tier == "medium" and one.note == ""
    await c.ingest(msg(b, text + ", railway says", NOW - timedelta(hours=1)))
    two = await c.lookup(text, exclude_chats=[("telegram", asker)], at=NOW)
    assert two.tier == "high" and two.total == 2 and two.agreement >= 0.8
    await c.ingest(msg(x, "Fake: train service between Lviv and Przemysl was not suspended today, no power outage",
                       NOW - timedelta(minutes=30)))
    disagree = await c.lookup(text, exclude_chats=[("telegram", asker)], at=NOW)
    assert disagree.total == 3  # the denial is the same story…
    assert disagree.tier == "low" and disagree.note == "sources disagree"  # …and the tier says so


async def test_live_features_equal_the_evaluated_detector(app):
    """The live scoring gives a pair exactly what the fitted StoryDetector does (same features, IDF)."""
    # not opened: empty term statistics, so the IDF comes from these two messages as in pair_score
    c = Corroborator(MessageStore(app.db), MessageVectors(app.vectors, "unused"), app.embedder)
    a_text, b_text = STORY, STORY_2
    va, vb = app.embedder.embed_sync([prepare_text(a_text), prepare_text(b_text)])
    ra, rb = _row_of(prepare_text(a_text)), _row_of(prepare_text(b_text))
    c._count_many([ra.terms, rb.terms], +1)
    stored_a = StoredMessageVector("a", "x:a", 0.0, "a", 0.0, ra.entities, ra.terms, ra.denies, float(va @ vb))
    with c._lock:
        feats = c._features(rb, [stored_a])
    expected = pair_score(prepare_text(a_text), va, prepare_text(b_text), vb)
    assert float(c.model.score(feats)[0]) == pytest.approx(expected, abs=1e-6)


# --- repeats -----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
def test_fingerprint_ignores_case_punctuation_and_emoji_but_not_words():
    base = fingerprint("The 5G rollout caused the coronavirus outbreak!")
    assert fingerprint("the 5g ROLLOUT caused the coronavirus outbreak 🔥🔥") == base
    assert fingerprint("  The 5G rollout, caused the coronavirus   outbreak.") == base
    assert fingerprint("The 5G rollout did not cause the coronavirus outbreak") != base


async def test_repeat_forwards_reuse_the_stored_verdict_and_count(app):
    text = f"Drinking hot water every 15 minutes kills the virus {next(_ids)}"
    result = Result(id="rep" + str(next(_ids)), text=text, verdict=Verdict.REFUTED, label="False", confidence=0.9,
                    reasoning="No.")
    await app.db.save_check(result)
    extras = CheckExtras(app.db, "telegram", app.corroborator, RepeatTracker(app.db))
    assert await extras.reuse(text, "global", 42) is None
    first = await extras.enrich(result, text, "global", 42)
    assert first.repetition is None
    again = await extras.reuse(text.upper() + "!!", "global", 43)
    assert again is not None and again.id == result.id and again.verdict == Verdict.REFUTED
    assert again.repetition.times_this_week == 2 and again.repetition.first_check_id == result.id
    third = await extras.reuse(text, "global", 44)
    assert third.repetition.times_this_week == 3
    assert "Checked 3 times this week" in to_reply(third).repeat_note
    # another chat's own source rules: not the same verdict
    assert await extras.reuse(text, "telegram:-100777", 45) is None


# --- commands ----------------------------------------------------------------------------------


async def test_track_and_auto_rights_and_audit(app):
    cmds = ChatCommands(app.db, ["telegram:1"], app.corroborator)
    chat = "-100555001"

    async def no() -> bool:
        return False

    async def yes() -> bool:
        return True

    req = ChatSettingsRequest("telegram", chat, "group", 1, 2, "track", "on")
    assert (await cmds.handle(req, is_chat_admin=no)).startswith("Only admins")
    assert not await cmds.store.is_tracked("telegram", chat)
    assert (await cmds.handle(req, is_chat_admin=yes)).startswith("Tracking is on")
    assert await cmds.store.is_tracked("telegram", chat)
    chats = {c.chat_id: c for c in await cmds.store.tracked_chats()}
    assert chats[chat].enabled_by == "2" and chats[chat].enabled_at
    auto = ChatSettingsRequest("telegram", chat, "group", 1, 1, "auto", "on")  # configured admin
    assert (await cmds.handle(auto)).startswith("Auto mode is on")
    assert await cmds.store.is_auto("telegram", chat)
    assert (await cmds.handle(ChatSettingsRequest("telegram", chat, "group", 1, 1, "auto", "maybe"))).startswith("Usage")
    assert "groups and channels" in await cmds.handle(ChatSettingsRequest("telegram", 5, "private", 1, 1, "track", "on"))
    actions = [e.action for e in await cmds.audit_log.audit_entries(3)]
    assert actions == ["auto.on", "track.on", "track.refused"]


async def test_stats_for_configured_admins_only(app):
    cmds = ChatCommands(app.db, ["1"], app.corroborator)

    async def yes() -> bool:
        return True
    refused = await cmds.handle(ChatSettingsRequest("telegram", "-100123", "group", 1, 2, "stats"), is_chat_admin=yes)
    assert refused == "Only the bot's admins can see the stats."
    stats = await cmds.handle(ChatSettingsRequest("telegram", 1, "private", 1, 1, "stats"))
    assert "Checks:" in stats and "Tracked chats:" in stats
    assert f"Messages stored: {await app.corroborator.store.count()}" in stats


async def test_the_forwarded_channel_is_not_its_own_corroboration(app):
    c = app.corroborator
    a, b = await tracked(app, 2)
    await c.store.set_flag("telegram", a, "tracking", True, kind="channel", title="Morning Wire")
    text = "Ferry between Helsinki and Tallinn cancelled tonight because of a storm warning"
    await c.ingest(msg(a, text, NOW - timedelta(hours=1)))
    await c.ingest(msg(b, text + " (ferry company)", NOW - timedelta(minutes=50)))
    everyone = await c.lookup(text, at=NOW)
    assert {i.chat_id for i in everyone.items} == {a, b}
    for origin in ("Morning Wire", f"@chan{a[-4:]}"):  # a forward names the channel by title or handle
        found = await c.lookup(text, at=NOW, exclude_names=[origin])
        assert [i.chat_id for i in found.items] == [b]


async def test_stored_rows_carry_author_link_time_and_language(app):
    c = app.corroborator
    a, b = await tracked(app, 2)
    await c.ingest(msg(b, STORY, NOW - timedelta(minutes=10)))  # its own English post: no other test's needed
    m = msg(a, "Взрывы в Киеве этим утром, работает ПВО", NOW - timedelta(minutes=3))
    story = await c.ingest(m)  # STORY retold in Russian: it joins the English post's story (across languages)
    row = (await c.store.get([m.key]))[m.key]
    assert (row.platform, row.chat_id, row.message_id) == ("telegram", a, m.message_id)
    assert row.author == m.author and row.permalink == m.permalink and row.language == "ru"
    assert abs(row.ts - NOW.timestamp() + 180) < 1e-3 and row.story_id == story != m.key
    assert STORY in {r.text for r in (await c.store.get([story])).values()}


RECALL = ("Pfizer recalls its COVID vaccine worldwide, the company said",
          "Pfizer is pulling its COVID vaccine from every market, company says")
RECALL_RU = ("Pfizer отзывает свою вакцину от COVID по всему миру, сообщили в компании",
             "Компания Pfizer объявила, что отзывает вакцину от COVID во всех странах")
TESLA_RU = "Tesla отзывает 2 миллиона машин из-за автопилота"


async def test_also_reported_by_crosses_languages(app):
    """A Russian channel's post and an English outlet's report of the same story are one story, found
    from either language; the English vectors alone cannot read the Russian side."""
    c = app.corroborator
    ru, en, ru2, other, asker = await tracked(app, 5)
    await c.ingest(msg(ru, RECALL_RU[0], NOW - timedelta(hours=3)))
    await c.ingest(msg(en, RECALL[0], NOW - timedelta(hours=2)))
    await c.ingest(msg(other, TESLA_RU, NOW - timedelta(hours=2)))  # another recall, another story
    stored = {m.chat_id: m for m in await c.store.since((NOW - timedelta(hours=4)).timestamp())
              if m.chat_id in (ru, en, other)}
    assert stored[ru].story_id == stored[en].story_id != stored[other].story_id  # linked at ingest

    from_english = await c.lookup(RECALL[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert from_english is not None and {i.chat_id for i in from_english.items} == {ru, en}
    from_russian = await c.lookup(RECALL_RU[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert from_russian is not None and {i.chat_id for i in from_russian.items} == {ru, en}
    # Two Russian posts of one story link too.
    await c.ingest(msg(ru2, RECALL_RU[1], NOW - timedelta(hours=1)))
    again = await c.lookup(RECALL[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert again is not None and {i.chat_id for i in again.items} == {ru, en, ru2}


async def test_a_collection_without_multilingual_vectors_is_reindexed_from_sqlite(app, tmp_path):
    """A data dir from before the multilingual vectors: its messages collection is rebuilt on open from
    the messages in SQLite (nothing lost), and then links across languages."""
    c = app.corroborator
    name = "messages_upgrade"
    old = Corroborator(c.store, MessageVectors(app.vectors, name), app.embedder)
    await old.open()
    ru, en, asker = await tracked(app, 3)
    await old.ingest(msg(ru, RECALL_RU[0], NOW - timedelta(hours=3)))
    await old.ingest(msg(en, METRO[0], NOW - timedelta(hours=2)))
    kept = await old.vectors.count()
    assert kept >= 2

    new = Corroborator(c.store, MessageVectors(app.vectors, name, multi_dim=c.multilingual.dim), app.embedder,
                       multilingual=c.multilingual)
    await new.open()
    assert await new.vectors.count() >= kept
    found = await new.lookup(RECALL[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert found is not None and ru in {i.chat_id for i in found.items}


async def test_stories_across_languages_can_be_turned_off_and_on_again(app):
    """TIPLINE_STORIES_ACROSS_LANGUAGES=false on a data dir that had it on: the collection keeps its
    multilingual vectors, new messages are stored without one and link by the English model; turned on
    again, the collection is filled again from SQLite and links across languages."""
    c = app.corroborator
    name = "messages_toggle"
    on = Corroborator(c.store, MessageVectors(app.vectors, name, multi_dim=c.multilingual.dim), app.embedder,
                      multilingual=c.multilingual)
    await on.open()
    ru, en, en2, asker = await tracked(app, 4)
    await on.ingest(msg(ru, RECALL_RU[0], NOW - timedelta(hours=3)))
    off = Corroborator(c.store, MessageVectors(app.vectors, name), app.embedder)
    await off.open()
    ferry = ("Volcanic ash closes Keflavik airport, every flight to Oslo and Copenhagen cancelled",
             "Keflavik airport shut by volcanic ash: Oslo and Copenhagen flights cancelled")
    await off.ingest(msg(en, ferry[0], NOW - timedelta(hours=2)))
    await off.ingest(msg(en2, ferry[1], NOW - timedelta(hours=1)))
    english = await off.lookup(ferry[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert english is not None and {i.chat_id for i in english.items} == {en, en2}
    again = Corroborator(c.store, MessageVectors(app.vectors, name, multi_dim=c.multilingual.dim), app.embedder,
                         multilingual=c.multilingual)
    await again.open()
    found = await again.lookup(RECALL[1], exclude_chats=[("telegram", asker)], at=NOW)
    assert found is not None and ru in {i.chat_id for i in found.items}
    # The English messages stored while it was off were given their multilingual vector and token states on open.
    keys = [m.id for m in await c.store.since((NOW - timedelta(hours=4)).timestamp()) if m.chat_id in (en, en2)]
    assert len(keys) == 2 and all(m.has_multi and m.states and m.numbers == frozenset()
                                  for m in (await again.vectors.scoring_data(keys)).values())
