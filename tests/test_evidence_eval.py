"""`tipline eval evidence`: the metrics, the split and the oracle verdict policy, on a tiny hand-written
file in the CLIMATE-FEVER format (our own sentences), through the real embedding model."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evals.evidence_eval import (
    ClimateClaim,
    ClimateEvidence,
    bm25_scores,
    classification_metrics,
    oracle_judged,
    order,
    policy_label,
    pool_of,
    read_climate_fever,
    retrieval_metrics,
    rrf_scores,
    run_evidence_eval,
    select,
    split_of,
)
from core.encoders.embeddings import DEFAULT_MODEL, Embedder
from evals.evaluation import EvalDataError
from core.encoders.sparse import terms
from tests.conftest import model_cache

ROOT = Path(__file__).resolve().parent.parent


def ev(eid: str, label: str, article: str, text: str) -> dict:
    return {"evidence_id": eid, "evidence_label": label, "article": article, "evidence": text,
            "entropy": 0.0, "votes": [label, label, None, None, None]}


# Our own sentences. Expected policy labels: c1 SUPPORTS (two articles support), c2 NOT_ENOUGH_INFO
# (gold SUPPORTS, but both supporting sentences come from one article), c3 DISPUTED, c4 REFUTES, c5 NEI.
ROWS = [
    {"claim_id": "c1", "claim": "Melting glaciers are raising the sea level.", "claim_label": "SUPPORTS", "evidences": [
        ev("Glacier:1", "SUPPORTS", "Glacier", "Meltwater from retreating glaciers flows into the ocean and lifts the sea level."),
        ev("Sea level:4", "SUPPORTS", "Sea level", "Ice lost from mountain glaciers is a major cause of the rising sea level."),
        ev("Harbour:2", "NOT_ENOUGH_INFO", "Harbour", "The old harbour was rebuilt in stone during the last century."),
        ev("Cheese:1", "NOT_ENOUGH_INFO", "Cheese", "Hard cheeses are aged for many months in cool cellars."),
        ev("Violin:3", "NOT_ENOUGH_INFO", "Violin", "A violin has four strings tuned in perfect fifths."),
    ]},
    {"claim_id": "c2", "claim": "Coral reefs bleach when the ocean gets too warm.", "claim_label": "SUPPORTS", "evidences": [
        ev("Coral bleaching:1", "SUPPORTS", "Coral bleaching", "Corals expel their algae and turn white when water temperatures rise."),
        ev("Coral bleaching:2", "SUPPORTS", "Coral bleaching", "Marine heatwaves have caused mass bleaching on tropical reefs."),
        ev("Harbour:2", "NOT_ENOUGH_INFO", "Harbour", "The old harbour was rebuilt in stone during the last century."),
        ev("Bicycle:5", "NOT_ENOUGH_INFO", "Bicycle", "Bicycle frames are usually made of steel, aluminium or carbon fibre."),
        ev("Chess:7", "NOT_ENOUGH_INFO", "Chess", "In chess the bishop moves diagonally across the board."),
    ]},
    {"claim_id": "c3", "claim": "Solar activity explains the recent warming.", "claim_label": "DISPUTED", "evidences": [
        ev("Sunspot:3", "SUPPORTS", "Sunspot", "Periods of many sunspots coincided with warmer decades in the past."),
        ev("Solar cycle:9", "REFUTES", "Solar cycle", "Solar output has slightly declined since the 1980s while temperatures kept climbing."),
        ev("Cheese:1", "NOT_ENOUGH_INFO", "Cheese", "Hard cheeses are aged for many months in cool cellars."),
        ev("Tennis:2", "NOT_ENOUGH_INFO", "Tennis", "A tennis match is played in sets of games."),
        ev("Bread:4", "NOT_ENOUGH_INFO", "Bread", "Sourdough bread rises with wild yeast and bacteria."),
    ]},
    {"claim_id": "c4", "claim": "Arctic sea ice has been growing for decades.", "claim_label": "REFUTES", "evidences": [
        ev("Arctic sea ice:2", "REFUTES", "Arctic sea ice", "Satellite records show the summer extent of Arctic sea ice shrinking since 1979."),
        ev("Polar ice:6", "REFUTES", "Polar ice", "The Arctic has lost much of its thick multi-year ice over recent decades."),
        ev("Violin:3", "NOT_ENOUGH_INFO", "Violin", "A violin has four strings tuned in perfect fifths."),
        ev("Chess:7", "NOT_ENOUGH_INFO", "Chess", "In chess the bishop moves diagonally across the board."),
        ev("Tennis:2", "NOT_ENOUGH_INFO", "Tennis", "A tennis match is played in sets of games."),
    ]},
    {"claim_id": "c5", "claim": "Volcanoes emit more carbon dioxide than people do.", "claim_label": "NOT_ENOUGH_INFO", "evidences": [
        ev("Volcano:8", "NOT_ENOUGH_INFO", "Volcano", "A volcano is an opening in the crust through which lava escapes."),
        ev("Bread:4", "NOT_ENOUGH_INFO", "Bread", "Sourdough bread rises with wild yeast and bacteria."),
        ev("Bicycle:5", "NOT_ENOUGH_INFO", "Bicycle", "Bicycle frames are usually made of steel, aluminium or carbon fibre."),
        ev("Harbour:2", "NOT_ENOUGH_INFO", "Harbour", "The old harbour was rebuilt in stone during the last century."),
        ev("Cheese:1", "NOT_ENOUGH_INFO", "Cheese", "Hard cheeses are aged for many months in cool cellars."),
    ]},
]
POLICY = {"c1": "SUPPORTS", "c2": "NOT_ENOUGH_INFO", "c3": "DISPUTED", "c4": "REFUTES", "c5": "NOT_ENOUGH_INFO"}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cf") / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def embedder(model_dir) -> Embedder:
    return Embedder(DEFAULT_MODEL, model_dir=model_dir)


def test_reads_the_file_and_pools_distinct_sentences(data):
    claims = read_climate_fever(data)
    assert [c.claim_id for c in claims] == ["c1", "c2", "c3", "c4", "c5"]
    assert claims[0].gold == {"Glacier:1", "Sea level:4"}
    assert claims[4].gold == set()
    ids, texts = pool_of(claims)
    assert len(ids) == len(set(ids)) == 16  # 25 annotations, shared filler sentences counted once
    assert texts[ids.index("Harbour:2")].startswith("The old harbour")


def test_bad_lines_are_one_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"claim_id": "1", "claim": "x", "claim_label": "TRUE", "evidences": []}) + "\n")
    with pytest.raises(EvalDataError, match="claim_label"):
        read_climate_fever(bad)
    bad.write_text('{"claim_id": "1"}\n')
    with pytest.raises(EvalDataError, match=":1:"):
        read_climate_fever(bad)


def test_split_is_deterministic_and_about_70_30():
    ids = [str(i) for i in range(2000)]
    first = [split_of(i) for i in ids]
    assert first == [split_of(i) for i in reversed(ids)][::-1]  # order-independent, repeatable
    share = first.count("train") / len(first)
    assert 0.66 < share < 0.74
    assert set(first) == {"train", "dev"}
    # Pinned: sha256 of the id, so the split (and docs/benchmarks.md's figures) is the same everywhere.
    assert [split_of(i) for i in ("0", "11", "16", "17", "18")] == ["train", "dev", "dev", "dev", "train"]
    claims = [ClimateClaim(i, "c", "SUPPORTS", ()) for i in ids[:50]]
    train, dev = select(claims, "train"), select(claims, "dev")
    assert {c.claim_id for c in train} | {c.claim_id for c in dev} == set(ids[:50])
    assert not {c.claim_id for c in train} & {c.claim_id for c in dev}
    assert len(select(claims, "all")) == 50


def test_retrieval_metrics_by_hand():
    def claim(cid, gold):
        return ClimateClaim(cid, "c", "SUPPORTS", tuple(ClimateEvidence(g, "SUPPORTS", "a", "t") for g in gold))
    claims = [claim("q1", ["a", "b"]), claim("q2", ["c"]), claim("q3", [])]
    doc_ids = ["a", "b", "c", "x", "y", "z", "w"]
    ranked = np.array([[3, 0, 4, 5, 6, 1, 2],   # a at rank 2, b at rank 6: recall@5 1/2, RR 1/2
                       [2, 0, 1, 3, 4, 5, 6],   # c first: recall@5 1, RR 1
                       [0, 1, 2, 3, 4, 5, 6]])  # no gold: left out
    m = retrieval_metrics(doc_ids, ranked, claims, [0, 1, 2])
    assert m["claims"] == 2
    assert m["recall@5"] == pytest.approx(0.75)
    assert m["mrr"] == pytest.approx(0.75)
    assert m["map@5"] == pytest.approx(((1 / 2) / 2 + 1.0) / 2)


def test_bm25_matches_the_formula():
    docs = ["solar panels on roofs", "wind turbines", "solar wind and solar storms"]
    s = bm25_scores(["solar"], docs)
    lengths = [len(terms(d)) for d in docs]
    avgdl = sum(lengths) / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def w(tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
    assert s[0].tolist() == pytest.approx([w(1, lengths[0]), 0.0, w(2, lengths[2])])
    assert order(s)[0][:2].tolist() == [2, 0]


def test_rrf_by_hand():
    a = np.array([[0, 1, 2]])
    b = np.array([[2, 1, 0]])
    fused = rrf_scores([a, b], k=1)
    # doc 0: ranks 1 and 3; doc 1: 2 and 2; doc 2: 3 and 1
    assert fused[0].tolist() == pytest.approx([1 / 2 + 1 / 4, 1 / 3 + 1 / 3, 1 / 4 + 1 / 2])


def test_classification_metrics_by_hand():
    gold = ["SUPPORTS", "SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"]
    pred = ["SUPPORTS", "NOT_ENOUGH_INFO", "REFUTES", "NOT_ENOUGH_INFO"]
    m = classification_metrics(gold, pred)
    assert m["accuracy"] == 0.75
    # SUPPORTS P 1 R .5 F 2/3; REFUTES 1; NEI P .5 R 1 F 2/3; DISPUTED absent and never predicted: 0
    assert m["macro_f1"] == pytest.approx(round((2 / 3 + 1 + 2 / 3 + 0) / 4, 4))
    assert m["confusion"]["SUPPORTS"]["NOT_ENOUGH_INFO"] == 1
    assert m["per_class"]["NOT_ENOUGH_INFO"]["precision"] == 0.5


def test_oracle_policy_counts_articles_as_domains(data, embedder):
    claims = read_climate_fever(data)
    for c in claims:
        rel = (embedder.embed_sync([e.text for e in c.evidences]) @ embedder.embed_sync([c.claim])[0]).tolist()
        judged = oracle_judged(c, rel)
        assert [j.ranked.relevance for j in judged] == sorted(rel, reverse=True)
        assert policy_label(judged) == POLICY[c.claim_id], c.claim_id
    # One article supporting twice is one source; with a one-source rule it would be enough.
    c2 = claims[1]
    judged = oracle_judged(c2, [0.5] * 5)
    assert policy_label(judged, min_domains=1) == "SUPPORTS"
    assert policy_label(oracle_judged(claims[0], [0.5] * 5), min_domains=3) == "NOT_ENOUGH_INFO"


def test_full_run_agrees_with_an_independent_computation(data, embedder, tmp_path):
    report = run_evidence_eval(data, embedder, split="all", cache_dir=tmp_path)
    claims = read_climate_fever(data)
    ids, texts = pool_of(claims)
    q = embedder.embed_sync([c.claim for c in claims])
    d = embedder.embed_sync(texts)
    recalls, rrs = [], []
    for i, c in enumerate(claims):
        if not c.gold:
            continue
        ranking = [ids[j] for j in sorted(range(len(ids)), key=lambda j: -float(q[i] @ d[j]))]
        recalls.append(len(set(ranking[:5]) & c.gold) / len(c.gold))
        rrs.append(next(1 / (k + 1) for k, x in enumerate(ranking) if x in c.gold))
    dense = report["retrieval"]["dense"]["all"]
    assert dense["claims"] == 4
    assert dense["recall@5"] == pytest.approx(sum(recalls) / 4, abs=1e-4)
    assert dense["mrr"] == pytest.approx(sum(rrs) / 4, abs=1e-4)
    assert report["pool_sentences"] == 16 and report["annotations"] == 25
    policy = report["policy"]["all"]["policy"]
    assert policy["accuracy"] == 0.8  # c2 is the one miss (one article)
    # SUPPORTS P1 R.5; REFUTES 1; NEI P.5 R1; DISPUTED 1
    assert policy["macro_f1"] == pytest.approx(round((2 / 3 + 1 + 2 / 3 + 1) / 4, 4))
    assert policy["confusion"]["SUPPORTS"]["NOT_ENOUGH_INFO"] == 1
    assert list(tmp_path.glob("evidence-eval-*.npz"))  # evals/vector_cache.py
    assert run_evidence_eval(data, embedder, split="all", cache_dir=tmp_path) == report  # from the cache


def test_cli_prints_and_writes_the_report(data, model_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIPLINE_")}
    env.update({"TIPLINE_DATA_DIR": str(tmp_path / "data"), "TIPLINE_EMBED_MODEL_DIR": str(model_dir),
                "TIPLINE_MODEL_CACHE_DIR": str(model_cache(model_dir))})
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "eval", "evidence", "--data", str(data), "--split", "all",
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "recall@5" in proc.stdout and "macro-F1" in proc.stdout
    assert json.loads(out.read_text())["policy"]["all"]["policy"]["accuracy"] == 0.8
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    proc = subprocess.run([sys.executable, "-m", "adapters.main", "eval", "evidence", "--data", str(bad)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "not a CLIMATE-FEVER line" in proc.stderr
