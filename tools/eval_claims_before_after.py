"""Index the CLEF claims once, then MAP@5 for EN dev and RU dev (the loop of `tipline eval
claim-matching`) and `tipline bench match`'s match_latency on 100 dev tweets. Run from the tree to
measure: PYTHONPATH=<tree> .venv/bin/python tools/eval_claims_before_after.py OUT.json"""

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
import bot
from bot.settings import Settings
from bot.app import build_app
from core.evaluation import read_qrels, read_queries, read_verified_claims, score_run

try:
    from evals.bench_match import match_latency
    from evals.claim_eval import rank_queries
    from schema.models import FactCheck
except ImportError:  # a tree from before evals/ and schema/ (e.g. 0f18bd8, the "before" of docs/storage.md)
    from bot.bench_match import match_latency  # type: ignore[no-redef]
    from bot.claim_eval import rank_queries  # type: ignore[no-redef]
    from core.models import FactCheck  # type: ignore[no-redef]

D = Path("/work/shared/eval/clef2020-task2")
RU = Path("/work/main/eval/clef2020-ru/dev/tweets.queries.tsv")


async def main(out):
    claims = read_verified_claims(D / "verified_claims.docs.tsv")
    gold = read_qrels(D / "dev/tweet-vclaim-pairs.qrels")
    res = {"tree": str(Path(bot.__file__).parent.parent)}
    with tempfile.TemporaryDirectory(prefix="tl-eval-") as tmp:
        s = Settings(
            data_dir=Path(tmp),
            embed_model_dir=Path("/work/main/data/models/all-MiniLM-L6-v2-int8"),
            _env_file=None,
            gdelt_url=None,
        )
        async with build_app(s, seed=False) as app:
            fcs = [FactCheck(claim=c.claim, title=c.title, source_id=c.id, url=f"clef2020:{c.id}") for c in claims]
            by_id = {fc.id: fc.source_id for fc in fcs}
            t0 = time.time()
            await app.kb.add(fcs)
            res["ingest_claims_per_s"] = len(fcs) / (time.time() - t0)
            for tag, qpath in (("dev_en", D / "dev/tweets.queries.tsv"), ("dev_ru", RU)):
                ranked = await rank_queries(app.matcher, read_queries(qpath), by_id)
                sc = score_run({q: [d for d, _ in r] for q, r in ranked.items()}, gold)
                res[tag] = sc.__dict__ if hasattr(sc, "__dict__") else str(sc)
                print(tag, res[tag], flush=True)
            tweets = [q for _, q in read_queries(D / "dev/tweets.queries.tsv") if q.strip()][:100]
            res["latency_long"] = await match_latency(app, tweets, 2)
            print(res["latency_long"], flush=True)
    Path(out).write_text(json.dumps(res, indent=1, default=str))


asyncio.run(main(sys.argv[1]))
