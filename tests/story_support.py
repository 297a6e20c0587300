"""The live Corroborator against the evaluated StoryDetector: one stream ingested live, the same stream
replayed through the detector under a model, both compared as partitions (story ids differ)."""

from __future__ import annotations

from collections.abc import Sequence

from core.corroboration.story_model import StoryModel, prepare_text
from evals.story_detector import StoryDetector
from core.corroboration.corroborator import TrackedMessage


def partition(labels: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for m, s in labels.items():
        groups.setdefault(s, set()).add(m)
    return {frozenset(g) for g in groups.values()}


async def live_partition(app, msgs: Sequence[TrackedMessage]) -> set[frozenset[str]]:
    """Track every chat of `msgs`, ingest them in order, and read back the stories the store holds."""
    c = app.corroborator
    for cid in dict.fromkeys(m.chat_id for m in msgs):
        await c.store.set_flag("telegram", cid, "tracking", True, by=1, kind="channel", handle=f"@c{cid}")
    for m in msgs:
        await c.ingest(m)
    return partition({k: v.story for k, v in (await c.vectors.scoring_data([m.key for m in msgs])).items()})


def detector_partition(app, msgs: Sequence[TrackedMessage], model: StoryModel) -> set[frozenset[str]]:
    """The same stream through `StoryDetector` with `model`, on the app's embedder."""
    clean = [prepare_text(m.text) for m in msgs]
    vecs = app.embedder.embed_sync(clean)
    d = StoryDetector(model=model, dim=vecs.shape[1])
    for m, text, v in zip(msgs, clean, vecs):
        d.add(m.key, m.chat, m.at, text, v)
    return partition(d.clusters())
