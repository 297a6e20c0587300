"""Strict same-story links (core.corroboration.story_model.STRICT_THRESHOLD): a pair the window or the other-account
rule leaves out (one account posting the story again, the story coming back after the window) links only
at the strict threshold; the live Corroborator makes the same decisions as the evaluated StoryDetector."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from bot.app import build_app
from core.corroboration.story_model import BIAS, STRICT_THRESHOLD, THRESHOLD, WEIGHTS, StoryModel
from evals.story_detector import StoryDetector
from core.corroboration.corroborator import TrackedMessage
from tests.conftest import isolated_settings
from tests.story_support import detector_partition, live_partition

T0 = datetime(2022, 3, 1)
# No word or name in common, so a pair's score is the cosine term alone.
TEXTS = ["alpha bravo charlie", "delta echo foxtrot", "golf hotel india"]


def _cos_for(p: float) -> float:
    """The cosine at which a pair with no shared terms or entities scores p."""
    return float((np.log(p / (1 - p)) - BIAS) / WEIGHTS[0])


def _pair(cos: float) -> tuple[np.ndarray, np.ndarray]:
    a = np.zeros(8, dtype=np.float32)
    a[0] = 1.0
    b = np.zeros(8, dtype=np.float32)
    b[0], b[1] = cos, np.sqrt(1 - cos * cos)
    return a, b


BETWEEN = _cos_for((THRESHOLD + STRICT_THRESHOLD) / 2)  # links inside, not outside
ABOVE = _cos_for((STRICT_THRESHOLD + 0.94) / 2)  # a cosine alone tops out at 0.94


def test_the_constants_leave_a_band_between_the_thresholds() -> None:
    m = StoryModel()
    assert THRESHOLD < m.score(np.array([[BETWEEN, 0, 0, 0]]))[0] < STRICT_THRESHOLD
    assert m.score(np.array([[ABOVE, 0, 0, 0]]))[0] > STRICT_THRESHOLD


@pytest.mark.parametrize("account, days", [("@one", 1), ("@two", 30)])
def test_outside_pairs_link_only_at_the_strict_threshold(account: str, days: int) -> None:
    """One account again a day later, or another account a month later."""
    for cos, linked in ((BETWEEN, False), (ABOVE, True)):
        a, b = _pair(cos)
        d = StoryDetector(dim=8)
        d.add("a", "@one", T0, TEXTS[0], a)
        assert (d.add("b", account, T0 + timedelta(days=days), TEXTS[1], b) == "a") is linked
    # the same band inside the window, another account: linked at the plain threshold
    a, b = _pair(BETWEEN)
    d = StoryDetector(dim=8)
    d.add("a", "@one", T0, TEXTS[0], a)
    assert d.add("b", "@two", T0 + timedelta(days=1), TEXTS[1], b) == "a"


def test_no_strict_threshold_no_outside_links() -> None:
    a, b = _pair(0.999)
    d = StoryDetector(model=StoryModel(strict_threshold=None), dim=8)
    d.add("a", "@one", T0, TEXTS[0], a)
    assert d.add("b", "@one", T0 + timedelta(hours=1), TEXTS[0], b) == "b"


def test_outside_pairs_never_link_weakly() -> None:
    """A lone message a month old in the weak band is not a weak link (weak links are inside only)."""
    weak = StoryModel().weak_threshold
    assert weak is not None
    a, b = _pair(_cos_for((weak + THRESHOLD) / 2))
    d = StoryDetector(dim=8)
    d.add("a", "@one", T0, TEXTS[0], a)
    assert d.add("b", "@two", T0 + timedelta(days=30), TEXTS[1], b) == "b"
    d2 = StoryDetector(dim=8)
    d2.add("a", "@one", T0, TEXTS[0], a)
    assert d2.add("b", "@two", T0 + timedelta(days=1), TEXTS[1], b) == "a"  # inside: it is a weak link


def test_record_pairs_keeps_the_fitted_pairs_only() -> None:
    """The models are fitted on other accounts' pairs within the window: strict candidates are scored
    but not recorded, so a refit sees the pairs it saw before."""
    a, b = _pair(ABOVE)
    d = StoryDetector(dim=8, record_pairs=True)
    d.add("a", "@one", T0, TEXTS[0], a)
    d.add("b", "@one", T0 + timedelta(hours=1), TEXTS[1], b)
    assert d.cluster_of("b") == "a" and d.pairs == []


# --- the live path makes the same decisions ---------------------------------------------------------

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
NOW = datetime.now(UTC).replace(microsecond=0)
_ids = itertools.count(1)
# (text, chat, days ago): one channel posting its story twice, a story back after 12 days, and a
# paraphrase inside the window in another chat.
STREAM = [
    ("Grain ship hit by a drone in the port of Odesa overnight, crew evacuated", 0, 14.0),
    ("Recipe of the day: how to bake sourdough bread at home with only flour and water", 1, 13.0),
    ("Grain ship hit by a drone in the port of Odesa overnight, crew evacuated", 2, 2.0),
    ("Recipe of the day: how to bake sourdough bread at home with only flour and water", 1, 1.0),
    ("Drone struck a grain ship in Odessa port overnight; the crew was evacuated", 3, 0.5),
]


@pytest_asyncio.fixture(loop_scope="function")
async def app(tmp_path: Path, model_dir: Path):
    async with build_app(isolated_settings(tmp_path / "data", model_dir), seed=False) as a:
        yield a


@pytest.mark.asyncio(loop_scope="function")
async def test_live_stories_equal_the_detector_with_strict_links(app) -> None:
    chats = [f"-100{800 + k}" for k in range(4)]
    msgs = [TrackedMessage("telegram", chats[k], str(next(_ids)), text, NOW - timedelta(days=ago))
            for text, k, ago in STREAM]
    live = await live_partition(app, msgs)
    strict = detector_partition(app, msgs, StoryModel())
    keys = [m.key for m in msgs]
    # the ship story of two weeks ago and its return are one story; so are the channel's two recipes
    assert strict == {frozenset({keys[0], keys[2], keys[4]}), frozenset({keys[1], keys[3]})}
    assert detector_partition(app, msgs, StoryModel(strict_threshold=None)) != strict
    assert live == strict
