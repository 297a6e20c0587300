"""Evaluate same-story detection ("also reported by") on CLEF-2020 Task 2 tweets.

Each tweet ends with "— Name (@handle) Month D, YYYY": the handle is the account, the date the time.
Two tweets are the same story when they share a vclaim_id in the qrels.

    python -m evals.corroboration_eval MESSAGES.tsv OUT.tsv [QRELS]
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from core.corroboration.story_model import (
    CROSS,
    NATIVE,
    COS_FLOOR,
    DEFAULT_WINDOW_DAYS,
    ALL_FEATURES,
    FEATURES,
    ROUTE_FEATURES,
    TEXT_STEPS,
    StoryModel,
    prepare_text,
    route,
    route_scores,
)
from evals.story_detector import (
    StoryDetector,
    best_threshold,
    clusters_at,
    fit_logistic,
    pairwise_scores,
    parse_signature,
)
from evals.evaluation import read_qrels, read_queries
from core.encoders.token_align import stored_states
from evals.vector_cache import VectorCache, identity_of_embedder_sync

DEFAULT_MODEL_DIR = Path("/tmp/model")
_ANY_SIGNATURE = re.compile(r"\s*[—–-]\s*[^—–\n]{0,80}?\(@\w+\)[^\n]{0,40}$")
CACHE_DIR = Path("/tmp/corrcache")


@dataclass(frozen=True)
class Message:
    id: str
    account: str
    time: datetime | None
    raw: str
    text: str  # prepared (cleaned) text


def load_messages(path: Path, steps: Sequence[str] | None = None) -> list[Message]:
    out = []
    for mid, raw in read_queries(Path(path)):
        sig = parse_signature(raw)
        account = f"@{sig.handle}" if sig else mid
        out.append(Message(mid, account, sig.time if sig else None, raw, prepare_text(raw, steps)))
    return out


def embed_cached(texts: Sequence[str], model_dir: Path = DEFAULT_MODEL_DIR, embedder=None,
                 cache_dir: Path = CACHE_DIR) -> np.ndarray:
    """Embeddings cached under cache_dir keyed by a hash of the texts and model dir (only for the real
    embedder: an injected one, e.g. a test fake, is never cached)."""
    if embedder is not None:
        return np.asarray(embedder.embed_sync(list(texts)), dtype=np.float32)
    key = hashlib.sha256(("\x1e".join(texts) + f"|{model_dir}").encode()).hexdigest()[:24]
    path = cache_dir / f"{key}.npy"
    if path.exists():
        return np.load(path)
    if embedder is None:
        from core.encoders.embeddings import Embedder

        embedder = Embedder(model_dir=Path(model_dir))
    vecs = np.asarray(embedder.embed_sync(list(texts)), dtype=np.float32)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def eval_vectors(texts: Sequence[str], embedder, multilingual, cache: VectorCache | None = None,
                 model_dir: Path = DEFAULT_MODEL_DIR) -> tuple[np.ndarray, np.ndarray | None]:
    """The English model's and (when given) the multilingual model's vectors of `texts`, in one batch each.
    `cache` keeps them between runs of `tipline bench report` (nothing here is timed): the e5 batch of
    the 800 + 200 tweets and the 394 of the translated stream were ~170 of its ~180 CPU-seconds."""
    if embedder is None or cache is None:
        return (embed_cached(texts, model_dir, embedder),
                multilingual.queries_sync(list(texts)) if multilingual is not None else None)
    vecs = cache.vectors_sync("corroboration-eval", identity_of_embedder_sync(embedder.embed_sync, embedder.model_name),
                              texts, lambda: embed_cached(texts, model_dir, embedder))
    multi = None if multilingual is None else cache.vectors_sync(
        "corroboration-eval", identity_of_embedder_sync(multilingual.queries_sync, multilingual.model_name),
        texts, lambda: multilingual.queries_sync(list(texts)))
    return vecs, multi


def _stream_order(msgs: Sequence[Message]) -> list[int]:
    # timed messages in time order (stable), untimed ones last (they are compared with everything)
    return sorted(range(len(msgs)), key=lambda k: (msgs[k].time is None, msgs[k].time or datetime.min, k))


def run_stream(msgs: Sequence[Message], vecs: np.ndarray, model: StoryModel | None = None,
               window_days: float = DEFAULT_WINDOW_DAYS, record_pairs: bool = False,
               same_account: bool = False, multi: np.ndarray | None = None,
               others: Sequence[StoryModel] | None = None, common: frozenset[int] | None = None,
               states: Sequence[np.ndarray | None] | None = None) -> StoryDetector:
    """Replay `msgs` in time order; with `multi` (multilingual vectors) pairs with a non-Latin side are
    judged on those by `others` (the CROSS and NATIVE models), as the live path does; `common` replaces
    the shipped common words of the `shared` feature (core.corroboration.story_model.COMMON_TERMS_FILE)."""
    det = StoryDetector(model=model, window_days=window_days, dim=vecs.shape[1], record_pairs=record_pairs,
                        same_account=same_account, others=others, multi_dim=0 if multi is None else multi.shape[1],
                        common=common)
    for k in _stream_order(msgs):
        m = msgs[k]
        det.add(m.id, m.account, m.time, m.text, vecs[k], None if multi is None else multi[k],
                None if states is None else states[k])
    return det


def baseline_clusters(msgs: Sequence[Message], vecs: np.ndarray, threshold: float) -> dict[str, str]:
    """Naive baseline: single-link over raw cosine, no account or time constraints."""
    from evals.story_detector import clusters_at

    sims = vecs @ vecs.T
    a, b = np.nonzero(np.triu(sims >= threshold, 1))
    ids = [m.id for m in msgs]
    return clusters_at(ids, list(zip(a.tolist(), b.tolist())), np.ones(len(a)), 0.5)


def fit(msgs: Sequence[Message], vecs: np.ndarray, gold: dict[str, set[str]],
        window_days: float = DEFAULT_WINDOW_DAYS, cos_floor: float = COS_FLOOR,
        features: Sequence[int] | None = None, same_account: bool = False) -> tuple[StoryModel, dict]:
    """Fit logistic weights on candidate pairs of a stream replay, then pick the clustering threshold
    maximising pairwise F1 (both on the split given: use TRAIN)."""
    probe = StoryModel(weights=(0.0,) * len(FEATURES), bias=0.0, threshold=2.0, cos_floor=cos_floor,
                       weak_threshold=None)  # links nothing
    det = run_stream(msgs, vecs, probe, window_days, record_pairs=True, same_account=same_account)
    pairs = [(i, j) for i, j, _ in det.pairs]
    x = np.array([f[:len(FEATURES)] for _, _, f in det.pairs]) if det.pairs else np.zeros((0, len(FEATURES)))
    if features is not None:
        mask = np.zeros(x.shape[1], dtype=bool)
        mask[list(features)] = True
        x = np.where(mask, x, 0.0)
    y = np.array([float(bool(gold.get(det.ids[i], set()) & gold.get(det.ids[j], set()))) for i, j in pairs])
    w, b = fit_logistic(x, y)
    model = StoryModel(weights=tuple(float(v) for v in w), bias=b, threshold=0.5, cos_floor=cos_floor,
                       weak_threshold=None)
    t, s = best_threshold(det.ids, pairs, model.score(x), gold)
    model.threshold = t
    return model, {"candidate_pairs": len(pairs), "positive_pairs": int(y.sum()), "train": asdict(s)}


def fit_routes(msgs: Sequence[Message], vecs: np.ndarray, multi: np.ndarray, gold: dict[str, set[str]],
               english: StoryModel | None = None, window_days: float = DEFAULT_WINDOW_DAYS,
               cos_floor: float = COS_FLOOR, states: Sequence[np.ndarray | None] | None = None,
               columns: Sequence[int] | None = None, l2: float = 1e-4,
               extra: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = (),
               parts: Sequence[dict[str, set[str]]] | None = None,
               balance: bool = False) -> tuple[list[StoryModel], dict]:
    """Fit the CROSS and NATIVE models (the ENGLISH one kept), each on the candidate pairs of its route,
    then each threshold in turn to maximise the whole clustering's pairwise F1 (use TRAIN). `columns`: the
    ALL_FEATURES the two models read (default cos, ent, rare); `extra`: more labelled pairs (features,
    routes, labels) for the weights only, e.g. another corpus's (the thresholds stay this stream's);
    `parts`: the stream's corpora (each a part of `gold`), whose F1s the thresholds maximise the mean of,
    so that a small corpus counts as much as a big one; `balance`: the parts' pairs also weigh alike in the
    logistic fit."""
    columns = list(range(ROUTE_FEATURES)) if columns is None else list(columns)
    english = english or StoryModel()
    probe = StoryModel(weights=(0.0,) * len(FEATURES), bias=0.0, threshold=2.0, cos_floor=cos_floor,
                       weak_threshold=None)
    det = run_stream(msgs, vecs, english, window_days, record_pairs=True, multi=multi, others=[probe, probe],
                     states=states)
    pairs = [(i, j) for i, j, _ in det.pairs]
    x = np.array([f for _, _, f in det.pairs]) if det.pairs else np.zeros((0, len(ALL_FEATURES)))
    routes = np.array([int(route(det._latin[i], det._latin[j])) for i, j in pairs], dtype=int)
    y = np.array([float(bool(gold.get(det.ids[i], set()) & gold.get(det.ids[j], set()))) for i, j in pairs])
    models = [english]
    for r in (CROSS, NATIVE):
        sel = routes == r
        xs, ys = x[sel][:, columns], y[sel]
        sw = np.ones(len(ys))
        if balance and parts:
            part_of = np.array([next((k for k, g in enumerate(parts) if det.ids[i] in g), 0) for i, _ in pairs])[sel]
            counts = np.bincount(part_of, minlength=len(parts))
            sw = 1.0 / np.maximum(counts[part_of], 1)
        for ex, er, ey in extra:
            xs, ys = np.vstack([xs, ex[er == r][:, columns]]), np.concatenate([ys, ey[er == r]])
            sw = np.concatenate([sw, np.full(int((er == r).sum()), float(sw.mean()))])
        if ys.sum() >= 5 and (1 - ys).sum() >= 5:
            fitted, b = fit_logistic(xs, ys, l2=l2, weights=sw)
            w = np.zeros(max(columns) + 1)
            w[columns] = fitted
            models.append(StoryModel(weights=tuple(float(v) for v in w), bias=b, threshold=0.5, cos_floor=cos_floor,
                                     weak_threshold=None))
        else:  # too few pairs of this route to fit: it links nothing
            models.append(probe)
    info: dict = {"candidate_pairs": {}, "positive_pairs": {}}
    for r in (CROSS, NATIVE):
        sel = routes == r
        info["candidate_pairs"][r], info["positive_pairs"][r] = int(sel.sum()), int(y[sel].sum())
        best = (models[r].threshold, -1.0)
        for t in np.unique(np.round(models[r].score(x[sel]), 4)):
            models[r].threshold = float(t)
            clusters = clusters_at(det.ids, pairs, route_scores(models, routes, x) + 1.0, 1.0)
            f1 = float(np.mean([pairwise_scores(clusters, g).f1 for g in (parts or [gold])]))
            if f1 > best[1]:
                best = (float(t), f1)
        models[r].threshold = best[0]
    final = pairwise_scores(clusters_at(det.ids, pairs, route_scores(models, routes, x) + 1.0, 1.0), gold)
    info["train"] = asdict(final)
    return models, info


def run_corroboration_eval(messages_path: Path, out_path: Path, qrels_path: Path | None = None,
                           model_dir: Path = DEFAULT_MODEL_DIR, model: StoryModel | None = None,
                           window_days: float = DEFAULT_WINDOW_DAYS, embedder=None,
                           quiet: bool = False, multilingual=None, cache: VectorCache | None = None) -> dict:
    """With `multilingual` (the product's setting) pairs with a non-Latin side are judged on its vectors.
    `cache`: the vectors kept between runs (see `eval_vectors`)."""
    msgs = load_messages(Path(messages_path))
    vecs, multi = eval_vectors([m.text for m in msgs], embedder, multilingual, cache, model_dir)
    det = run_stream(msgs, vecs, model, window_days, multi=multi)
    clusters = det.clusters()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        for m in msgs:
            f.write(f"{m.id}\t{clusters[m.id]}\n")
    result: dict = {"messages": len(msgs), "clusters": len(set(clusters.values()))}
    if qrels_path is not None:
        s = pairwise_scores(clusters, read_qrels(Path(qrels_path)))
        result.update(asdict(s))
        if not quiet:
            print(f"pairwise P={s.precision:.4f} R={s.recall:.4f} F1={s.f1:.4f} "
                  f"(pred {s.predicted_pairs}, gold {s.gold_pairs}, true {s.true_pairs})")
    return result


def translated_stream(messages_path: Path, translations_path: Path,
                      qrels_path: Path) -> tuple[list[Message], dict[str, set[str]]]:
    """The English tweets plus our Russian translations of them (eval/clef2020-ru) as posts of other
    accounts at the same time ("@ru_<handle>", ids "ru<id>"): a translation shares its tweet's claims,
    so a same-story pair across languages is gold whenever the two tweets' pair is."""
    english = load_messages(messages_path)
    by_id = {m.id: m for m in english}
    russian = [Message(f"ru{m.id}", f"@ru_{by_id[m.id].account.lstrip('@')}", by_id[m.id].time, m.raw, m.text)
               for m in load_messages(translations_path) if m.id in by_id]
    gold = read_qrels(qrels_path)
    # Signatures go from every text (accounts and times were read from them above): a translation keeps
    # its tweet's handle, which no real pair of posts shares. core.textclean's signature step knows
    # English month names only; a translation's signature ends in a Russian date.
    steps = (*TEXT_STEPS, "signature")
    msgs = [Message(m.id, m.account, m.time, m.raw, _ANY_SIGNATURE.sub("", prepare_text(m.raw, steps)))
            for m in english + russian]
    return msgs, gold | {f"ru{k}": v for k, v in gold.items()}


def run_translated_eval(messages_path: Path, translations_path: Path, qrels_path: Path, embedder,
                        multilingual, cache: VectorCache | None = None) -> dict:
    """Same-story detection over English tweets and their Russian translations together: pairwise
    P/R/F1 and the share of tweets linked to their own translation."""
    msgs, gold = translated_stream(messages_path, translations_path, qrels_path)
    texts = [m.text for m in msgs]
    vecs, multi = eval_vectors(texts, embedder, multilingual, cache)
    # The CROSS and NATIVE models read the token states as a tracked message's are stored (not cached:
    # they are not vectors; ~15 s of e5 for the 394 texts of dev).
    states = [stored_states(s) for s in multilingual.queries_with_states_sync(texts)[1]]
    det = run_stream(msgs, vecs, multi=multi, states=states)
    clusters = det.clusters()
    s = pairwise_scores(clusters, gold)
    pairs = [m.id for m in msgs if f"ru{m.id}" in clusters]
    own = sum(clusters[i] == clusters[f"ru{i}"] for i in pairs) / len(pairs) if pairs else 0.0
    return {"messages": len(msgs), "precision": s.precision, "recall": s.recall, "f1": s.f1,
            "linked_to_own_translation": own}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print(__doc__)
        return 2
    run_corroboration_eval(Path(args[0]), Path(args[1]), Path(args[2]) if len(args) > 2 else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Message", "load_messages", "embed_cached", "run_stream", "baseline_clusters", "fit",
           "run_corroboration_eval", "TEXT_STEPS"]
