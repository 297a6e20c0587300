"""The fact-check knowledge base: one place that writes fact-checks to Qdrant and SQLite together.

Vectors first, then metadata in one SQLite transaction: Qdrant upserts are idempotent (stable ids), so
a crash between the two leaves nothing that a re-run does not fix, and a parse error earlier leaves
nothing at all (files are parsed whole before any write).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from core.encoders.text_embedder import TextEmbedder
from core.matching.features import CorpusStats, doc_text
from core.encoders.multilingual import MultilingualEncoder
from core.encoders.token_align import PROJECTION_DIM
from core.encoders.use_encoder import FeatureEncoder
from schema.models import FactCheck
from core.ingest.ratings import normalize_rating
from core.encoders.sparse import SPARSE_VERSION, document_vector
from core.textclean import clean_query
from storage.sqlite import Database
from storage.vectors import FactCheckPoint, VectorStore

SEED_FILE = Path(__file__).parents[1] / "data" / "seed_factchecks.jsonl"
_STATS_KEY = "corpus_stats:{collection}"
_SEED_KEY = "seed_loaded:{collection}"
_SPARSE_KEY = "sparse_version:{collection}"
_DOC_NORM_KEY = "doc_norms_stored:{collection}"
# Which models embedded the collection. Dimensions alone do not tell two models apart: pointing
# TIPLINE_EMBED_URL at another 384-d model kept the old vectors, and every search compared vectors of two
# different spaces. Model names are what the settings choose, so a change shows here.
_MODELS_KEY = "embedding_models:{collection}"

Progress = Callable[[int, int], None]
T = TypeVar("T")
log = logging.getLogger(__name__)


def payload_of(fc: FactCheck) -> dict:
    return {
        "claim": fc.claim, "title": fc.title, "url": fc.url, "publisher": fc.publisher,
        "published_at": fc.published_at.isoformat() if fc.published_at else None,
        "rating_text": fc.rating_text, "verdict": fc.verdict.value, "language": fc.language,
    }


def load_seed_factchecks(path: Path = SEED_FILE) -> list[FactCheck]:
    """The bundled seed: our own wording of well-known fact-checks, rating words normalised here."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            fc = FactCheck(**json.loads(line))
            out.append(fc.model_copy(update={"verdict": normalize_rating(fc.rating_text)}))
    return out


@dataclass(frozen=True)
class FactCheckVectors:
    """The four vectors a fact-check is stored with, one row per fact-check: the English model's claim
    and headline vectors (the claim's stands in when there is no headline, so title similarity never
    rewards an empty field), the multilingual model's passage vector of claim + headline and the second
    multilingual model's (USE, re-ranker features only) of the same text; with the multilingual model's
    token states of that text (core/encoders/token_align.py) and its query vector and token states of the claim
    alone, kept in SQLite (None: computed when stored)."""

    claim: np.ndarray
    title: np.ndarray
    multi: np.ndarray
    use: np.ndarray
    states: list[np.ndarray]
    claim_query: np.ndarray | None = None
    claim_states: list[np.ndarray] | None = None

    def rows(self, start: int, stop: int) -> FactCheckVectors:
        return FactCheckVectors(self.claim[start:stop], self.title[start:stop], self.multi[start:stop],
                                self.use[start:stop], self.states[start:stop],
                                None if self.claim_query is None else self.claim_query[start:stop],
                                None if self.claim_states is None else self.claim_states[start:stop])


class KnowledgeBase:
    def __init__(self, db: Database, vectors: VectorStore, embedder: TextEmbedder, collection: str,
                 multilingual: MultilingualEncoder, use: FeatureEncoder):
        self.db = db
        self.vectors = vectors
        self.embedder = embedder
        self.multilingual = multilingual
        self.use = use
        self.collection = collection
        self.stats = CorpusStats()
        self._write_lock = asyncio.Lock()

    async def open(self, progress: Progress | None = None) -> None:
        """Open the collection; a collection written by an earlier version (without the multilingual
        vectors, or by other models) is re-embedded first, aside, with `progress` reports."""
        await self.vectors.ensure_factchecks(self.collection)
        raw = await self.db.get_kv(_STATS_KEY.format(collection=self.collection))
        if raw:
            self.stats = CorpusStats.from_json(raw)
        models_key, models = _MODELS_KEY.format(collection=self.collection), self.models()
        stored = await self.db.get_kv(models_key)
        # No record (a data dir from before this check): the dimensions matched, so the vectors stay.
        if not await self.vectors.factchecks_current(self.collection) or (stored is not None and stored != models):
            if stored is not None and stored != models:
                log.warning("the embedding models changed (%s -> %s)", stored, models)
            await self.reembed(progress)
            await self.db.set_kv(_SPARSE_KEY.format(collection=self.collection), SPARSE_VERSION)
        if stored != models:
            await self.db.set_kv(models_key, models)
        key = _SPARSE_KEY.format(collection=self.collection)
        if await self.db.get_kv(key) != SPARSE_VERSION:
            await self._reindex()
            await self.db.set_kv(key, SPARSE_VERSION)
        key = _DOC_NORM_KEY.format(collection=self.collection)
        if await self.db.get_kv(key) != "1":
            # Once per collection written before |claim + title| was stored with each fact-check (a
            # candidate lacking it has its claim and title vectors read back at every match): 23 s for
            # 100,000 fact-checks, loaded machine.
            if await self.count():
                log.warning("storing |claim + title| with each fact-check of this data dir (once, for an "
                            "earlier version's fact-checks)")
                async with self._write_lock:
                    n = await self.vectors.fill_doc_norms(self.collection)
                log.warning("stored |claim + title| for %d fact-checks", n)
            await self.db.set_kv(key, "1")

    def models(self) -> str:
        """The models this knowledge base embeds with, as recorded beside the collection."""
        return json.dumps({"english": self.embedder.model_name, "multilingual": self.multilingual.model_name,
                           "use": self.use.model_name, "states": self.multilingual.states_model}, sort_keys=True)

    async def reembed(self, progress: Progress | None = None) -> int:
        """Embed every fact-check in SQLite (the system of record) again with today's models into a
        new collection, then swap it in behind the collection's alias. Until the swap, searches and the
        term statistics stay the old collection's; an exception part-way deletes the half-built one and a
        killed process leaves it unreferenced (dropped on the next start), so nothing is lost and
        nothing half-written is used."""
        async with self._write_lock:
            await self.vectors.drop_orphans(self.collection)
            factchecks = await self.db.all_factchecks()
            log.warning("re-embedding %d fact-checks for the current embedding models", len(factchecks))
            fresh = CorpusStats()
            await self._build_aside(lambda target: self._add(factchecks, target, stats=fresh, progress=progress,
                                                             rebuild=True, batch=32, write_db=False))
            self.stats = fresh
            await self.db.set_kv(_STATS_KEY.format(collection=self.collection), fresh.to_json())
            return len(factchecks)

    async def _build_aside(self, fill: Callable[[str], Awaitable[T]]) -> T:
        """`fill` a new collection, then swap it in behind the collection's alias: searches never see a
        half-built index. On an exception the new collection is deleted. The caller holds _write_lock."""
        target = f"{self.collection}__{time.strftime('%Y%m%d%H%M%S')}_{uuid.uuid4().hex[:6]}"
        await self.vectors.ensure_factchecks(target)
        try:
            result = await fill(target)
        except BaseException:
            await self.vectors.delete_collection(target)
            raise
        await self.vectors.swap_alias(self.collection, target)
        return result

    async def _reindex(self) -> None:
        """Rebuild vectors and term statistics from the fact-checks in SQLite, after an upgrade that
        changed tokenisation (a no-op on a new data dir)."""
        factchecks = await self.db.all_factchecks()
        if not factchecks:
            return
        log.warning("re-indexing %d fact-checks for the new term index (version %s)", len(factchecks),
                    SPARSE_VERSION)
        self.stats = CorpusStats()
        await self.add(factchecks, rebuild=True)

    async def count(self) -> int:
        return await self.vectors.count(self.collection)

    async def add(self, factchecks: Sequence[FactCheck], *, run_id: int | None = None,
                  progress: Progress | None = None, batch: int = 512, rebuild: bool = False,
                  vectors: FactCheckVectors | None = None) -> int:
        """Index fact-checks; returns how many were new. Re-adding the same ones updates them in place.
        `vectors`: `embed(factchecks)` computed earlier (one row per fact-check, ids unique), e.g. kept by
        `tipline bench report` between runs, so they are not embedded again."""
        async with self._write_lock:
            return await self._add(factchecks, self.collection, run_id=run_id, progress=progress, batch=batch,
                                   rebuild=rebuild, vectors=vectors)

    async def embed(self, factchecks: Sequence[FactCheck]) -> FactCheckVectors:
        """The vectors `add` stores for `factchecks`; the three models run side by side (each in its own
        threads; e5's two reads, the passages and the claims as queries, one after the other)."""
        docs = [doc_text(fc.claim, fc.title) for fc in factchecks]
        vecs, (multi, states), use, claim_query = await asyncio.gather(
            self.embedder.embed([fc.claim for fc in factchecks] + [fc.title for fc in factchecks if fc.title]),
            self.multilingual.passages_with_states(docs), self.use.encode(docs),
            self._claims_as_queries([fc.claim for fc in factchecks]))
        claim = np.asarray(vecs[:len(factchecks)])
        titles = iter(vecs[len(factchecks):])
        title = np.vstack([next(titles) if fc.title else cv for fc, cv in zip(factchecks, claim)]) \
            if len(factchecks) else claim
        return FactCheckVectors(claim, title, np.asarray(multi), np.asarray(use), states, np.asarray(claim_query[0]),
                                claim_query[1])

    async def token_states(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored token states (core/encoders/token_align.py) of those fact-checks of `ids` that have today's."""
        return await self.db.factcheck_states(ids, self.multilingual.states_model, PROJECTION_DIM)

    async def _claims_as_queries(self, claims: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        return await self.multilingual.queries_with_states([clean_query(c) for c in claims])

    async def _store_claim_reads(self, ids: Sequence[str], vectors: np.ndarray, states: list[np.ndarray]) -> None:
        await self.db.put_claim_queries(self.multilingual.model_name, dict(zip(ids, vectors)))
        await self.db.put_claim_states(self.multilingual.states_model, dict(zip(ids, states)))

    async def claim_reads(self, ids: Sequence[str], claims: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """These fact-checks' claims read by e5 the way a message is read ("query:"): their vectors (one row each)
        and token states. Compared with the message's, the two are weighed as paraphrases, where a query against a
        passage rewards a shared topic. Stored at ingest; what a data dir lacks is computed now and kept."""
        vectors = await self.db.claim_queries(ids, self.multilingual.model_name)
        states = await self.db.claim_states(ids, self.multilingual.states_model, PROJECTION_DIM)
        missing = {i: c for i, c in zip(ids, claims) if i not in vectors or i not in states}
        if missing:
            fresh, fresh_states = await self._claims_as_queries(list(missing.values()))
            await self._store_claim_reads(list(missing), fresh, fresh_states)
            vectors.update(zip(missing, fresh))
            states.update(zip(missing, fresh_states))
        if not ids:
            return np.zeros((0, self.multilingual.dim), dtype=np.float32), []
        return np.vstack([vectors[i] for i in ids]).astype(np.float32), [states[i] for i in ids]

    async def rebuild_with(self, factchecks: Sequence[FactCheck], *, run_id: int | None = None) -> int:
        """Add `factchecks` by building a fresh collection (old points copied, new ones embedded) and
        swapping it in behind the collection's alias: searches never see a half-built index.
        Returns how many were new."""
        async def fill(target: str) -> int:
            await self.vectors.copy_points(self.collection, target)
            return await self._add(factchecks, target, run_id=run_id)

        async with self._write_lock:
            return await self._build_aside(fill)

    async def _add(self, factchecks: Sequence[FactCheck], collection: str, *, run_id: int | None = None,
                   progress: Progress | None = None, batch: int = 512, rebuild: bool = False,
                   stats: CorpusStats | None = None, write_db: bool = True,
                   vectors: FactCheckVectors | None = None) -> int:
        """`stats`: the term statistics to update (default the live ones, which are also persisted);
        `write_db=False` when the fact-checks come from SQLite itself (a re-embedding)."""
        stats = self.stats if stats is None else stats
        unique = list({fc.id: fc for fc in factchecks}.values())
        if vectors is not None and (len(unique) != len(factchecks) or len(vectors.claim) != len(factchecks)):
            raise ValueError("precomputed vectors need one row per fact-check and unique ids")
        added = 0
        # The caller holds _write_lock.
        for start in range(0, len(unique), batch):
            chunk = unique[start:start + batch]
            # On a rebuild the statistics start empty, so nothing old is subtracted.
            existing = {} if rebuild else await self.db.get_factchecks(fc.id for fc in chunk)
            v = vectors.rows(start, start + batch) if vectors is not None else await self.embed(chunk)
            points = [FactCheckPoint(id=fc.id, claim_vector=cv, title_vector=tv,
                                     terms=document_vector(doc_text(fc.claim, fc.title)),
                                     payload=payload_of(fc), multi_vector=mv, use_vector=uv)
                      for fc, cv, tv, mv, uv in zip(chunk, v.claim, v.title, v.multi, v.use)]
            await self.vectors.upsert_factchecks(collection, points)
            await self.db.put_factcheck_states(self.multilingual.states_model,
                                               {fc.id: st for fc, st in zip(chunk, v.states)})
            queries, claim_states = (v.claim_query, v.claim_states) \
                if v.claim_query is not None and v.claim_states is not None \
                else await self._claims_as_queries([fc.claim for fc in chunk])
            await self._store_claim_reads([fc.id for fc in chunk], queries, claim_states)
            for fc in chunk:
                old = existing.get(fc.id)
                if old is not None:
                    stats.remove(old.claim, old.title)
                stats.add(fc.claim, fc.title)
            if write_db:
                added += await self.db.upsert_factchecks(chunk, run_id=run_id)
            if stats is self.stats:
                await self.db.set_kv(_STATS_KEY.format(collection=self.collection), stats.to_json())
            if progress:
                progress(min(start + batch, len(unique)), len(unique))
        return added

    async def ensure_seed(self) -> int:
        """Load the bundled seed once per collection (and again when the seed file changes)."""
        key = _SEED_KEY.format(collection=self.collection)
        digest = hashlib.sha256(SEED_FILE.read_bytes()).hexdigest()
        if await self.db.get_kv(key) == digest:
            return 0
        added = await self.add(load_seed_factchecks())
        await self.db.set_kv(key, digest)
        return added
