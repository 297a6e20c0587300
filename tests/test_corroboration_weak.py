"""Weak same-story links (core.corroboration.story_model.WEAK_THRESHOLD): a message that links to nothing at the
threshold joins its best candidate in the weak band only when that candidate is alone in its story
within the window; the live Corroborator makes the same decisions as the evaluated StoryDetector."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from bot.app import build_app
from core.corroboration.story_model import BIAS, THRESHOLD, WEAK_THRESHOLD, WEIGHTS, StoryModel
from evals.story_detector import StoryDetector
from core.corroboration.corroborator import TrackedMessage
from tests.conftest import isolated_settings
from tests.story_support import detector_partition, live_partition

T0 = datetime(2022, 3, 1)
# Texts with no word or name in common, so a pair's score is the cosine term alone.
TEXTS = ["alpha bravo charlie", "delta echo foxtrot", "golf hotel india", "juliet kilo lima", "mike november oscar"]


def _cos_for(p: float) -> float:
    """The cosine at which a pair with no shared terms or entities scores p."""
    return (np.log(p / (1 - p)) - BIAS) / WEIGHTS[0]


def _unit(*parts: tuple[int, float], dim: int = 8) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    for k, x in parts:
        v[k] = x
    return v / np.linalg.norm(v)


def _near(base: int, other: int, cos: float) -> np.ndarray:
    """A unit vector at `cos` to axis `base`, the rest along axis `other`."""
    return _unit((base, cos), (other, float(np.sqrt(1 - cos * cos))))


WEAK_COS = _cos_for((WEAK_THRESHOLD + THRESHOLD) / 2)  # inside the weak band
STRONG_COS = _cos_for(0.9)  # a cosine alone tops out at 0.94 (cos 1, nothing shared)


def test_the_band_is_where_the_constants_say() -> None:
    m = StoryModel()
    feats = np.array([[WEAK_COS, 0.0, 0.0, 0.0], [_cos_for(WEAK_THRESHOLD) - 0.01, 0.0, 0.0, 0.0]])
    weak, below = m.score(feats)
    assert WEAK_THRESHOLD <= weak < THRESHOLD and below < WEAK_THRESHOLD


def test_two_lone_messages_link_weakly_but_fitted_models_do_not() -> None:
    a, b = _unit((0, 1.0)), _near(0, 1, WEAK_COS)
    d = StoryDetector(dim=8)
    d.add("a", "@one", T0, TEXTS[0], a)
    assert d.add("b", "@two", T0 + timedelta(hours=1), TEXTS[1], b) == "a"
    plain = StoryDetector(model=StoryModel(weak_threshold=None), dim=8)
    plain.add("a", "@one", T0, TEXTS[0], a)
    assert plain.add("b", "@two", T0 + timedelta(hours=1), TEXTS[1], b) == "b"


def test_no_weak_link_into_a_grown_story_or_beside_a_strong_link() -> None:
    d = StoryDetector(dim=8)
    d.add("a", "@one", T0, TEXTS[0], _unit((0, 1.0)))
    d.add("a2", "@two", T0, TEXTS[1], _near(0, 2, STRONG_COS))  # a's story now has two messages
    # close to a only weakly (and to a2 below the band): a is not alone in its story, so no link
    assert d.add("b", "@three", T0 + timedelta(hours=1), TEXTS[2], _near(0, 1, WEAK_COS)) == "b"
    # strongly linked to b (same words) and weakly to a lone message e: joins b only
    d.add("e", "@four", T0, TEXTS[3], _unit((5, 1.0)))
    v_b = d._vecs[d._index["b"]]
    c = 0.5 * v_b + WEAK_COS * _unit((5, 1.0)) + np.sqrt(1 - 0.25 - WEAK_COS ** 2) * _unit((6, 1.0))
    assert d.add("c", "@five", T0 + timedelta(hours=2), TEXTS[2], c.astype(np.float32)) == "b"
    assert d.cluster_of("e") == "e"


def test_a_story_mate_outside_the_window_leaves_the_message_alone() -> None:
    d = StoryDetector(dim=8, window_days=7)
    d.add("old", "@two", T0, TEXTS[1], _near(0, 2, STRONG_COS))
    d.add("a", "@one", T0 + timedelta(days=6), TEXTS[0], _unit((0, 1.0)))  # joins old (6 days apart)
    assert d.cluster_of("a") == "old"
    # 10 days after old, 4 after a: old is outside b's window, so a is alone there and b links weakly
    assert d.add("b", "@three", T0 + timedelta(days=10), TEXTS[2], _near(0, 1, WEAK_COS)) == "old"


# --- the live path makes the same decisions ---------------------------------------------------------

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
NOW = datetime.now(UTC).replace(microsecond=0)
_ids = itertools.count(1)
# A stream with a weak link in it (checked below: without weak links its stories differ).
STREAM = [
    ("Grain ship hit by a drone in the port of Odesa overnight, crew evacuated", 0),
    ("Loud blasts heard over the Ukrainian capital at dawn", 1),
    ("Drone struck a grain ship in Odessa port overnight; the crew was evacuated", 2),
    ("Recipe of the day: how to bake sourdough bread at home with only flour and water", 3),
    ("Explosions thundered over the capital in the early hours", 4),  # weakly like the blasts at dawn (0.36)
]


@pytest_asyncio.fixture(loop_scope="function")
async def app(tmp_path: Path, model_dir: Path):
    async with build_app(isolated_settings(tmp_path / "data", model_dir), seed=False) as a:
        yield a


@pytest.mark.asyncio(loop_scope="function")
async def test_live_stories_equal_the_detector_with_weak_links(app) -> None:
    chats = [f"-100{900 + k}" for k in range(len(STREAM))]
    msgs = [TrackedMessage("telegram", chats[k], str(n), text, NOW - timedelta(minutes=60 - 5 * n))
            for n, (text, k) in enumerate(STREAM)]
    live = await live_partition(app, msgs)
    with_weak = detector_partition(app, msgs, StoryModel())
    assert with_weak != detector_partition(app, msgs, StoryModel(weak_threshold=None))  # a weak link happens
    assert live == with_weak
