"""Vectors of evaluation data kept between runs, for the untimed parts of `tipline bench report`.

Why: on 2 idle cores the report took 31.4 min, 6.2 of them embedding the same 10,375 CLEF claims with both
models (27.8 claims/s) before any figure is measured, and more re-embedding Tatoeba, CLIMATE-FEVER and the
stored tweets of `bench corroborate` - the same texts, the same models, every run. Only what is not
timed comes from here: every timed path (match latency, ingest, lookups, cold checks) embeds texts its
model has not seen, with the models' own caches cleared.

A vector set is keyed by a label, the model's identity and every text. The identity is the model's name
plus a digest of its vector for a fixed probe sentence (rounded to 3 decimals), so vectors of a changed
model (new weights, other quantisation, a remote server) are never reused: that run computes them again.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np

from core.matching.knowledge_base import FactCheckVectors, KnowledgeBase
from core.encoders.token_align import PROJECTION_DIM
from core.matching.features import doc_text
from evals.noted_encoders import Notes, noted_kb
from schema.models import FactCheck

_PROBE = "tipline vector cache probe: the moon landing was filmed in a studio"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tipline" / "eval-vectors"


def model_identity(name: str, probe_vector: np.ndarray) -> str:
    digest = hashlib.sha256(np.round(np.asarray(probe_vector, dtype=np.float32), 3).tobytes()).hexdigest()
    return f"{name}#{digest[:16]}"


class VectorCache:
    """`directory=None` turns it off (every set is computed): the quick report and the tests use that."""

    def __init__(self, directory: Path | None):
        self.directory = directory
        self.hits: list[str] = []
        self.misses: list[str] = []

    def _path(self, label: str, models: Sequence[str], texts: Sequence[str]) -> Path | None:
        if self.directory is None:
            return None
        h = hashlib.sha256()
        for part in (label, *models, str(len(texts)), *texts):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return self.directory / f"{label}-{h.hexdigest()[:24]}.npz"

    def _load(self, path: Path | None, label: str, rows: int | None) -> dict[str, np.ndarray] | None:
        if path is None or not path.is_file():
            return None
        try:
            with np.load(path) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, zipfile.BadZipFile):  # a torn or foreign file: compute again
            return None
        # "states" holds token states of every row end to end (their counts in "state_lens").
        if rows is not None and any(a.shape[0] != rows for k, a in arrays.items() if k != "states"):
            return None
        self.hits.append(label)
        return arrays

    def _save(self, path: Path | None, label: str, arrays: dict[str, np.ndarray]) -> None:
        self.misses.append(label)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part.npz")
        np.savez(tmp, **arrays)  # type: ignore[arg-type]  # the stub reads **arrays as allow_pickle
        os.replace(tmp, path)  # never a half-written set under the real name

    def vectors_sync(self, label: str, model: str, texts: Sequence[str],
                     compute: Callable[[], np.ndarray]) -> np.ndarray:
        path = self._path(label, [model], texts)
        found = self._load(path, label, len(texts))
        if found is not None:
            return found["v"]
        v = np.asarray(compute(), dtype=np.float32)
        self._save(path, label, {"v": v})
        return v

    async def vectors(self, label: str, model: str, texts: Sequence[str],
                      compute: Callable[[], Awaitable[np.ndarray]]) -> np.ndarray:
        path = self._path(label, [model], texts)
        found = self._load(path, label, len(texts))
        if found is not None:
            return found["v"]
        v = np.asarray(await compute(), dtype=np.float32)
        self._save(path, label, {"v": v})
        return v

    def kept(self, label: str, models: Sequence[str], texts: Sequence[str]) -> dict[str, np.ndarray] | None:
        """Arrays of any shape kept by `keep` for these models and texts (None: none kept)."""
        return self._load(self._path(label, models, texts), label, None)

    def keep(self, label: str, models: Sequence[str], texts: Sequence[str], arrays: dict[str, np.ndarray]) -> None:
        self._save(self._path(label, models, texts), label, arrays)

    async def factchecks(self, kb: KnowledgeBase, fcs: Sequence[FactCheck], label: str = "factchecks") \
            -> tuple[FactCheckVectors, bool]:
        """The vectors `kb.add` stores for `fcs`, and whether all came from the cache. Each model's are kept
        apart, so a changed model re-embeds its own only: kept as one set, a new USE made the report
        re-embed the 10,375 claims with all three models (415 s at 25 claims/s on 2 cores)."""
        # e5's entry is named by its token states' model (the encoder's name and the projection's digest):
        # the vectors and the states are kept together.
        ids = {"english": model_identity(kb.embedder.model_name, (await kb.embedder.embed([_PROBE]))[0]),
               "multi": model_identity(kb.multilingual.states_model, (await kb.multilingual.passages([_PROBE]))[0]),
               "use": model_identity(kb.use.model_name, (await kb.use.encode([_PROBE]))[0])}
        texts = [f"{fc.id}\x1f{fc.claim}\x1f{fc.title}" for fc in fcs]
        paths = {m: self._path(f"{label}-{m}", [ids[m]], texts) for m in ids}
        parts = {m: self._load(paths[m], f"{label}-{m}", len(fcs)) for m in ids}
        english, multi, use = parts["english"], parts["multi"], parts["use"]
        if english is not None and multi is not None and use is not None and "state_lens" in multi:
            states = np.split(multi["states"], np.cumsum(multi["state_lens"])[:-1]) if len(fcs) else []
            return FactCheckVectors(english["claim"], english["title"], multi["multi"], use["use"], states), True
        # The missing models' vectors through kb.embed itself (its texts, its batching), the kept ones
        # answered from notes of what they embedded.
        notes = Notes()
        docs = [doc_text(fc.claim, fc.title) for fc in fcs]
        if english is not None:
            notes.note("english", [fc.claim for fc in fcs], english["claim"])
            titled = [i for i, fc in enumerate(fcs) if fc.title]
            notes.note("english", [fcs[i].title for i in titled], english["title"][titled])
        if multi is not None and "state_lens" in multi:
            notes.note("multi_passages", docs, multi["multi"])
            notes.states["multi_passage_states"].update(
                zip(docs, np.split(multi["states"], np.cumsum(multi["state_lens"])[:-1]) if len(docs) else []))
        if use is not None:
            notes.note("use", docs, use["use"])
        v = await noted_kb(kb, notes).embed(fcs)
        packed = np.concatenate(v.states) if v.states else np.zeros((0, PROJECTION_DIM), np.float16)
        fresh: dict[str, dict[str, np.ndarray]] = {
            "english": {"claim": v.claim, "title": v.title},
            "multi": {"multi": v.multi, "states": packed, "state_lens": np.array([len(m) for m in v.states], np.int64)},
            "use": {"use": v.use}}
        for m, arrays in fresh.items():
            if parts[m] is None:
                self._save(paths[m], f"{label}-{m}", arrays)
        return v, False


async def identity_of_embedder(embed: Callable[[list[str]], Awaitable[np.ndarray]], name: str) -> str:
    return model_identity(name, (await embed([_PROBE]))[0])


def identity_of_embedder_sync(embed: Callable[[list[str]], np.ndarray], name: str) -> str:
    return model_identity(name, embed([_PROBE])[0])
