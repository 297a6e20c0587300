""""Also reported by": tracked messages in, same-story messages from other chats out.

`Corroborator` is the live counterpart of `evals.story_detector.StoryDetector` (the offline, evaluated
stream detector): the same features (cosine, alias-normalised entity overlap, IDF-weighted
rare-term overlap), the same fitted logistic model and threshold, the same rule (other chats only,
within the window, union-find stories), but over a store that persists (SQLite rows + Qdrant
vectors), forgets (retention, /forget) and is shared by concurrent checks.

- `ingest(message)`: for each message of a tracked chat. Messages are micro-batched (one ONNX call
  for everything that arrived meanwhile), embedded in a thread, linked to earlier same-story
  messages of other chats and stored; the story id (the first message's key) is persisted.
- `lookup(text, …)`: for a checked message: the same-story messages of *other* chats within the
  window, one entry per chat, plus where the story was first seen and an agreement tier.
- `cleanup()` / `run_retention()`: drop messages older than the retention period; `forget(chat)`.

Photos: a message may carry its photo's perceptual hash (core/corroboration/photo_hash.py; a watched channel's post,
bot/watch.py). A message whose photo is within `MATCH_DISTANCE` bits of an earlier message's of another
chat joins that message's story as a text link would, and a photo-only post (no text) is stored with its
hash alone: no embedding, no vector point, a member of its story through the in-memory photo index
(core/corroboration/photo_index.py). A lookup given a photo finds the messages carrying it the same way.

The vectors, and what the features read of each message (entities, rare terms, polarity, story), live
in the `messages` collection (storage/message_vectors.py): "the nearest messages of other chats within
the window" is one filtered query to the vector engine, "the rest of those stories" one filtered
scroll. Only the term statistics (document frequencies for the IDF weights) are kept in memory; they
and the feature loops are touched from worker threads under one lock, so the event loop never runs
them. Linking is sequential (one message's story decision sees the previous message stored).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import numpy as np

from core.corroboration.story_model import (
    ALL_FEATURES,
    DEFAULT_WINDOW_DAYS,
    ENGLISH,
    FEATURES,
    route_extra,
    StoryModel,
    route,
    route_needs,
    route_probs,
    story_models,
    weak_order,
    _alias_terms,
    common_terms,
    pair_features,
    prepare_text,
    story_entities,
    story_terms,
    transliterate,
)
from core.encoders.text_embedder import TextEmbedder
from core.intake.message import detect_language
from core.textscript import latin_script
from core.encoders.multilingual import MultilingualEncoder
from core.corroboration.photo_hash import BITS as PHOTO_BITS
from core.corroboration.photo_index import PhotoEntry, PhotoIndex
from core.corroboration.story_numbers import story_numbers
from core.encoders.token_align import pack_states, unpack_states
from schema.models import AlsoReported, ReportedBy
from storage.message_vectors import MULTI, VECTOR, MessagePoint, MessageVectors, Near, StoredMessageVector
from storage.messages import MessageStore, StoredMessage, message_key, resolve_story

log = logging.getLogger(__name__)

CANDIDATES = 64  # nearest rows (by cosine) scored with the full model per message linked at ingest
# A lookup reads and scores fewer: the matched stories' other members come in through their story anyway,
# and 16 showed the same chats as 64 (docs/decisions/2026-11-29-notes-from-code.md, "LOOKUP_CANDIDATES").
LOOKUP_CANDIDATES = 16
# A lookup scores its text on the event loop up to this length, in a worker thread beyond: the row is
# pure Python, ~1.5 ms per 1,000 characters here, so a 2,000-character text and its 16 scores (0.35 ms)
# stay below the interpreter's 5 ms switch interval, within which a worker holding the GIL stalls the
# loop just as long as running it there would.
INLINE_ROW_CHARS = 2000
TOP_ITEMS = 3  # "Also reported by: a, b, c (+N more)"
STRONG = 0.8  # a direct same-story score at or above this is "strong agreement" (tier High needs 2)
BATCH = 64  # messages per embedding call at ingest
EMBED_CACHE = 4096  # reposts of one text across channels are embedded once

# Credibility prior of a tracked chat: a channel is an outlet with an editor, a group is chatter. Admin
# per-chat ratings would replace this; until then the ordering is "channels first, then earliest".
CHANNEL_CREDIBILITY = 0.6
GROUP_CREDIBILITY = 0.5

# Polarity cue for the "sources disagree" note: a message that denies/debunks vs one that asserts.
# Crude on purpose (no stance model for chat messages yet); documented in docs/corroboration.md.
_DENIAL = re.compile(r"\b(?:not|no|never|false|fake|hoax|debunked|denie[sd]|deny|untrue|myth|rumou?r)\b"
                     r"|(?<!\w)(?:не|нет|фейк|неправда|опроверг\w*)(?!\w)", re.IGNORECASE)


def denies(text: str) -> bool:
    return bool(_DENIAL.search(text or ""))


@dataclass(frozen=True)
class TrackedMessage:
    """One message of a tracked chat, as the adapters hand it over."""

    platform: str
    chat_id: str
    message_id: str
    text: str
    at: datetime
    author: str = ""  # the chat's handle ("@news") or title shown in "Also reported by"
    permalink: str = ""
    language: str = ""
    kind: str = "group"  # "channel" | "group" (credibility prior)
    sender: str | None = None  # the author's pseudonym (storage/sqlite.py Database.pseudonym), for /forget me
    photo_hash: int | None = None  # its photo's perceptual hash (core/corroboration/photo_hash.py); the text may then be ""

    @property
    def key(self) -> str:
        return message_key(self.platform, self.chat_id, self.message_id)

    @property
    def chat(self) -> str:
        return f"{self.platform}:{self.chat_id}"


@dataclass(frozen=True)
class _Row:
    """What the features read of a message."""

    entities: frozenset[str]
    terms: frozenset[int]
    denies: bool
    latin: bool  # which same-story model judges its pairs (core.corroboration.story_model.route)
    numbers: frozenset[str] = frozenset()  # core/corroboration/story_numbers.py, read by the CROSS and NATIVE models


def _row_of(clean: str, latin: bool | None = None) -> _Row:
    """`latin`: the text's script when the caller already read it (a lookup, for its search)."""
    return _Row(story_entities(clean), story_terms(_alias_terms(transliterate(clean))), denies(clean),
                latin_script(clean) if latin is None else latin, story_numbers(clean))


def _rows_of(texts: Sequence[str]) -> list[_Row]:
    """The rows of raw message texts (CPU work: call it off the event loop); a text repeated (reposts)
    is read once."""
    rows: dict[str, _Row] = {}
    for text in texts:
        if text not in rows:
            rows[text] = _row_of(prepare_text(text))
    return [rows[text] for text in texts]


@dataclass
class _Hit:
    key: str
    chat: str
    ts: float
    score: float
    direct: bool


@dataclass
class _Prepared:
    """A batch embedded and linked in memory, waiting to be written."""

    messages: Sequence[TrackedMessage]
    keep: list[TrackedMessage]
    vecs: np.ndarray
    multi: np.ndarray | None
    states: list[str]  # each message's packed e5 token states ("" for none)
    stories: dict[str, str]
    merges: list[tuple[str, list[str]]]


def _fail(batch: list, exc: BaseException) -> None:
    for _, fut in batch:
        if not fut.done():
            fut.set_exception(exc)


@dataclass
class _Found:
    """A lookup's matches reduced to one entry per chat: (its earliest message of the story, best score)."""

    per_chat: dict[str, tuple[_Hit, float]] = field(default_factory=dict)
    strong_chats: set[str] = field(default_factory=set)
    conflict: bool = False
    agreement: float = 0.0
    direct: list[float] = field(default_factory=list)  # the direct matches' scores
    stories: dict[str, float] = field(default_factory=dict)  # the stories matched, with their best score

    def add(self, h: _Hit, score: float) -> None:
        cur = self.per_chat.get(h.chat)
        if cur is None:
            self.per_chat[h.chat] = (h, score)
        else:
            self.per_chat[h.chat] = (h if h.ts < cur[0].ts else cur[0], max(score, cur[1]))


@dataclass
class _Stats:
    ingested: int = 0
    skipped_untracked: int = 0
    links: int = 0
    photo_links: int = 0


def _secs(at: datetime) -> float:
    return at.timestamp() if at.tzinfo else at.replace(tzinfo=UTC).timestamp()


class Corroborator:
    def __init__(self, store: MessageStore, vectors: MessageVectors, embedder: TextEmbedder, *,
                 window_days: float = DEFAULT_WINDOW_DAYS, retention_days: float = 30.0,
                 model: StoryModel | None = None, clock: Callable[[], float] = time.time,
                 multilingual: MultilingualEncoder | None = None, lookup_candidates: int = LOOKUP_CANDIDATES):
        self.store = store
        self.lookup_candidates = lookup_candidates  # nearest rows a lookup reads and scores
        self.inline_row_chars = INLINE_ROW_CHARS  # a lookup scores a text up to this long on the loop
        self.vectors = vectors
        self.embedder = embedder
        # With the multilingual model, a pair with a non-Latin side (a Russian channel's post and an
        # English outlet's, two Russian posts) is found and judged on its vectors: MiniLM reads no
        # Russian. `vectors` must then have been made with its dimension (MessageVectors.multi_dim).
        self.multilingual = multilingual
        if (multilingual is None) != (not vectors.multi_dim):
            raise ValueError("the multilingual model and the collection's multilingual vectors go together")
        self.window_s = float(window_days) * 86400.0
        self.retention_s = float(retention_days) * 86400.0
        self.model = model or StoryModel()
        self.models = (self.model, *story_models()[1:])
        self.common = common_terms()  # the `shared` feature's common words, as StoryDetector's
        self.clock = clock
        # Document frequency of each rare term over the stored messages, and how many are counted: the
        # IDF of the term-overlap feature (the fitted weights assume IDF over what is stored).
        self._df: dict[int, int] = {}
        self._n = 0
        self._lock = threading.Lock()  # _df and _n; the event loop only tries it (_scores_unless_busy)
        self._linking = asyncio.Lock()  # one message linked at a time: each sees the previous one stored
        self._queue: asyncio.Queue[tuple[TrackedMessage, asyncio.Future[str | None]]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._embed_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.photos = PhotoIndex()  # the stored messages' photo hashes (loaded by `open`)
        self.stats = _Stats()

    @property
    def indexed(self) -> int:
        """Messages counted in the term statistics (= stored, once open)."""
        return self._n

    # --- lifecycle -------------------------------------------------------------------------------

    async def open(self) -> None:
        """Create the collection, reconcile it with SQLite (the system of record) and count the terms.

        Vectors without a row (a crash between the two writes) are dropped; rows without a vector (the
        other order, or an older version's write) are embedded again; points written before the story
        fields existed (a data dir moved from an older version) get them from their row."""
        if await self.vectors.ensure():
            log.warning("corroboration: the messages collection gains multilingual vectors; re-indexing")
        # A message's vectors are only comparable with vectors of the same models: another model of the
        # same dimension (TIPLINE_EMBED_URL) kept the old ones before, and every pair compared two spaces.
        # Turning the multilingual vectors off or on is not a change of model (points lacking them are
        # filled in below).
        models_key = f"embedding_models:{self.vectors.name}"
        models = {"english": self.embedder.model_name,
                  "multilingual": self.multilingual.model_name if self.multilingual is not None else None}
        raw = await self.store.db.get_kv(models_key)
        stored = json.loads(raw) if raw else {}
        was, now = stored.get("multilingual"), models["multilingual"]
        if stored and (stored.get("english") != models["english"] or (was and now and was != now)):
            log.warning("corroboration: the embedding models changed (%s -> %s); re-indexing", stored, models)
            await self.vectors.recreate()
        if stored != models:
            merged = {**models, "multilingual": models["multilingual"] or stored.get("multilingual")}
            await self.store.db.set_kv(models_key, json.dumps(merged, sort_keys=True))
        points: dict[str, StoredMessageVector] = {}
        async for batch in self.vectors.scan():
            points.update((m.key, m) for m in batch)
        rows = await self.store.since(self.clock() - self.retention_s)
        if rows or points:
            await self._reconcile(rows, points)
        counted = [m.terms for m in points.values()]
        await asyncio.to_thread(self._count_all, counted)
        await self._load_photos(rows, points)
        log.info("corroboration: %d tracked messages loaded (%d with a photo hash)", len(points), len(self.photos))

    async def _load_photos(self, rows: Sequence[StoredMessage], points: Mapping[str, StoredMessageVector]) -> None:
        """The photo index from SQLite: each photo's story as its vector point has it (relabelled on every
        merge), or for a photo-only post its stored story through the merge aliases."""
        self.photos = PhotoIndex(self.photos.max_distance)
        photos = [m for m in rows if m.photo_hash is not None]
        if not photos:
            return
        aliases = await self.store.story_aliases()
        start: dict[str, float] = {}
        for m in rows:
            s = resolve_story(aliases, m.story_id or m.id)
            start[s] = min(start.get(s, math.inf), m.ts)
        for m in photos:
            assert m.photo_hash is not None
            point = points.get(m.id)
            story = point.story if point is not None else resolve_story(aliases, m.story_id or m.id)
            first = point.story_start if point is not None else start.get(story, m.ts)
            self.photos.add(PhotoEntry(m.id, f"{m.platform}:{m.chat_id}", m.ts, story, first, m.photo_hash,
                                       has_text=bool(m.text.strip())))

    async def _reconcile(self, rows: Sequence[StoredMessage], points: dict[str, StoredMessageVector]) -> None:
        by_key = {m.id: m for m in rows}
        orphans = [k for k in points if k not in by_key]
        if orphans:
            await self.vectors.delete(orphans)
            for k in orphans:
                del points[k]
        # A point written while stories across languages were off has no multilingual vector: embedded now.
        lacking = self.multilingual is not None
        # A photo-only post has no text, so no vector point: it is in the photo index only.
        todo = [m for m in rows if m.text.strip() and (m.id not in points or not points[m.id].complete
                                                       or (lacking and not (points[m.id].has_multi
                                                                            and points[m.id].has_states)))]
        if not todo:
            return
        log.warning("corroboration: indexing %d stored messages", len(todo))
        aliases = await self.store.story_aliases()
        story = {m.id: resolve_story(aliases, m.story_id or m.id) for m in rows}
        start: dict[str, float] = {}
        for m in rows:
            start[story[m.id]] = min(start.get(story[m.id], math.inf), m.ts)
        for i in range(0, len(todo), 1024):
            chunk = todo[i:i + 1024]
            vecs = await self.vectors.vectors_of([m.id for m in chunk if m.id in points])
            missing = [m for m in chunk if VECTOR not in vecs.get(m.id, {})]
            if missing:
                emb = await self.embedder.embed([prepare_text(m.text) for m in missing])
                for m, v in zip(missing, emb):
                    vecs.setdefault(m.id, {})[VECTOR] = v
            packed: dict[str, str] = {}
            if self.multilingual is not None:
                # The token states come from the same model call as the vector, so a point lacking either
                # is embedded again (points from before the states were kept).
                emb, states = await self.multilingual.queries_with_states([prepare_text(m.text) for m in chunk])
                for m, v, st in zip(chunk, emb, states):
                    vecs.setdefault(m.id, {})[MULTI] = v
                    packed[m.id] = pack_states(st)
            rows_info = await asyncio.to_thread(_rows_of, [m.text for m in chunk])
            fresh = [MessagePoint(m.id, f"{m.platform}:{m.chat_id}", m.ts, story[m.id], start[story[m.id]],
                                  r.entities, r.terms, r.denies, latin=r.latin, vector=vecs[m.id][VECTOR],
                                  platform=m.platform, message_id=str(m.message_id), multi=vecs[m.id].get(MULTI),
                                  numbers=r.numbers, states=packed.get(m.id, ""))
                     for m, r in zip(chunk, rows_info)]
            await self.vectors.upsert(fresh)
            points.update((p.key, StoredMessageVector(p.key, p.chat, p.ts, p.story, p.story_start, p.entities,
                                                      p.terms, p.denies, numbers=p.numbers)) for p in fresh)

    def _count_all(self, terms: Iterable[frozenset[int]]) -> None:
        with self._lock:
            self._df.clear()
            self._n = 0
            for t in terms:
                self._count(t, +1)

    def _count(self, terms: frozenset[int], sign: int) -> None:
        """Caller holds _lock."""
        self._n += sign
        for t in terms:
            left = self._df.get(t, 0) + sign
            if left > 0:
                self._df[t] = left
            else:
                self._df.pop(t, None)

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    # --- ingest ----------------------------------------------------------------------------------

    async def ingest(self, message: TrackedMessage) -> str | None:
        """Store a tracked chat's message; returns its story id, or None when the chat is not tracked
        (checked here, so `/track off` stops storage for the very next message)."""
        if ((not message.text.strip() and message.photo_hash is None)
                or not await self.store.is_tracked(message.platform, message.chat_id)):
            self.stats.skipped_untracked += 1
            return None
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain(), name="tipline-corroboration-ingest")
        fut: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        await self._queue.put((message, fut))
        return await fut

    async def _drain(self) -> None:
        """One consumer: whatever queued up while the previous batch was embedded goes in one batch.
        Writing a batch to SQLite overlaps with embedding the next one; writes stay in order."""
        assert self._queue is not None
        writing: asyncio.Task[None] | None = None
        try:
            while True:
                batch = [await self._queue.get()]
                while len(batch) < BATCH and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                try:
                    prepared = await self._prepare([m for m, _ in batch])
                except Exception as exc:  # one bad batch must not stop ingestion; each caller hears about it
                    log.exception("corroboration: could not ingest %d messages", len(batch))
                    _fail(batch, exc)
                    continue
                if writing is not None:
                    await writing
                writing = asyncio.create_task(self._write_and_answer(prepared, batch))
        except GeneratorExit:  # garbage-collected undone (its loop is gone): nothing can be awaited any more
            writing = None
            raise
        finally:
            if writing is not None:
                await asyncio.gather(writing, return_exceptions=True)

    async def _write_and_answer(self, prepared: _Prepared, batch: list) -> None:
        try:
            results = await self._write(prepared)
        except Exception as exc:
            log.exception("corroboration: could not store %d messages", len(batch))
            self.photos.remove(m.key for m in prepared.keep)  # no row: a later link must not find them
            _fail(batch, exc)
            return
        for (_, fut), story in zip(batch, results):
            if not fut.done():
                fut.set_result(story)

    async def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t not in self._embed_cache]
        for i, t in enumerate(texts):
            if t in self._embed_cache:
                out[i] = self._embed_cache[t]
                self._embed_cache.move_to_end(t)
        if todo:
            unique = list(dict.fromkeys(texts[i] for i in todo))
            vecs = dict(zip(unique, await self.embedder.embed(unique)))
            for i in todo:
                out[i] = vecs[texts[i]]
            for t, v in vecs.items():
                self._embed_cache[t] = v
            while len(self._embed_cache) > EMBED_CACHE:
                self._embed_cache.popitem(last=False)
        return out

    async def ingest_batch(self, messages: Sequence[TrackedMessage]) -> list[str | None]:
        """Embed, link and store messages (in time order within the batch). Chats that stopped being
        tracked since the messages were queued are skipped."""
        return await self._write(await self._prepare(messages))

    async def _prepare(self, messages: Sequence[TrackedMessage]) -> _Prepared:
        """Embed, link and store the vectors; `_write` stores the rows in SQLite."""
        keep = [m for m in messages if (m.text.strip() or m.photo_hash is not None)
                and await self.store.is_tracked(m.platform, m.chat_id)]
        keep.sort(key=lambda m: _secs(m.at))
        if not keep:
            return _Prepared(messages, [], np.zeros((0, self.embedder.dim), np.float32), None, [], {}, [])
        clean = [prepare_text(m.text) for m in keep]
        texted = [i for i, m in enumerate(keep) if m.text.strip()]  # the others are photo-only posts
        vecs = np.zeros((len(keep), self.embedder.dim), dtype=np.float32)
        multi: np.ndarray | None = None
        states: list[str] = [""] * len(keep)
        if texted:
            vecs[texted] = await self._embed([clean[i] for i in texted])
            # e5 "query:" vectors of the same cleaned text the matcher embeds, so a lookup after a check
            # finds its vector in the encoder's cache; its token states come from the same model call.
            if self.multilingual is not None:
                some, token_states = await self.multilingual.queries_with_states([clean[i] for i in texted])
                multi = np.zeros((len(keep), some.shape[1]), dtype=some.dtype)
                multi[texted] = some
                packed = await asyncio.to_thread(lambda: [pack_states(st) for st in token_states])
                for i, st in zip(texted, packed):
                    states[i] = st
        stories, merges = await self._link_batch(keep, clean, vecs, multi, states)
        return _Prepared(messages, keep, vecs, multi, states, stories, merges)

    async def _write(self, p: _Prepared) -> list[str | None]:
        if p.keep:
            rows = [StoredMessage(id=m.key, platform=m.platform, chat_id=str(m.chat_id), message_id=str(m.message_id),
                                  text=m.text, ts=_secs(m.at), author=m.author, permalink=m.permalink,
                                  language=m.language or (detect_language(m.text) if m.text.strip() else ""),
                                  story_id=p.stories[m.key], sender=m.sender, photo_hash=m.photo_hash)
                    for m in p.keep]
            for into, others in p.merges:
                await self.store.merge_stories(into, others)
            await self.store.add(rows)
            self.stats.ingested += len(p.keep)
        return [p.stories.get(m.key) for m in p.messages]

    async def bulk_load(self, messages: Sequence[TrackedMessage], vectors: np.ndarray,
                        stories: Sequence[str] | None = None, multi: np.ndarray | None = None, *,
                        starts: Mapping[str, float] | None = None, states: Sequence[str] | None = None) -> None:
        """Store messages with precomputed vectors and known story ids, without linking (imports and
        `tipline bench corroborate`, which fills up to 1M messages without embedding each one).
        `starts`: when each story began, for a fill in several calls (default: its earliest message here);
        `states`: each message's packed e5 token states (core.encoders.token_align.pack_states)."""
        stories = list(stories) if stories is not None else [m.key for m in messages]
        rows = [StoredMessage(id=m.key, platform=m.platform, chat_id=str(m.chat_id), message_id=str(m.message_id),
                              text=m.text, ts=_secs(m.at), author=m.author, permalink=m.permalink,
                              language=m.language, story_id=s, sender=m.sender) for m, s in zip(messages, stories)]
        await self.store.add(rows)
        start: dict[str, float] = dict(starts or {})
        if starts is None:
            for m, s in zip(messages, stories):
                start[s] = min(start.get(s, math.inf), _secs(m.at))
        for i in range(0, len(messages), 1024):
            chunk = messages[i:i + 1024]
            info = await asyncio.to_thread(_rows_of, [m.text for m in chunk])
            await self.vectors.upsert([
                MessagePoint(m.key, m.chat, _secs(m.at), s, start[s], r.entities, r.terms, r.denies, latin=r.latin,
                             vector=v, platform=m.platform, message_id=str(m.message_id),
                             multi=None if multi is None else multi[i + k], numbers=r.numbers,
                             states="" if states is None else states[i + k])
                for k, (m, v, s, r) in enumerate(zip(chunk, vectors[i:i + 1024], stories[i:i + 1024], info))])
            await asyncio.to_thread(self._count_many, [r.terms for r in info], +1)

    def _count_many(self, terms: Sequence[frozenset[int]], sign: int) -> None:
        with self._lock:
            for t in terms:
                self._count(t, sign)

    async def _link_batch(self, msgs: Sequence[TrackedMessage], clean: Sequence[str], vecs: np.ndarray,
                          multi: np.ndarray | None, states: Sequence[str]
                          ) -> tuple[dict[str, str], list[tuple[str, list[str]]]]:
        """Link each message to the same-story messages of other chats within the window and store it;
        stories that a message joins are merged (the one that started first keeps its id, so story ids
        stay stable)."""
        stories: dict[str, str] = {}
        merges: list[tuple[str, list[str]]] = []
        renamed: dict[str, str] = {}
        infos = await asyncio.to_thread(lambda: [_row_of(c) for c in clean])
        async with self._linking:
            replaced = await self.vectors.scoring_data([m.key for m in msgs])  # re-ingested keys
            if replaced:
                await asyncio.to_thread(self._count_many, [r.terms for r in replaced.values()], -1)
            for at, (m, info, v) in enumerate(zip(msgs, infos, vecs)):
                ts = _secs(m.at)
                mv = None if multi is None else multi[at]
                has_text = bool(m.text.strip())
                options: set[tuple[float, str]] = {(ts, m.key)}
                if has_text:
                    await asyncio.to_thread(self._count_many, [info.terms], +1)  # the IDF counts the message
                    cands, inside = await self._candidates(info.latin, v, mv, ts, [m.chat], m.key, strict=True)
                    if cands:
                        _, ok, weak = await asyncio.to_thread(self._scores, info, cands, inside,
                                                              unpack_states(states[at]))
                        linked = [c for c, good in zip(cands, ok) if good]
                        if not linked and weak.size:
                            best = await self._weak_link(cands, weak, ts)
                            linked = [] if best is None else [cands[best]]
                        self.stats.links += len(linked)
                        options |= {(c.story_start, c.story) for c in linked}
                if m.photo_hash is not None:
                    same = self.photos.near(m.photo_hash, t=ts, window_s=self.window_s, exclude_chats=[m.chat],
                                            exclude_key=m.key)
                    self.stats.photo_links += len(same)
                    options |= {(e.story_start, e.story) for e, _ in same}
                start, story = min(options)
                others = sorted({name for _, name in options if name != story})
                if others:
                    await self.vectors.relabel([o for o in others if o != m.key], story, start)
                    self.photos.relabel([o for o in others if o != m.key], story, start)
                    merges.append((story, others))
                    renamed.update((o, story) for o in others)
                if has_text:
                    await self.vectors.upsert([MessagePoint(m.key, m.chat, ts, story, start, info.entities,
                                                            info.terms, info.denies, latin=info.latin, vector=v,
                                                            platform=m.platform, message_id=str(m.message_id),
                                                            multi=mv, numbers=info.numbers, states=states[at])])
                if m.photo_hash is not None:
                    self.photos.add(PhotoEntry(m.key, m.chat, ts, story, start, m.photo_hash, has_text=has_text))
                stories[m.key] = story
        # later messages of the batch may have merged earlier ones' stories
        for k, name in stories.items():
            while name in renamed and renamed[name] != name:
                name = renamed[name]
            stories[k] = name
        return stories, merges

    async def _candidates(self, latin: bool, vec: np.ndarray, multi: np.ndarray | None, t: float,
                          chats: list[str], key: str | None = None, *, strict: bool = False,
                          limit: int = CANDIDATES) -> tuple[list[StoredMessageVector], np.ndarray]:
        """Earlier messages worth scoring, each with the cosine its route is judged on, and which of them
        are inside (other chats, within the window): a Latin-script message's Latin neighbours by the
        English vectors, every other pair by the multilingual ones, and for the English route's strict
        links (`strict`: when linking a new message; a lookup asks within the window only and drops its
        own chat from what comes back) its Latin neighbours anywhere (one call to the engine with up to
        three searches)."""
        if multi is None:
            searches = [Near(vec, self.model.cos_floor)]
        elif not latin:
            searches = [Near(multi, self.models[1].cos_floor, MULTI)]
        else:
            searches = [Near(vec, self.model.cos_floor, VECTOR, "latin"),
                        Near(multi, self.models[1].cos_floor, MULTI, "other")]
        if strict and self.model.strict_threshold is not None and (multi is None or latin):
            extra = [Near(vec, self.model.cos_floor, VECTOR, None if multi is None else "latin", anywhere=True)]
        else:
            extra = []
        found = await self.vectors.nearest_each(searches + extra, t=t, window_s=self.window_s, exclude_chats=chats,
                                                limit=limit)
        near = [c for cands in found[:len(searches)] for c in cands if c.key != key]
        seen = {c.key for c in near}
        outside = [c for cands in found[len(searches):] for c in cands if c.key != key and c.key not in seen]
        return near + outside, np.arange(len(near) + len(outside)) < len(near)

    async def _weak_link(self, cands: Sequence[StoredMessageVector], weak: np.ndarray, t: float) -> int | None:
        """The first of the weak-band candidates (`core.corroboration.story_model.weak_order`, best first) that is
        alone in its story within the window, as `StoryDetector` links when nothing passes the threshold:
        one filtered scroll over their stories, only for messages that link to nothing else."""
        members: dict[str, set[str]] = {}
        for m in await self.vectors.story_members(list({cands[k].story for k in weak}), t=t, window_s=self.window_s):
            members.setdefault(m.story, set()).add(m.key)
        return next((int(k) for k in weak if members.get(cands[k].story, set()) <= {cands[k].key}), None)

    def _scores(self, info: _Row, cands: Sequence[StoredMessageVector], inside: np.ndarray | None = None,
                states: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each candidate's same-story probability by its route's model, whether it links (a candidate
        not `inside` at the strict threshold), and the weak-band candidates best first (tried only when
        none links). `states`: the text's e5 token states as stored (core.encoders.token_align.unpack_states)."""
        with self._lock:
            feats = self._features(info, cands)
        return self._judge(info, cands, self._with_extra(info, cands, feats, states), inside)

    def _scores_unless_busy(self, info: _Row, cands: Sequence[StoredMessageVector], states: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """`_scores` without waiting for the document frequencies: None while a worker thread counts them
        (a bulk load's chunk, the start's count of every stored message), so the event loop never blocks
        on them."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            feats = self._features(info, cands)
        finally:
            self._lock.release()
        return self._judge(info, cands, self._with_extra(info, cands, feats, states), None)

    def _judge(self, info: _Row, cands: Sequence[StoredMessageVector], feats: np.ndarray,
               inside: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        routes = route(np.array([c.latin for c in cands], dtype=bool), info.latin)
        probs = route_probs(self.models, routes, feats)
        margin = probs - route_needs(self.models, routes, inside)
        linked = margin >= 0
        if self.multilingual is None:
            # Stories across languages off: only pairs the English model can read link (on MiniLM's
            # vectors a Russian pair scored at pairwise precision 0.010).
            linked &= routes == ENGLISH
        return probs, linked, weak_order(self.models, routes, probs, margin, inside)

    def _row_and_scores(self, clean: str, latin: bool, cands: Sequence[StoredMessageVector],
                        states: np.ndarray | None = None) -> tuple[_Row, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """A long text's row and scores, in one worker-thread hop."""
        info = _row_of(clean, latin)
        return info, self._scores(info, cands, None, states)

    def _with_extra(self, info: _Row, cands: Sequence[StoredMessageVector], feats: np.ndarray,
                    states: np.ndarray | None) -> np.ndarray:
        """FEATURES plus, for pairs off the English route, the ROUTE_EXTRA columns (`route_extra`, as
        `StoryDetector.features` computes them): token alignment with each candidate's stored states and
        the numbers' overlap. Needs no term statistics, so it runs outside the lock."""
        out = np.zeros((len(cands), len(ALL_FEATURES)))
        out[:, :len(FEATURES)] = feats
        other = [k for k, c in enumerate(cands) if not (c.latin and info.latin)]
        if other and self.multilingual is not None:
            out[other, len(FEATURES):] = route_extra(
                states, info.numbers, [(unpack_states(cands[k].states), cands[k].numbers) for k in other])
        return out

    def _features(self, info: _Row, cands: Sequence[StoredMessageVector]) -> np.ndarray:
        """`core.corroboration.story_model.pair_features`, as `StoryDetector.features` computes them, with the
        document frequencies of the stored messages. The caller holds _lock."""
        return pair_features(info.entities, info.terms, [(c.entities, c.terms) for c in cands],
                             np.array([c.score for c in cands], dtype=np.float64), self._n, self._df, self.common)

    # --- lookup ----------------------------------------------------------------------------------

    async def lookup(self, text: str, *, exclude_chats: Iterable[tuple[str, object]] = (),
                     at: datetime | None = None, exclude_names: Iterable[str] = (),
                     outlets: Sequence[str] = (), photo: int | None = None) -> AlsoReported | None:
        """Other chats that carried the story of `text` (or of the photo whose hash is `photo`) within the
        window before/around `at` (now by default). `exclude_chats` = (platform, chat id) of the chat that
        asked; `exclude_names` drops e.g. the channel a forward came from. None when nothing (and no outlet)
        corroborates."""
        clean = prepare_text(text)
        if not clean.strip() and photo is None:
            return None
        t = _secs(at) if at is not None else self.clock()
        chats = [f"{p}:{c}" for p, c in exclude_chats]
        if clean.strip():
            vec = (await self._embed([clean]))[0]
            multi, states = None, None
            if self.multilingual is not None:  # the check embedded the same text with its states (cached)
                vecs, token_states = await self.multilingual.queries_with_states([clean])
                multi, states = vecs[0], unpack_states(pack_states(token_states[0]))
            found = await self._find(clean, vec, multi, t, chats, states)
        else:
            found = _Found()
        if photo is not None:
            await self._find_photo(found, photo, t, chats)
        skip = {n.lower().lstrip("@") for n in exclude_names if n}
        per_chat: list[tuple[_Hit, float, float]] = []  # (chat's first message of the story, best score, credibility)
        origin: list[tuple[_Hit, float, float]] = []  # the chat a forward came from: not "also", but where it started
        for h, score in found.per_chat.values():
            platform, _, chat_id = h.chat.partition(":")
            known = await self.store.chat(platform, chat_id)  # cached
            cred = CHANNEL_CREDIBILITY if known and known.kind == "channel" else GROUP_CREDIBILITY
            if skip and known and {n.lower().lstrip("@") for n in (known.title, known.handle) if n} & skip:
                origin.append((h, score, cred))  # a forward names its origin by title or @handle
                continue
            per_chat.append((h, score, cred))
        if not per_chat and not outlets:
            return None
        # Only the shown rows are read from SQLite: the top 3 and where the story was first seen (which may be
        # the forward's origin: "Also reported by: @b · first seen 3 h ago in @a" for a forward from @a).
        per_chat.sort(key=lambda x: (-x[2], x[0].ts))
        first = min(per_chat + origin, key=lambda x: x[0].ts) if per_chat else None
        shown = per_chat[:TOP_ITEMS] + ([first] if first is not None else [])
        stored = await self.store.get(x[0].key for x in shown)

        def item(x: tuple[_Hit, float, float]) -> ReportedBy | None:
            m = stored.get(x[0].key)
            if m is None:  # deleted meanwhile (/forget, retention)
                return None
            return ReportedBy(name=m.author or x[0].chat, platform=m.platform, chat_id=m.chat_id, link=m.permalink,
                              at=m.at, credibility=x[2], score=round(min(1.0, max(0.0, x[1])), 4))
        items = [r for r in map(item, per_chat[:TOP_ITEMS]) if r is not None]
        first_item = item(first) if first is not None else None
        sources = len(per_chat) + len(outlets)
        tier: Literal["high", "medium", "low"]
        if found.conflict:
            tier, note = "low", "sources disagree"
        elif len(found.strong_chats) + len(outlets) >= 2:
            tier, note = "high", ""
        elif sources >= 1:
            tier, note = "medium", ""
        else:
            tier, note = "low", ""
        return AlsoReported(items=items, total=len(per_chat), first_seen_at=first_item.at if first_item else None,
                            first_seen_in=first_item, outlets=list(outlets), agreement=round(found.agreement, 4),
                            tier=tier, note=note)

    async def _find(self, clean: str, vec: np.ndarray, multi: np.ndarray | None, t: float,
                    chats: list[str], states: np.ndarray | None = None) -> _Found:
        found = _Found()
        # The asker's chat is dropped here rather than in the engine's filter: a must_not on the chat
        # field cost the filtered search ~0.9 of 3.9 ms at 100k stored (evals/window_recall.py's dir).
        latin = latin_script(clean)
        cands = [c for c in (await self._candidates(latin, vec, multi, t, [],
                                                    limit=self.lookup_candidates))[0] if c.chat not in chats]
        if not cands:
            return found
        # The text's row and the scores, after the search (which needs only the script). Both are pure
        # Python, so a worker thread would hold the GIL and stall the loop as long as running them here
        # does, and add its hop: at 1M stored, lookups alternating between the two ways in one process
        # took p50 5.17 ms on the loop, 5.80 ms with the thread (evals/lookup_inline_ab.py, 591 each).
        if len(clean) <= self.inline_row_chars:
            info = _row_of(clean, latin)
            quick = self._scores_unless_busy(info, cands, states)
            scores, linked, weak = quick if quick is not None else await asyncio.to_thread(
                self._scores, info, cands, None, states)
        else:
            info, (scores, linked, weak) = await asyncio.to_thread(self._row_and_scores, clean, latin, cands, states)
        if not linked.any() and weak.size:  # the text links as a new message would (StoryDetector's rule)
            k = await self._weak_link(cands, weak, t)
            if k is not None:
                linked[k] = True
        story_score: dict[str, float] = {}
        direct: list[float] = []
        seen: set[str] = set()
        for c, sc, ok in zip(cands, scores, linked):
            sc = float(sc)
            if not ok:
                continue
            found.add(_Hit(c.key, c.chat, c.ts, sc, True), sc)
            seen.add(c.key)
            direct.append(sc)
            if sc >= STRONG:
                found.strong_chats.add(c.chat)
            story_score[c.story] = max(story_score.get(c.story, 0.0), sc)
            found.conflict |= c.denies != info.denies
        found.direct.extend(direct)
        found.agreement = float(np.mean(direct)) if direct else 0.0
        # The rest of each matched story (A~B~C): members of other chats inside the window, one filtered
        # scroll (stories can have thousands of members).
        for r in await self.vectors.story_members(list(story_score), t=t, window_s=self.window_s,
                                                  exclude_chats=chats):
            if r.key not in seen:
                found.add(_Hit(r.key, r.chat, r.ts, 0.0, False), story_score.get(r.story, 0.0))
        found.stories.update(story_score)
        for e in self.photos.members(story_score, t=t, window_s=self.window_s, exclude_chats=chats, photo_only=True):
            found.add(_Hit(e.key, e.chat, e.ts, 0.0, False), story_score.get(e.story, 0.0))
        return found

    async def _find_photo(self, found: _Found, photo: int, t: float, chats: list[str]) -> None:
        """Add to `found` the messages of other chats carrying the same photo within the window, and the
        rest of their stories (those the text already matched are there)."""
        same = self.photos.near(photo, t=t, window_s=self.window_s, exclude_chats=chats)
        if not same:
            return
        story_score: dict[str, float] = {}
        for e, bits in same:
            score = 1.0 - bits / PHOTO_BITS
            found.add(_Hit(e.key, e.chat, e.ts, score, True), score)
            found.strong_chats.add(e.chat)  # the same picture: as strong as a link gets
            found.direct.append(score)
            story_score[e.story] = max(story_score.get(e.story, 0.0), score)
        found.agreement = float(np.mean(found.direct))
        new = [s for s in story_score if s not in found.stories]
        found.stories.update(story_score)
        if not new:
            return
        known = {h.key for h, _ in found.per_chat.values()}
        for r in await self.vectors.story_members(new, t=t, window_s=self.window_s, exclude_chats=chats):
            if r.key not in known:
                found.add(_Hit(r.key, r.chat, r.ts, 0.0, False), story_score.get(r.story, 0.0))
        for e in self.photos.members(new, t=t, window_s=self.window_s, exclude_chats=chats, photo_only=True):
            found.add(_Hit(e.key, e.chat, e.ts, 0.0, False), story_score.get(e.story, 0.0))

    # --- forgetting ------------------------------------------------------------------------------

    async def forget(self, platform: str, chat_id: object) -> int:
        """Delete a chat's stored messages everywhere (/forget); returns how many."""
        keys = await self.store.delete_chat(platform, chat_id)
        stored = await self.vectors.of_chat(f"{platform}:{chat_id}")
        await self._drop(stored)
        photos = self.photos.remove_chat(f"{platform}:{chat_id}")
        return len(set(keys) | {m.key for m in stored} | set(photos))

    async def forget_keys(self, keys: Sequence[str]) -> None:
        """Delete the vectors of messages whose rows are gone already (/forget me, storage/personal.py) and
        rewrite the collection's files without them (`VectorStore.purge`)."""
        if not keys:
            return
        self.photos.remove(keys)
        stored = await self.vectors.scoring_data(keys)
        await self.vectors.delete(list(keys))
        await asyncio.to_thread(self._count_many, [m.terms for m in stored.values()], -1)
        await self.vectors.purge()

    async def cleanup(self) -> int:
        """Delete messages older than the retention period; returns how many."""
        cutoff = self.clock() - self.retention_s
        keys = await self.store.delete_older(cutoff)
        stored = await self.vectors.older_than(cutoff)
        await self._drop(stored)
        photos = self.photos.remove_older(cutoff)
        return len(set(keys) | {m.key for m in stored} | set(photos))

    async def _drop(self, stored: Sequence[StoredMessageVector]) -> None:
        if not stored:
            return
        await self.vectors.delete([m.key for m in stored])
        await asyncio.to_thread(self._count_many, [m.terms for m in stored], -1)

    async def run_retention(self, stop: asyncio.Event, interval_s: float = 3600.0) -> None:
        """Periodic cleanup until `stop` is set (a task of `tipline run`)."""
        while not stop.is_set():
            try:
                removed = await self.cleanup()
                if removed:
                    log.info("corroboration: retention removed %d messages", removed)
            except Exception:
                log.exception("corroboration: retention cleanup failed")
            try:
                await asyncio.wait_for(stop.wait(), interval_s)
            except TimeoutError:
                pass

    async def stored(self) -> int:
        return await self.store.count()
