"""`tipline eval evidence`: evidence retrieval and the verdict policy, measured on CLIMATE-FEVER.

CLIMATE-FEVER (Diggelmann et al., 2020) has 1,535 climate claims, each with 5 annotated Wikipedia
sentences labelled SUPPORTS / REFUTES / NOT_ENOUGH_INFO, and a claim label SUPPORTS / REFUTES /
NOT_ENOUGH_INFO / DISPUTED. Two measurements, neither needing an LLM:

1. Retrieval. Every distinct evidence sentence of the file is one document of a shared pool (the 7,675
   annotations are 5,240 distinct sentences: popular sentences were annotated for several claims). Each
   claim ranks the whole pool; the gold documents are the sentences labelled SUPPORTS or REFUTES *for
   that claim* (claims with none are left out). Reported: recall@5, MRR (over the full ranking) and
   MAP@5 (evals.evaluation.score_run), for
   - dense: cosine of the default embedder's vectors (what core/evidence/ranking.py and the evidence index use);
   - bm25: Okapi BM25 (k1 1.2, b 0.75, corpus IDF and average length) over core.encoders.sparse.terms;
   - rrf: reciprocal-rank fusion of the two (k = 60, nothing tuned);
   - linear: (1 − w)·cosine + w·bm25/max(bm25 of that claim), w chosen on the train split only.
2. The verdict policy with oracle stances. Each claim's own 5 sentences get the gold evidence label
   as their stance (SUPPORTS → supports 0.9, REFUTES → refutes 0.9, NOT_ENOUGH_INFO → neutral), the
   embedder's cosine as relevance, the article as their domain (so "independent domains" means
   distinct Wikipedia articles), Wikipedia's credibility and an unknown date; then
   core.verdict.scoring.compute_features + decide, and the verdict maps to a claim label (SUPPORTED → SUPPORTS,
   REFUTED → REFUTES, MIXED/MISLEADING → DISPUTED, NOT_ENOUGH_EVIDENCE → NOT_ENOUGH_INFO). This measures
   the seed-004 policy given perfect stance detection, not stance detection. On the train split it also
   shows what other values of the "≥ 2 independent domains" rule (scoring.MIN_DOMAINS) would give,
   through the real `decide` (the domain counts are clamped around the constant), without changing it.

Claims are split deterministically by a hash of claim_id: 70% train, 30% dev. Anything chosen (the
linear weight) is chosen on train; dev is the figure to quote.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.verdict import scoring
from core.evidence.credibility import credibility
from core.encoders.text_embedder import TextEmbedder
from evals.vector_cache import VectorCache
from evals.evaluation import EvalDataError, score_run
from core.evidence.base import Evidence
from schema.models import Verdict
from core.numeric import NumericCheck
from core.evidence.ranking import MIN_RELEVANCE, UNKNOWN_RECENCY, Ranked, rank_score
from core.encoders.sparse import bm25_scores
from core.verdict.stance import Stance

EVIDENCE_LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO")
CLAIM_LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
TRAIN_SHARE = 0.70
RRF_K = 60
ORACLE_P = 0.9
WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))
WIKIPEDIA = "en.wikipedia.org"
TO_CLAIM_LABEL = {
    Verdict.SUPPORTED: "SUPPORTS", Verdict.REFUTED: "REFUTES", Verdict.MIXED: "DISPUTED",
    Verdict.MISLEADING: "DISPUTED", Verdict.NOT_ENOUGH_EVIDENCE: "NOT_ENOUGH_INFO",
}


@dataclass(frozen=True)
class ClimateEvidence:
    evidence_id: str
    label: str
    article: str
    text: str


@dataclass(frozen=True)
class ClimateClaim:
    claim_id: str
    claim: str
    label: str
    evidences: tuple[ClimateEvidence, ...]

    @property
    def gold(self) -> set[str]:
        """Sentences labelled SUPPORTS or REFUTES for this claim: the ones retrieval should find."""
        return {e.evidence_id for e in self.evidences if e.label in ("SUPPORTS", "REFUTES")}


def read_climate_fever(path: Path) -> list[ClimateClaim]:
    """The CLIMATE-FEVER JSON lines file; one sentence per user mistake in EvalDataError."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalDataError(f"cannot read {path}: {exc.strerror or exc}") from exc
    claims: list[ClimateClaim] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            evs = tuple(ClimateEvidence(str(e["evidence_id"]), str(e["evidence_label"]), str(e.get("article") or ""),
                                        str(e["evidence"])) for e in row["evidences"])
            claim = ClimateClaim(str(row["claim_id"]), str(row["claim"]), str(row["claim_label"]), evs)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise EvalDataError(f"{path}:{n}: not a CLIMATE-FEVER line (claim_id, claim, claim_label, "
                                f"evidences[evidence_id, evidence_label, article, evidence]): {exc}") from exc
        if claim.label not in CLAIM_LABELS:
            raise EvalDataError(f"{path}:{n}: unknown claim_label {claim.label!r}")
        bad = [e.label for e in evs if e.label not in EVIDENCE_LABELS]
        if bad:
            raise EvalDataError(f"{path}:{n}: unknown evidence_label {bad[0]!r}")
        claims.append(claim)
    if not claims:
        raise EvalDataError(f"{path}: no claims")
    return claims


def split_of(claim_id: str, train_share: float = TRAIN_SHARE) -> str:
    """'train' or 'dev', fixed by a hash of the id (stable across runs, machines and file order)."""
    bucket = int.from_bytes(hashlib.sha256(claim_id.encode("utf-8")).digest()[:8], "big") % 10_000
    return "train" if bucket < train_share * 10_000 else "dev"


def select(claims: Sequence[ClimateClaim], split: str) -> list[ClimateClaim]:
    return list(claims) if split == "all" else [c for c in claims if split_of(c.claim_id) == split]


# --- retrieval ------------------------------------------------------------------------------------

def pool_of(claims: Sequence[ClimateClaim]) -> tuple[list[str], list[str]]:
    """Distinct evidence sentences (ids, texts) in first-seen order."""
    seen: dict[str, str] = {}
    for c in claims:
        for e in c.evidences:
            seen.setdefault(e.evidence_id, e.text)
    return list(seen), list(seen.values())


def order(scores: np.ndarray) -> np.ndarray:
    """Per row, document indices best first (ties: the earlier document first)."""
    return np.argsort(-scores, axis=1, kind="stable")


def rrf_scores(orders: Sequence[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Reciprocal-rank fusion: Σ 1/(k + rank) over the rankings (rank 1 = best)."""
    n_q, n_d = orders[0].shape
    out = np.zeros((n_q, n_d), dtype=np.float64)
    rows = np.arange(n_q)[:, None]
    for o in orders:
        ranks = np.empty_like(o)
        ranks[rows, o] = np.arange(1, n_d + 1)[None, :]
        out += 1.0 / (k + ranks)
    return out


def linear_scores(dense: np.ndarray, sparse: np.ndarray, w: float) -> np.ndarray:
    top = sparse.max(axis=1, keepdims=True)
    top[top <= 0] = 1.0
    return (1 - w) * dense + w * sparse / top


def retrieval_metrics(doc_ids: Sequence[str], ranked: np.ndarray, claims: Sequence[ClimateClaim],
                      rows: Sequence[int]) -> dict:
    """recall@5, MRR and MAP@5 over the claims (`rows` index `ranked`) that have gold sentences."""
    gold = {claims[r].claim_id: claims[r].gold for r in rows if claims[r].gold}
    runs = {claims[r].claim_id: [doc_ids[j] for j in ranked[r]] for r in rows if claims[r].gold}
    s = score_run(runs, gold)
    return {"claims": s.queries, "recall@5": round(s.recall5, 4), "mrr": round(s.mrr, 4), "map@5": round(s.map5, 4)}


# --- verdict policy with oracle stances -------------------------------------------------------------

def oracle_stance(evidence_label: str) -> Stance:
    if evidence_label == "SUPPORTS":
        return Stance(label="supports", supports=ORACLE_P, refutes=0.0, neutral=round(1 - ORACLE_P, 4), method="llm")
    if evidence_label == "REFUTES":
        return Stance(label="refutes", supports=0.0, refutes=ORACLE_P, neutral=round(1 - ORACLE_P, 4), method="llm")
    return Stance(label="neutral", supports=0.0, refutes=0.0, neutral=1.0, method="llm")


def oracle_judged(claim: ClimateClaim, relevances: Sequence[float], *,
                  min_relevance: float | None = None) -> list[scoring.Judged]:
    """The claim's annotated sentences as judged evidence, best-ranked first (as core/evidence/ranking.py scores
    them: relevance + credibility and recency terms); `min_relevance` drops the off-topic ones as rank() does."""
    cred = credibility(WIKIPEDIA) or 0.0
    out = []
    for e, rel in zip(claim.evidences, relevances):
        if min_relevance is not None and rel < min_relevance:
            continue
        ev = Evidence(url=f"https://{WIKIPEDIA}/wiki/{e.article.replace(' ', '_')}", title=e.article,
                      snippet=e.text, domain=WIKIPEDIA, source="climate-fever")
        ranked = Ranked(ev, e.article or e.evidence_id, float(rel), cred, UNKNOWN_RECENCY,
                        rank_score(rel, cred, UNKNOWN_RECENCY))
        out.append(scoring.Judged(ranked, oracle_stance(e.label), NumericCheck(result="n/a")))
    out.sort(key=lambda j: j.ranked.score, reverse=True)
    return out


def with_min_domains(f: scoring.Features, k: int) -> scoring.Features:
    """Features that make the real `decide` apply "≥ k independent domains" instead of scoring.MIN_DOMAINS."""
    m = scoring.MIN_DOMAINS

    def clamp(n: int) -> int:
        return max(n, m) if n >= k else min(n, m - 1)
    return f.model_copy(update={"agree_dom": clamp(f.agree_dom), "refute_dom": clamp(f.refute_dom)})


def policy_label(judged: Sequence[scoring.Judged], min_domains: int | None = None) -> str:
    f = scoring.compute_features(judged)
    if min_domains is not None:
        f = with_min_domains(f, min_domains)
    return TO_CLAIM_LABEL[scoring.decide(f).verdict]


def classification_metrics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str] = CLAIM_LABELS) -> dict:
    """Accuracy, macro-F1 over `labels` (a class never predicted nor present scores F1 0) and the
    confusion matrix as {gold: {predicted: count}}."""
    if len(gold) != len(pred):
        raise ValueError("one prediction per gold label")
    n = len(gold)
    confusion = {g: {p: 0 for p in labels} for g in labels}
    for g, p in zip(gold, pred):
        confusion[g][p] += 1
    f1s, per_class = [], {}
    for c in labels:
        tp = confusion[c][c]
        predicted = sum(confusion[g][c] for g in labels)
        actual = sum(confusion[c].values())
        prec = tp / predicted if predicted else 0.0
        rec = tp / actual if actual else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        f1s.append(f1)
        per_class[c] = {"precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4), "support": actual}
    return {"claims": n, "accuracy": round(sum(g == p for g, p in zip(gold, pred)) / n, 4) if n else 0.0,
            "macro_f1": round(sum(f1s) / len(f1s), 4), "per_class": per_class, "confusion": confusion}


# --- the run -------------------------------------------------------------------------------------

def embed_cached(embedder: TextEmbedder, texts: Sequence[str], cache_dir: Path | None,
                 progress: Callable[[str, int, int], None] | None = None, chunk: int = 256,
                 cache: VectorCache | None = None) -> np.ndarray:
    """Vectors for `texts`, kept between runs (evals/vector_cache.py) in `cache`, or in `cache_dir` when given."""
    from evals.vector_cache import VectorCache, identity_of_embedder_sync

    def compute() -> np.ndarray:
        parts = []
        for i in range(0, len(texts), chunk):
            parts.append(embedder.embed_sync(texts[i:i + chunk]))
            if progress:
                progress("embed", min(i + chunk, len(texts)), len(texts))
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)

    if cache is None and cache_dir is None:
        return compute()
    model = identity_of_embedder_sync(embedder.embed_sync, embedder.model_name)
    return (cache or VectorCache(cache_dir)).vectors_sync("evidence-eval", model, texts, compute)


def run_evidence_eval(path: Path, embedder: TextEmbedder, *, split: str = "dev", cache_dir: Path | None = None,
                      progress: Callable[[str, int, int], None] | None = None,
                      cache: VectorCache | None = None) -> dict:
    """The full report (a JSON-able dict) for `split` ('dev', 'train' or 'all'); train figures are always
    included next to it, since the linear weight is chosen there."""
    if split not in ("dev", "train", "all"):
        raise ValueError(f"unknown split {split!r}")
    claims = read_climate_fever(path)
    doc_ids, doc_texts = pool_of(claims)
    claim_texts = [c.claim for c in claims]
    vecs = embed_cached(embedder, [*claim_texts, *doc_texts], cache_dir, progress, cache=cache)
    q_vecs, d_vecs = vecs[:len(claims)], vecs[len(claims):]
    dense = q_vecs @ d_vecs.T
    sparse = bm25_scores(claim_texts, doc_texts)
    rows = {s: [i for i, c in enumerate(claims) if s == "all" or split_of(c.claim_id) == s]
            for s in ("train", "dev", "all")}

    dense_order, sparse_order = order(dense), order(sparse)
    # The linear weight: best train recall@5, then train MRR, then the smaller weight.
    sweep = []
    for w in WEIGHTS:
        m = retrieval_metrics(doc_ids, order(linear_scores(dense, sparse, w)), claims, rows["train"])
        sweep.append({"w": w, "recall@5": m["recall@5"], "mrr": m["mrr"]})
    best_w = max(sweep, key=lambda r: (r["recall@5"], r["mrr"], -r["w"]))["w"]
    systems = {"dense": dense_order, "bm25": sparse_order, "rrf": order(rrf_scores([dense_order, sparse_order])),
               f"linear w={best_w}": order(linear_scores(dense, sparse, best_w))}
    retrieval = {name: {s: retrieval_metrics(doc_ids, o, claims, rows[s]) for s in ("train", split)}
                 for name, o in systems.items()}

    # Verdict policy with oracle stances.
    doc_index = {d: j for j, d in enumerate(doc_ids)}
    judged = [oracle_judged(c, [float(dense[i, doc_index[e.evidence_id]]) for e in c.evidences])
              for i, c in enumerate(claims)]
    floored = [oracle_judged(c, [float(dense[i, doc_index[e.evidence_id]]) for e in c.evidences],
                             min_relevance=MIN_RELEVANCE) for i, c in enumerate(claims)]
    policy: dict = {}
    for s in ("train", split):
        gold = [claims[i].label for i in rows[s]]
        train_majority = Counter(claims[i].label for i in rows["train"]).most_common(1)[0][0]
        policy[s] = {
            "policy": classification_metrics(gold, [policy_label(judged[i]) for i in rows[s]]),
            f"policy, evidence below relevance {MIN_RELEVANCE} dropped":
                classification_metrics(gold, [policy_label(floored[i]) for i in rows[s]]),
            f"majority class ({train_majority}, from train)": classification_metrics(gold, [train_majority] * len(gold)),
        }
    min_domains = {k: {m: classification_metrics([claims[i].label for i in rows["train"]],
                                                 [policy_label(judged[i], k) for i in rows["train"]])[m]
                       for m in ("accuracy", "macro_f1")} for k in (1, 2, 3)}
    return {
        "data": str(path), "split": split, "claims": {s: len(r) for s, r in rows.items()},
        "pool_sentences": len(doc_ids), "annotations": sum(len(c.evidences) for c in claims),
        "embed_model": embedder.model_name,
        "retrieval": retrieval, "linear_weight_sweep_train": sweep, "linear_weight": best_w,
        "policy": policy, "min_domains_train": min_domains, "current_min_domains": scoring.MIN_DOMAINS,
    }


def format_report(report: dict) -> str:
    split = report["split"]
    splits = ["train"] if split == "train" else ["train", split]
    c = report["claims"]
    lines = [f"CLIMATE-FEVER: {c['all']} claims (train {c['train']}, dev {c['dev']}); pool of "
             f"{report['pool_sentences']} distinct sentences ({report['annotations']} annotations)", "",
             "Retrieval (gold = the claim's SUPPORTS/REFUTES sentences; claims without any left out)"]
    for name, by in report["retrieval"].items():
        cells = "   ".join(f"{s}: recall@5 {by[s]['recall@5']:.4f} MRR {by[s]['mrr']:.4f} MAP@5 {by[s]['map@5']:.4f}"
                           f" (n={by[s]['claims']})" for s in splits)
        lines.append(f"  {name:<16} {cells}")
    lines += ["", "Verdict policy with oracle stances (gold evidence labels; measures core/verdict/scoring.py, "
              "not stance detection)"]
    for s in splits:
        for name, m in report["policy"][s].items():
            lines.append(f"  {s:<5} {name:<52} accuracy {m['accuracy']:.4f} macro-F1 {m['macro_f1']:.4f}")
    m = report["policy"][splits[-1]]["policy"]
    labels = list(m["confusion"])
    short = {"SUPPORTS": "SUP", "REFUTES": "REF", "NOT_ENOUGH_INFO": "NEI", "DISPUTED": "DIS"}
    lines += ["", f"  confusion ({splits[-1]}, gold rows x predicted columns): "
              + " ".join(f"{short.get(p, p):>5}" for p in labels)]
    for g in labels:
        lines.append(f"  {short.get(g, g):>52} " + " ".join(f"{m['confusion'][g][p]:>5}" for p in labels))
    lines += ["", f"  train, if SUPPORTED/REFUTED needed k independent articles (now {report['current_min_domains']}): "
              + "; ".join(f"k={k}: accuracy {v['accuracy']:.4f} macro-F1 {v['macro_f1']:.4f}"
                          for k, v in report["min_domains_train"].items())]
    return "\n".join(lines)
