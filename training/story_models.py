#!/usr/bin/env python3
"""Stories across languages: the CROSS and NATIVE same-story models refitted on the CLEF-2020 translated
stream plus our news-post story set (eval/stories), with and without the columns that read alignment
(e5 token states) and numbers (core/corroboration/story_model.py ROUTE_EXTRA), and the figures of each variant:

  - CLEF translations dev (tweets + our Russian translations; the figure docs/corroboration.md keeps),
  - eval/stories dev (ru/uk/en posts grouped by event, hard negatives of one city/person),
  - the held-out probes' probabilities (a Kyiv curfew in Russian and English; a Kyiv metro station; Zelensky
    meeting Macron against a Zelensky mobilisation law).

Fitting: both streams replayed as one train stream (the story set's times moved past CLEF's, so no pair
crosses corpora), logistic weights per route on its candidate pairs (Newton, L2), each route's threshold
the best pairwise F1 of the whole train clustering (`--balanced`, shipped: the mean of the two corpora's
F1); NATIVE on the Russian translations plus the story set's Cyrillic posts. Dev is only reported. The
shipped constants are the `worst` variant's, printed as CROSS_WEIGHTS = (...) etc.; the token states are
compared as a tracked message's are stored (core.encoders.token_align.stored_states).

usage (docs/decisions/2026-11-29-stories-across-languages.md):
  python -m training.story_models --data ../shared/eval/clef2020-task2 --cache /tmp/storycache --balanced \
      [--variants base,align,numbers,both,worst] [--show-wrong]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from datetime import datetime, timedelta
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bot.app import load_embedder, load_multilingual
from bot.settings import Settings
from core.corroboration.story_model import ALL_FEATURES, CROSS, NATIVE, StoryModel, prepare_text, route, story_models
from evals.story_detector import StoryDetector, pairwise_scores
from core.encoders.token_align import stored_states
from evals.corroboration_eval import Message, fit_routes, run_stream, translated_stream

ROOT = Path(__file__).resolve().parents[1]
STORY_START = datetime(2026, 1, 5)  # the story set's hour 0: far from CLEF's 2019-2020 tweets

# Pairs the acceptance test and the decision record name: (a, b, same story?)
PROBES = [
    ("В Киеве с понедельника вводят комендантский час с 22:00 до 6:00",
     "Kyiv city hall says a curfew from 10pm to 6am starts on Monday", True),
    ("В Киеве открыли новую станцию метро", "Kyiv city hall says a curfew from 10pm to 6am starts on Monday", False),
    ("В Киеве открыли новую станцию метро", "В Киеве с понедельника вводят комендантский час с 22:00 до 6:00", False),
    ("Зеленский встретился с Макроном", "Zelensky signs a law on mobilisation", False),
    ("Зеленский встретился с Макроном", "Зеленский подписал закон о мобилизации", False),
]


def story_stream(path: Path) -> tuple[list[Message], dict[str, set[str]]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    msgs = [Message(r["id"], r["channel"], STORY_START + timedelta(hours=float(r["hours"])), r["text"],
                    prepare_text(r["text"])) for r in rows]
    return msgs, {r["id"]: {r["event"]} for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="the clef2020-task2 directory")
    ap.add_argument("--translations", type=Path, default=ROOT / "eval" / "clef2020-ru")
    ap.add_argument("--stories", type=Path, default=ROOT / "eval" / "stories")
    ap.add_argument("--cache", type=Path, help="keep the vectors and token states here for reruns")
    ap.add_argument("--data-dir", type=Path, default=Path("data"))
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--variants", default="base,align,numbers,both")
    ap.add_argument("--show-wrong", action="store_true", help="print the last variant's wrong direct links")
    ap.add_argument("--balance", action="store_true", help="and the two corpora's pairs weigh alike in the fit")
    ap.add_argument("--balanced", action="store_true",
                    help="thresholds maximise the mean of CLEF's and the story set's train F1 (else the pooled F1)")
    ap.add_argument("--no-stories-train", action="store_true", help="fit on CLEF alone (the story set only reported)")
    args = ap.parse_args(argv)
    settings = Settings(data_dir=args.data_dir)
    embedder, multilingual = load_embedder(settings), load_multilingual(settings)
    e5: Any = getattr(multilingual, "inner", multilingual)  # the encoder under the seed-passages table

    def cached(texts: list[str], which: str, compute):
        key = hashlib.sha256(("\x1e".join(texts) + which).encode()).hexdigest()[:20]
        path = args.cache / f"xl_{which}_{key}.npz" if args.cache else None
        if path is not None and path.exists():
            z = np.load(path)
            if which != "states":
                return z["v"]
            return np.split(z["v"], z["cut"])
        out = compute(texts)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if which == "states":
                np.savez(path, v=np.concatenate(out), cut=np.cumsum([len(s) for s in out])[:-1])
            else:
                np.savez(path, v=out)
        return out

    def embed(msgs: list[Message]):
        texts = [m.text for m in msgs]
        mini = cached(texts, "mini", lambda t: np.asarray(embedder.embed_sync(t), np.float32))
        multi = cached(texts, "e5", lambda t: np.asarray(multilingual.queries_sync(t), np.float32))
        states = cached(texts, "states", lambda t: e5._with_states(t, True)[1])
        return mini, multi, [stored_states(s) for s in states]  # as a tracked message's read back

    streams: dict[str, tuple] = {}
    for split in ("train", "dev"):
        msgs, gold = translated_stream(args.data / split / "tweets.queries.tsv",
                                       args.translations / split / "tweets.queries.tsv",
                                       args.data / split / "tweet-vclaim-pairs.qrels")
        streams[f"clef_{split}"] = (msgs, gold, *embed(msgs))
        smsgs, sgold = story_stream(args.stories / f"{split}.jsonl")
        streams[f"stories_{split}"] = (smsgs, sgold, *embed(smsgs))

    def joined(*parts):
        msgs = [m for p in parts for m in p[0]]
        gold = {k: v for p in parts for k, v in p[1].items()}
        return (msgs, gold, np.vstack([p[2] for p in parts]), np.vstack([p[3] for p in parts]),
                [s for p in parts for s in p[4]])

    def russian(part):  # CLEF's Russian translations alone
        keep = [i for i, m in enumerate(part[0]) if m.id.startswith("ru")]
        return ([part[0][i] for i in keep], {k: v for k, v in part[1].items() if k.startswith("ru")},
                part[2][keep], part[3][keep], [part[4][i] for i in keep])

    def cyrillic(part):  # the story set's Cyrillic posts
        keep = [i for i, m in enumerate(part[0]) if not _latin(m.text)]
        return ([part[0][i] for i in keep], {part[0][i].id: part[1][part[0][i].id] for i in keep},
                part[2][keep], part[3][keep], [part[4][i] for i in keep])

    train = streams["clef_train"] if args.no_stories_train else joined(streams["clef_train"], streams["stories_train"])
    native_train = russian(streams["clef_train"]) if args.no_stories_train else \
        joined(russian(streams["clef_train"]), cyrillic(streams["stories_train"]))
    col = {f: k for k, f in enumerate(ALL_FEATURES)}
    base = [col["cos"], col["ent"], col["rare"]]
    align = [col["tok_lo"], col["tok_hi"]]
    nums = [col["num_same"], col["num_apart"]]
    variants = {"base": base, "align": base + align, "numbers": base + nums, "both": base + align + nums,
                "worst": base + align + [col["tok_worst"]] + nums}
    probe_vecs = (np.asarray(embedder.embed_sync([prepare_text(t) for p in PROBES for t in p[:2]]), np.float32),
                  np.asarray(multilingual.queries_sync([prepare_text(t) for p in PROBES for t in p[:2]]), np.float32),
                  [stored_states(s) for s in e5._with_states([prepare_text(t) for p in PROBES for t in p[:2]], True)[1]])
    shipped = story_models()
    results: dict[str, Sequence[StoryModel]] = {"shipped": shipped}
    for name in args.variants.split(","):
        cols = variants[name]
        msgs, gold, mini, multi, states = train
        parts = None if args.no_stories_train or not args.balanced else _parts(gold)
        models, info = fit_routes(msgs, mini, multi, gold, StoryModel(), states=states, columns=cols, l2=args.l2,
                                  parts=parts, balance=args.balance)
        nm, ng, nmini, nmulti, nstates = native_train
        parts = None if args.no_stories_train or not args.balanced else _parts(ng)
        native_models, _ = fit_routes(nm, nmini, nmulti, ng, StoryModel(), states=nstates, columns=cols, l2=args.l2,
                                      parts=parts, balance=args.balance)
        results[name] = (models[0], models[1], native_models[2])
    for name, routes in results.items():
        print(f"== {name}")
        for r, label in ((CROSS, "CROSS"), (NATIVE, "NATIVE")):
            m = routes[r]
            print(f"  {label}: weights {dict((f, round(w, 3)) for f, w in zip(ALL_FEATURES, m.weights) if w)} "
                  f"bias {m.bias:.3f} threshold {m.threshold:.4f}")
            print(f"    {label}_WEIGHTS = ({', '.join(f'{w:.4f}' for w in m.weights)})  {label}_BIAS = {m.bias:.4f}  "
                  f"{label}_THRESHOLD = {m.threshold:.4f}")
        for split in ("clef_train", "clef_dev", "stories_train", "stories_dev"):
            msgs, gold, mini, multi, states = streams[split]
            clusters = run_stream(msgs, mini, StoryModel(), multi=multi, others=list(routes[1:]), states=states).clusters()
            s = pairwise_scores(clusters, gold)
            extra = ""
            if split.startswith("clef"):
                own = np.mean([clusters[m.id] == clusters[f"ru{m.id}"] for m in msgs if f"ru{m.id}" in clusters])
                extra = f" own translation {own:.3f}"
            else:
                extra = f" cross-language pairs {_cross_recall(msgs, gold, clusters)}"
            print(f"  {split:14} P {s.precision:.3f} R {s.recall:.3f} F1 {s.f1:.3f} (pred {s.predicted_pairs}, "
                  f"gold {s.gold_pairs}){extra}")
            if split.startswith("stories"):  # this split's direct links, after its line
                print("    direct links: " + _route_errors(routes, msgs, mini, multi, states, gold))
                if args.show_wrong and name == args.variants.split(",")[-1]:
                    print("\n".join("      " + w for w in wrong_links(routes, msgs, mini, multi, states, gold)))
        print("  probes: " + "; ".join(f"{p:.3f}{'' if (p >= t) == same else ' WRONG'}"
                                        for p, t, same in _probes(routes, probe_vecs)))
    return 0


def _parts(gold: dict[str, set[str]]) -> list[dict[str, set[str]]]:
    """CLEF's messages and the story set's (whose ids have a "-")."""
    return [{k: v for k, v in gold.items() if "-" not in k}, {k: v for k, v in gold.items() if "-" in k}]


def _route_errors(models, msgs, mini, multi, states, gold) -> str:
    """Direct links by route on a stream: wrong / all linked candidate pairs."""
    det = run_stream(msgs, mini, models[0], record_pairs=True, multi=multi, others=list(models[1:]), states=states)
    out = []
    x = np.array([f for _, _, f in det.pairs])
    routes = np.array([int(route(det._latin[i], det._latin[j])) for i, j, _ in det.pairs])
    y = np.array([bool(gold[det.ids[i]] & gold[det.ids[j]]) for i, j, _ in det.pairs])
    for r, label in enumerate(("EN", "CROSS", "NATIVE")):
        sel = routes == r
        if not sel.any():
            continue
        link = models[r].score(x[sel]) >= models[r].threshold
        out.append(f"{label} {int((link & ~y[sel]).sum())} wrong / {int(link.sum())} linked (gold {int(y[sel].sum())})")
    return "; ".join(out)


def _latin(text: str) -> bool:
    from core.matching.features import latin_script
    return latin_script(text)


def _cross_recall(msgs, gold, clusters) -> str:
    """Gold pairs with one Latin and one Cyrillic post: linked / all."""
    by = {m.id: m for m in msgs}
    ids = [m.id for m in msgs]
    total = linked = 0
    for x, a in enumerate(ids):
        for b in ids[x + 1:]:
            if gold[a] & gold[b] and _latin(by[a].text) != _latin(by[b].text):
                total += 1
                linked += clusters[a] == clusters[b]
    return f"{linked}/{total}"


def _probes(models, vecs):
    mini, multi, states = vecs
    out = []
    for k, (a, b, same) in enumerate(PROBES):
        d = StoryDetector(model=models[0], dim=mini.shape[1], capacity=2, others=list(models[1:]),
                          multi_dim=multi.shape[1])
        d._store("a", "x", None, prepare_text(a), mini[2 * k], multi[2 * k], states[2 * k])
        d._store("b", "y", None, prepare_text(b), mini[2 * k + 1], multi[2 * k + 1], states[2 * k + 1])
        cand = np.array([0])
        r = d.routes(1, cand)
        m = models[int(r[0])]
        out.append((float(m.score(d.features(1, cand, r))[0]), m.threshold, same))
    return out



def wrong_links(models, msgs, mini, multi, states, gold) -> list[str]:
    """The directly linked pairs of different events, with their route and probability (for reading)."""
    det = run_stream(msgs, mini, models[0], record_pairs=True, multi=multi, others=list(models[1:]), states=states)
    out = []
    for i, j, f in det.pairs:
        r = int(route(det._latin[i], det._latin[j]))
        p = float(models[r].score(f[None, :])[0])
        if p >= models[r].threshold and not gold[det.ids[i]] & gold[det.ids[j]]:
            out.append(f"{('EN', 'CROSS', 'NATIVE')[r]} {p:.3f} | {msgs_by(msgs)[det.ids[i]]} | {msgs_by(msgs)[det.ids[j]]}")
    return out


def msgs_by(msgs):
    return {m.id: m.text for m in msgs}


if __name__ == "__main__":
    raise SystemExit(main())
