"""`tipline eval realistic`: whole offline checks of chat-like messages against the seed knowledge base.

Reads eval/realistic/*.jsonl (format: eval/realistic/FORMAT.md), keeps the rows written against the seed
(`kb == "seed"`), splits them by fact-check (a fact-check's rows are all dev or all train; no-claim rows by
their text) and runs each through `Engine.check`, as a user's message would go. What counts as right:

- restate / question / condition: the verdict is the target fact-check's, inherited from that fact-check or
  from its twin (eval/realistic/twins.tsv: another seed fact-check of the same claim);
- deny: no verdict inherited from the target or its twin (the card may show its rating as disputed);
- near_miss: no verdict inherited at all;
- no_claim: answered "not checkable".

Also reported: precision of inherited verdicts (of all messages that got one, how many got the right one:
near misses and denials count against it) and the coverage of restatements.

With `--euvs-cases` the rows written against EUvsDisinfo run instead, over a data dir holding its cases and no
seed (`euvs_rows`): a dense knowledge base, as real fact-checks of one region's narratives are.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.images import NoTextInImage
from bot.settings import Settings
from evals.evaluation import EvalDataError
from core.intake.message import EmptyInput
from schema.models import Result, Verdict

ASSERTING = ("restate", "question", "condition")
KINDS = (*ASSERTING, "deny", "near_miss", "no_claim")
DEV_SHARE = 3  # one fact-check in three is dev


@dataclass(frozen=True)
class Row:
    text: str
    lang: str
    kind: str
    target: str
    source: str  # the file it came from
    twins: frozenset[str] = frozenset()  # other fact-checks of the target's claim (twins.tsv)
    written_for: str = ""  # the target as the row names it, when `target` was resolved (the split keys on it)

    def is_target(self, url: str | None) -> bool:
        return bool(url) and bool(self.target) and (url == self.target or url in self.twins)

    @property
    def split(self) -> str:
        key = self.written_for or self.target or self.text
        return "dev" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % DEV_SHARE == 0 else "train"


def read_twins(path: Path) -> dict[str, frozenset[str]]:
    """twins.tsv: tab-separated pairs of fact-check urls that check the same claim (and a note); '#' comments."""
    groups: dict[str, set[str]] = defaultdict(set)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                a, b = line.split("\t")[:2]
                groups[a].add(b)
                groups[b].add(a)
    return {url: frozenset(other) for url, other in groups.items()}


def read_rows(paths: Iterable[Path], kb: str = "seed") -> list[Row]:
    rows: list[Row] = []
    paths = list(paths)
    twins = read_twins(paths[0].parent / "twins.tsv") if paths and kb == "seed" else {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("kb", "seed") != kb or d.get("kind") not in KINDS:
                continue
            target = d.get("target", "")
            rows.append(Row(d["text"], d.get("lang", "?"), d["kind"], target, f"{path.name}:{n}",
                            twins.get(target, frozenset())))
    return rows


def inherited(result: Result) -> str | None:
    """The url of the fact-check whose verdict the answer inherited, or None when none was. A fact-check rated
    "No evidence" passes on Unverified, so the verdict alone cannot say."""
    if result.inherited_from is not None:
        return result.inherited_from
    if result.verdict in (Verdict.NOT_ENOUGH_EVIDENCE, Verdict.NOT_CHECKABLE):
        return None
    auto = [m for m in result.matches if m.tier == "auto"]
    return auto[0].url if auto else (result.citations[0].url if result.citations else "")


def inherited_rightly(row: Row, result: Result, verdicts: dict[str, Verdict]) -> bool:
    """An asserting row answered with the verdict of its target (or the target's twin), from that fact-check."""
    got = inherited(result)
    return row.kind in ASSERTING and got is not None and row.is_target(got) and result.verdict == verdicts.get(got)


def right(row: Row, result: Result, verdicts: dict[str, Verdict]) -> bool:
    got = inherited(result)
    if row.kind in ASSERTING:
        return inherited_rightly(row, result, verdicts)
    if row.kind == "deny":
        return not row.is_target(got) and result.verdict != Verdict.NOT_CHECKABLE
    if row.kind == "near_miss":
        return got is None and result.verdict != Verdict.NOT_CHECKABLE
    return result.verdict == Verdict.NOT_CHECKABLE


@dataclass
class Outcome:
    rows: int = 0
    right: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    inherited_right: int = 0
    inherited_all: int = 0
    not_checkable_asserting: int = 0
    failures: list[dict[str, object]] = field(default_factory=list)

    def add(self, row: Row, result: Result, ok: bool, verdicts: dict[str, Verdict]) -> None:
        self.rows += 1
        for key in ((row.lang, row.kind), (row.lang, "*"), ("*", row.kind), ("*", "*")):
            self.right[key][0] += ok
            self.right[key][1] += 1
        got = inherited(result)
        if got is not None:
            self.inherited_all += 1
            self.inherited_right += inherited_rightly(row, result, verdicts)
        if row.kind in ASSERTING and result.verdict == Verdict.NOT_CHECKABLE and got is None:  # not a rating
            self.not_checkable_asserting += 1
        if not ok:
            top = result.matches[0] if result.matches else None
            self.failures.append({"source": row.source, "lang": row.lang, "kind": row.kind, "text": row.text,
                                  "verdict": result.verdict.value, "target": row.target,
                                  "top": top.url if top else None, "top_p": top.similarity if top else None,
                                  "top_tier": top.tier if top else None})

    def figures(self) -> dict:
        """The outcome as JSON-able figures (what `tipline bench report` keeps and renders): right/total by
        language and kind ("*" is every language or every kind)."""
        langs = sorted({lang for lang, _ in self.right if lang != "*"})
        by = {lang: {kind: list(self.right[(lang, kind)]) for kind in (*KINDS, "*") if (lang, kind) in self.right}
              for lang in [*langs, "*"]}
        asserting = [by["*"].get(k, [0, 0]) for k in ASSERTING] if "*" in by else []
        return {"rows": self.rows, "right": by, "inherited": [self.inherited_right, self.inherited_all],
                "restatements": [sum(ok for ok, _ in asserting), sum(n for _, n in asserting)],
                "asserting_turned_away": self.not_checkable_asserting}

    def table(self) -> str:
        return table(self.figures())


def rate(pair: list[int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def table(figures: dict) -> str:
    """What `tipline eval realistic` prints: right/total by language and kind, then the three summary figures."""
    lines = ["lang   " + " ".join(f"{k:>10}" for k in (*KINDS, "all"))]
    for lang, kinds in figures["right"].items():
        cells = []
        for kind in (*KINDS, "*"):
            ok, n = kinds.get(kind, (0, 0))
            cells.append(f"{ok:>4}/{n:<5}" if n else f"{'':>10}")
        lines.append(f"{lang:<6} " + " ".join(cells))
    (ir, ia), rs = figures["inherited"], figures["restatements"]
    lines.append(f"inherited verdicts: precision {rate([ir, ia]):.3f} ({ir}/{ia}); "
                 f"restatements answered right {rate(rs):.3f}; asserting messages turned away "
                 f"{figures['asserting_turned_away']}")
    return "\n".join(lines)


async def run_realistic(check: Callable[[str], Awaitable[Result]], rows: list[Row],
                        verdicts: dict[str, Verdict], *, split: str = "dev",
                        progress: Callable[[int, int], None] | None = None, per_kind: int | None = None) -> Outcome:
    """`per_kind`: only the first that many rows of each kind (in file order): a small fixed sample."""
    todo = [r for r in rows if split == "all" or r.split == split]
    if per_kind is not None:
        taken: Counter[str] = Counter()
        sample = []
        for r in todo:
            if taken[r.kind] < per_kind:
                taken[r.kind] += 1
                sample.append(r)
        todo = sample
    outcome = Outcome()
    for n, row in enumerate(todo, start=1):
        try:
            result = await check(row.text)
        except (EmptyInput, NoTextInImage):  # nothing to check (emoji only, no text in the picture): as for no claim
            result = Result(id="-", text=row.text, verdict=Verdict.NOT_CHECKABLE, label="", confidence=1.0,
                            reasoning="")
        outcome.add(row, result, right(row, result, verdicts), verdicts)
        if progress is not None:
            progress(n, len(todo))
    return outcome


def euvs_rows(rows: list[Row], cases: Path) -> tuple[list[Row], dict[str, Verdict]]:
    """EUvsDisinfo rows name their target by vclaim_id: point them at the case's url, as `tipline ingest` of
    cases.tsv stores it, with the cases that state the very same narrative (word for word) as its twins. Every
    case is a debunked narrative, so its verdict is the one its rating maps to."""
    import csv

    from core.ingest.ratings import normalize_rating

    with cases.open(encoding="utf-8", newline="") as f:
        read = list(csv.DictReader(f, delimiter="\t"))
    urls = {r["vclaim_id"]: r["url"] for r in read}
    said: dict[str, set[str]] = defaultdict(set)
    for r in read:
        said[" ".join(r["vclaim"].lower().split())].add(r["url"])
    same = {url: frozenset(group - {url}) for group in said.values() for url in group}
    verdict = normalize_rating("Disinformation")  # as `tipline ingest` stores the cases' one rating
    mapped = [Row(r.text, r.lang, r.kind, urls.get(r.target, ""), r.source,
                  same.get(urls.get(r.target, ""), frozenset()), r.target) for r in rows]
    return mapped, {url: verdict for url in urls.values()}


async def evaluate(settings: Settings, data: Path, *, split: str = "dev", per_kind: int | None = None,
                   progress: Callable[[int, int], None] | None = None, euvs_cases: Path | None = None,
                   screenshots: bool = False) -> Outcome:
    """Whole offline checks (`app.engine.check`, as a user's message goes) of data/*.jsonl's seed rows over
    the knowledge base of `settings`' data dir, as `tipline check` opens it (the seed loaded on first start):
    what `tipline eval realistic` and `tipline bench report` run. With `euvs_cases` (EUvsDisinfo's cases.tsv),
    the rows written against EUvsDisinfo instead, over a data dir that holds those cases (`tipline ingest`)
    and no seed: a dense knowledge base of one region's narratives, where near misses have many neighbours.
    With `screenshots`, each row is drawn as a Telegram channel post (evals/bench_ocr.py: channel_post) and checked
    as `tipline check --image` checks it: read by Tesseract, its frame set aside, then checked."""
    from bot.app import build_app
    from core.matching.knowledge_base import load_seed_factchecks

    paths = sorted(Path(data).glob("*.jsonl"))
    if euvs_cases is None:
        rows = read_rows(paths)
        verdicts = {fc.url: fc.verdict for fc in load_seed_factchecks()}
    else:
        rows, verdicts = euvs_rows(read_rows(paths, "euvsdisinfo"), euvs_cases)
        settings = settings.model_copy(update={"seed_on_start": False})
    if not rows:
        raise EvalDataError(f"{data}: no *.jsonl rows written against that knowledge base")
    async with build_app(settings.model_copy(update={"offline": True}), one_shot=True) as app:
        check: Callable[[str], Awaitable[Result]] = app.engine.check
        if screenshots:
            from bot.check_service import CheckService
            from evals.bench_ocr import channel_post

            service = CheckService(app.engine, images=app.images)

            async def as_screenshot(text: str) -> Result:
                return await service.check_image(channel_post(text, len(text)))

            check = as_screenshot

        return await run_realistic(check, rows, verdicts, split=split, progress=progress, per_kind=per_kind)


def counts(rows: list[Row]) -> Counter[tuple[str, str, str]]:
    return Counter((r.split, r.lang, r.kind) for r in rows)
