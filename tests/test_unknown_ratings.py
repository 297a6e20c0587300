"""A rating tipline cannot read ("Banana") is reported with its position and stored unrated: no verdict is
inherited from it and its words never reach a card (it used to come back as `Unverified … rated "Banana"`).
Known ratings in any of the supported languages keep their verdicts and their words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from adapters.terminal_card import render_card
from bot.check_service import CheckService
from bot.ingest_files import ingest_source
from bot.render import to_reply
from core.ingest import parse_bytes
from schema.models import Verdict
from tests.conftest import SeededDataDir, model_cache

ROOT = Path(__file__).resolve().parent.parent
BANANA_CLAIM = "Eating three bananas at midnight turns your hair bright green within a week"
# Line 7 is the Banana row (the header is line 1).
SHEET = (
    "claim,url,rating,publisher\n"
    "Pants claim: the moon is made of cheese,https://fc.example/cheese,Pants on Fire,FC\n"
    "Russian claim: vaccines contain microchips,https://fc.example/chips,Ложь,FC\n"
    "Context claim: a photo of a flooded airport,https://fc.example/airport,Missing context,FC\n"
    "Fake claim: the president resigned yesterday,https://fc.example/resigned,Фейк,FC\n"
    ",https://fc.example/empty,False,FC\n"
    f"{BANANA_CLAIM},https://fc.example/bananas,Banana,FC\n"
)
BANANA_NOTE = "line 7: unknown rating 'Banana', stored as unrated"


def test_an_unknown_rating_is_reported_with_its_line_and_stored_unrated() -> None:
    rows = parse_bytes("sheet.csv", SHEET.encode())
    stored = {r.line: r.factcheck for r in rows if r.factcheck is not None}
    assert [(r.line, r.warning) for r in rows if r.warning] == [(7, BANANA_NOTE)]
    assert [(r.line, r.error) for r in rows if r.error] == [(6, "line 6: missing claim text")]
    banana = stored[7]
    assert banana is not None and banana.claim == BANANA_CLAIM
    assert banana.rating_text == "" and banana.verdict is Verdict.NOT_ENOUGH_EVIDENCE
    # known words keep their verdict and are stored as the fact-checker wrote them
    assert [(fc.rating_text, fc.verdict) for line, fc in sorted(stored.items()) if line != 7] == [
        ("Pants on Fire", Verdict.REFUTED), ("Ложь", Verdict.REFUTED), ("Missing context", Verdict.MISLEADING),
        ("Фейк", Verdict.REFUTED)]


def test_every_format_reports_an_unreadable_rating_and_a_number_still_decides() -> None:
    def review(rating: dict, n: int) -> dict:
        return {"@type": "ClaimReview", "url": f"https://fc.example/r{n}", "claimReviewed": f"Claim number {n}",
                "author": {"name": "FC"}, "reviewRating": {"@type": "Rating", **rating}}

    reviews = [review({"alternateName": "Banana"}, 1),
               review({"alternateName": "Banana", "ratingValue": 1, "bestRating": 5, "worstRating": 1}, 2),
               review({"ratingValue": -1}, 3),  # the "not rated" placeholder some publishers write
               review({"alternateName": "Four Pinocchios"}, 4)]
    rows = parse_bytes("reviews.json", json.dumps(reviews).encode())
    assert [(r.line, r.warning) for r in rows if r.warning] == [
        (1, "ClaimReview #1: unknown rating 'Banana', stored as unrated"),
        (3, "ClaimReview #3: rating value '-1' is not on its scale, stored as unrated")]
    fcs = [r.factcheck for r in rows]
    assert all(fc is not None for fc in fcs)
    assert [(fc.rating_text, fc.verdict) for fc in fcs if fc is not None] == [
        ("", Verdict.NOT_ENOUGH_EVIDENCE),
        ("Banana", Verdict.REFUTED),  # its number, 1 of 5, is the verdict; the words are the publisher's label
        ("", Verdict.NOT_ENOUGH_EVIDENCE),
        ("Four Pinocchios", Verdict.REFUTED)]

    api = {"claims": [{"text": "Snow is hot", "claimReview": [
        {"publisher": {"name": "A"}, "url": "https://a.example/snow", "textualRating": "Banana"},
        {"publisher": {"name": "B"}, "url": "https://b.example/snow", "textualRating": "Фейк"}]}]}
    rows = parse_bytes("api.json", json.dumps(api).encode())
    assert [r.warning for r in rows] == ["claim #1, review 1: unknown rating 'Banana', stored as unrated", None]

    jsonl = "\n".join(json.dumps({"claim": f"JSONL claim {n}", "url": f"https://fc.example/j{n}", "rating": r})
                      for n, r in enumerate(("False", "Totally bananas " * 10)))
    rows = parse_bytes("rows.jsonl", jsonl.encode())
    assert rows[0].warning is None and rows[0].factcheck is not None and rows[0].factcheck.verdict is Verdict.REFUTED
    note = rows[1].warning
    assert note is not None and note.startswith("line 2: unknown rating 'Totally bananas Totally")
    assert note.endswith("…', stored as unrated") and len(note) < 120  # a pasted paragraph is clipped


async def test_the_report_counts_them_and_no_card_shows_the_unknown_words(app, tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(SHEET, encoding="utf-8")
    warned: list[str] = []
    report = await ingest_source(app.kb, str(path), on_row_warning=warned.append)
    assert (report.added, report.skipped, report.unrated) == (5, 1, 1)
    assert warned == report.warnings == [f"{path}:7: {BANANA_NOTE}"]
    assert report.summary() == "5 new, 0 updated, 1 skipped (1 missing claim text); 1 stored unrated (rating not understood)"
    assert report.to_json()["warnings"] == warned and report.to_json()["unrated"] == 1
    [stored] = await app.db.factchecks_by_urls(["https://fc.example/bananas"])
    assert (stored.rating_text, stored.verdict) == ("", Verdict.NOT_ENOUGH_EVIDENCE)

    result = await CheckService(app.engine).check(BANANA_CLAIM)
    assert result.matches and result.matches[0].url == "https://fc.example/bananas"  # found, as a fact-check
    assert result.verdict is Verdict.NOT_ENOUGH_EVIDENCE  # and no verdict is made of it
    card = render_card(to_reply(result))
    assert "Banana" not in card and "Banana" not in result.model_dump_json()


def test_tipline_ingest_prints_the_note_and_the_count(tmp_path: Path, model_dir: Path, seeded: SeededDataDir) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text(SHEET, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env |= {"TIPLINE_DATA_DIR": str(seeded.copy_to(tmp_path / "data")), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
            "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir)), "TIPLINE_GDELT_URL": "", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "ingest", str(path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"  note {path}:7: {BANANA_NOTE}" in proc.stderr.splitlines()
    assert f"  skipped {path}:6: line 6: missing claim text" in proc.stderr.splitlines()
    assert (f"{path}: 5 new, 0 updated, 1 skipped (1 missing claim text); 1 stored unrated (rating not "
            "understood)") in proc.stdout.splitlines()


async def test_a_feed_refresh_counts_and_logs_them(app, tmp_path: Path, caplog) -> None:
    from bot.feeds import FeedRefresher

    path = tmp_path / "feed.csv"  # a feed may be any format `tipline ingest` reads
    path.write_text(SHEET, encoding="utf-8")
    with caplog.at_level("INFO", logger="bot.feeds"):
        report = await FeedRefresher(app.kb, [str(path)]).refresh_once()
    assert (report.fetched, report.bad_rows, report.unrated) == (5, 1, 1)
    assert f"feed {path}: 1 item(s) stored unrated, e.g. {BANANA_NOTE}" in caplog.messages
    assert any(m.endswith("; 1 stored unrated (rating not understood)") for m in caplog.messages)
