"""Ranking: which of the gathered evidence the judge sees, best first, each with its scores.

Steps, in order (each drop is recorded with its reason, for the trace):
1. denied domains (admins' deny list) — never used, never cited;
2. homepages and category/tag/search pages — they are not about the claim, whatever their snippet says;
3. the same URL (normalised: scheme, `www.`, trailing slash, fragment and tracking parameters ignored);
4. near-duplicate text — syndicated wire copy on many sites is one source, not many independent ones:
   word 3-shingle Jaccard ≥ 0.5 (Broder's resemblance; a reprint with a new headline stays well above it)
   or embedding cosine ≥ 0.95 between the evidence texts;
   — `shortlist` does 1–4 without the model, and when more than `limit` items are left keeps the top
   `limit` by BM25 over the candidates, credibility and recency (≤ 2 per site): only those are embedded,
   which is what lets `verify` judge stances while the embeddings run (`rank_shortlist` does the rest);
5. relevance: cosine of the claim's and the evidence's (title + snippet) embeddings (the real ONNX
   model, off the event loop). Below `MIN_RELEVANCE` an item is dropped as off-topic;
6. score = relevance + 0.3·(credibility − 0.5) + 0.1·(recency − 0.5). The credibility term is the design's
   boost formula (docs/decisions/2026-11-29-notes-from-code.md); recency is a mild tie-breaker at a third of that;
7. at most 2 items per site (en.wikipedia.org and de.wikipedia.org are one site), then the top `limit`, which
   core/verdict/scoring.py's features read.

When an item keeps the first of several duplicates, the one kept is the more useful: a fact-check with a
verdict, then the more credible domain, then the newer, then the longer snippet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import numpy as np

from core.evidence.credibility import DomainRules, credibility, domain_of, site_of
from core.encoders.text_embedder import TextEmbedder
from core.evidence.base import Evidence
from core.encoders.sparse import bm25_scores

T = TypeVar("T")

PER_DOMAIN = 2
LIMIT = 8
# The floor removes off-topic hits and almost never a relevant one (docs/decisions/2026-11-29-notes-from-code.md,
# "MIN_RELEVANCE"). The English MiniLM gives near-random cosines between two Cyrillic texts, so for Russian the
# floor filters little; pass the English translation as a second claim text.
MIN_RELEVANCE = 0.25
SHINGLE_DUP = 0.5
COSINE_DUP = 0.95
CREDIBILITY_BOOST = 0.3
RECENCY_WEIGHT = 0.1
HALF_LIFE_DAYS = 365.0  # a year-old item counts half as recent
UNKNOWN_RECENCY = 0.5

_TRACKING = re.compile(r"^(?:utm_\w+|fbclid|gclid|yclid|mc_cid|mc_eid|ref|ref_src|cmpid|ocid|igshid|share)$", re.I)
_LISTING_SEGMENTS = {
    "tag", "tags", "category", "categories", "topic", "topics", "section", "sections", "author", "authors",
    "search", "archive", "archives", "label", "labels", "page", "hub", "latest", "index", "rubric", "tema",
    "rubrika", "teg", "tegi",
}
_SECTIONS = {
    "news", "world", "politics", "business", "economy", "markets", "science", "health", "tech", "technology",
    "sport", "sports", "opinion", "culture", "entertainment", "lifestyle", "video", "videos", "live", "home",
    "us", "uk", "europe", "asia", "africa", "americas", "middle-east", "climate", "environment", "fact-check",
    "fact-checks", "factcheck", "factchecks", "factchecking", "fakes", "myths", "latest-news", "breaking-news",
    "novosti", "politika", "ekonomika", "obshchestvo", "mir", "nauka",
}
_INDEX_FILES = re.compile(r"^(?:index|default|home)\.(?:html?|php|aspx?)$", re.I)
_WORDS = re.compile(r"\w+", re.UNICODE)


@dataclass
class Ranked:
    evidence: Evidence
    domain: str  # the registrable site (core.evidence.credibility.site_of): the unit of independence and of the cap
    relevance: float
    credibility: float
    recency: float
    score: float


@dataclass
class Ranking:
    items: list[Ranked]
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (url, reason)


def normalize_url(url: str) -> str:
    """Scheme, `www.`, port 80/443, trailing slash, fragment and tracking parameters don't make a new page."""
    parts = urlsplit(url.strip())
    host = domain_of(url)
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    path = re.sub(r"/+$", "", parts.path) or ""
    query = urlencode(sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                             if not _TRACKING.match(k)))
    return f"{host}{path}" + (f"?{query}" if query else "")


def is_listing_page(url: str) -> bool:
    """A homepage, section front, tag/category/author listing or site search: not about one claim."""
    parts = urlsplit(url.strip())
    segments = [s for s in parts.path.split("/") if s]
    if not segments or (len(segments) == 1 and _INDEX_FILES.match(segments[0])):
        q = dict(parse_qsl(parts.query))
        # "?p=123" / "?id=..." is an article on many CMSs; "?s=..." / "?q=..." is a search page
        return not any(k in q for k in ("p", "id", "article", "story", "news"))
    if segments[0].lower() in _LISTING_SEGMENTS or (len(segments) >= 2 and segments[-2].lower() in _LISTING_SEGMENTS):
        return True
    # "/world/", "/politics", "/fact-check/": a section front, not a story
    return len(segments) == 1 and not parts.query and segments[0].lower() in _SECTIONS


def recency_weight(published: datetime | None, now: datetime) -> float:
    """Exponential decay with a one-year scale; unknown dates sit in the middle."""
    if published is None:
        return UNKNOWN_RECENCY
    if published.tzinfo is None:
        published = published.replace(tzinfo=timezone.utc)
    age_days = max(0.0, (now - published).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def evidence_text(ev: Evidence) -> str:
    return " — ".join(x for x in (ev.title.strip(), ev.snippet.strip()) if x) or ev.url


def _shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = [w.casefold() for w in _WORDS.findall(text)]
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _preference(ev: Evidence, cred: float) -> tuple:
    published = ev.published_at.replace(tzinfo=ev.published_at.tzinfo or timezone.utc).timestamp() \
        if ev.published_at else float("-inf")
    return (ev.source_type == "factcheck" and ev.verdict is not None, cred, published, len(ev.snippet))


@dataclass
class Shortlist:
    """What `shortlist` keeps for the embedding step: (evidence, domain, credibility) triples."""

    items: list[tuple[Evidence, str, float]]
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (url, reason)


def shortlist(claim_texts: Sequence[str], evidence: Sequence[Evidence], *, rules: DomainRules | None = None,
              now: datetime | None = None, per_domain: int = PER_DOMAIN, limit: int = LIMIT) -> Shortlist:
    """Steps 1–4 without the model (denied, listing pages, same URL, shingle near-duplicates), then at most
    `limit` items by lexical relevance (BM25 of the claim texts over the candidates, scaled to the best),
    credibility and recency, ≤ `per_domain` per site. Only these are embedded: a search can return dozens
    of items and the judge sees `limit`, and the model (~10–25 ms of CPU a snippet) is a check's largest
    CPU cost. With `limit` or fewer candidates nothing is cut here."""
    now = now or datetime.now(timezone.utc)
    dropped: list[tuple[str, str]] = []
    kept: list[tuple[Evidence, str, float]] = []
    for ev in evidence:
        domain = domain_of(ev.domain or ev.url)
        cred = credibility(domain, rules)
        if cred is None:
            dropped.append((ev.url, "denied domain"))
        elif is_listing_page(ev.url):
            dropped.append((ev.url, "homepage or listing page"))
        elif not (ev.title.strip() or ev.snippet.strip()):
            dropped.append((ev.url, "no text"))
        else:
            kept.append((ev, domain, cred))

    # Same URL: keep the most useful copy.
    by_url: dict[str, tuple[Evidence, str, float]] = {}
    order: list[str] = []
    for item in kept:
        key = normalize_url(item[0].url)
        if key not in by_url:
            by_url[key] = item
            order.append(key)
        else:
            old = by_url[key]
            better, worse = (item, old) if _preference(item[0], item[2]) > _preference(old[0], old[2]) else (old, item)
            by_url[key] = better
            dropped.append((worse[0].url, "same URL"))
    unique = [by_url[k] for k in order]

    # Near-duplicates by shingles (reprints); visit the most useful first so the kept copy is the best one.
    shingles = {id(item[0]): _shingles(evidence_text(item[0])) for item in unique}
    survivors: list[tuple[Evidence, str, float]] = []
    for item in sorted(unique, key=lambda it: _preference(it[0], it[2]), reverse=True):
        dup = next((s for s in survivors if jaccard(shingles[id(item[0])], shingles[id(s[0])]) >= SHINGLE_DUP), None)
        if dup is None:
            survivors.append(item)
        else:
            dropped.append((item[0].url, f"near-duplicate of {dup[0].url}"))
    if len(survivors) <= limit:
        return Shortlist(survivors, dropped)

    lexical = bm25_scores([c for c in claim_texts if c.strip()] or [""], [evidence_text(ev) for ev, _, _ in survivors])
    best = lexical.max(axis=1, keepdims=True)
    lexical = (lexical / np.where(best > 0, best, 1.0)).max(axis=0)
    pre = {id(ev): rank_score(float(lexical[i]), cred, recency_weight(ev.published_at, now))
           for i, (ev, _, cred) in enumerate(survivors)}
    best_first = sorted(survivors, key=lambda it: pre[id(it[0])], reverse=True)
    out = _top(best_first, lambda it: site_of(it[1]), lambda it: it[0].url, per_domain, limit, dropped,
               "below the top before embedding")
    return Shortlist(out, dropped)


async def rank(claim_texts: Sequence[str], evidence: Sequence[Evidence], *, embedder: TextEmbedder,
               rules: DomainRules | None = None, now: datetime | None = None, per_domain: int = PER_DOMAIN,
               limit: int = LIMIT, min_relevance: float = MIN_RELEVANCE) -> Ranking:
    """Rank `evidence` for a claim. `claim_texts`: the claim, optionally its English translation too
    (relevance is the best cosine over them: the English model ranks English evidence for a Russian
    claim through the translation)."""
    short = shortlist(claim_texts, evidence, rules=rules, now=now, per_domain=per_domain, limit=limit)
    return await rank_shortlist(claim_texts, short, embedder=embedder, now=now, per_domain=per_domain,
                                limit=limit, min_relevance=min_relevance)


async def rank_shortlist(claim_texts: Sequence[str], short: Shortlist, *, embedder: TextEmbedder,
                         now: datetime | None = None, per_domain: int = PER_DOMAIN, limit: int = LIMIT,
                         min_relevance: float = MIN_RELEVANCE) -> Ranking:
    """Steps 4–7 on a shortlist: embedding near-duplicates, relevance and its floor, score, cap, top."""
    now = now or datetime.now(timezone.utc)
    dropped = list(short.dropped)
    unique = short.items
    if not unique:
        return Ranking([], dropped)

    texts = [evidence_text(ev) for ev, _, _ in unique]
    claims = [c for c in claim_texts if c.strip()] or [""]
    vecs = await embedder.embed([*claims, *texts])
    claim_vecs, ev_vecs = vecs[:len(claims)], vecs[len(claims):]
    relevance = (ev_vecs @ claim_vecs.T).max(axis=1)

    # Near-duplicates by meaning (the same story rewritten); the most useful copy is kept.
    visit = sorted(range(len(unique)), key=lambda i: _preference(unique[i][0], unique[i][2]), reverse=True)
    survivors: list[int] = []
    for i in visit:
        dup = next((j for j in survivors if float(ev_vecs[i] @ ev_vecs[j]) >= COSINE_DUP), None)
        if dup is None:
            survivors.append(i)
        else:
            dropped.append((unique[i][0].url, f"near-duplicate of {unique[dup][0].url}"))

    ranked: list[Ranked] = []
    for i in survivors:
        ev, domain, cred = unique[i]
        rel = float(np.clip(relevance[i], -1.0, 1.0))
        if rel < min_relevance:
            dropped.append((ev.url, f"off-topic (relevance {rel:.2f})"))
            continue
        rec = recency_weight(ev.published_at, now)
        ranked.append(Ranked(ev, site_of(domain), rel, cred, rec, rank_score(rel, cred, rec)))
    ranked.sort(key=lambda r: r.score, reverse=True)
    return Ranking(_top(ranked, lambda r: r.domain, lambda r: r.evidence.url, per_domain, limit, dropped,
                        "below the top"), dropped)


def rank_score(relevance: float, credibility: float, recency: float) -> float:
    """Step 6: relevance plus the credibility boost and a milder recency term."""
    return relevance + CREDIBILITY_BOOST * (credibility - 0.5) + RECENCY_WEIGHT * (recency - 0.5)


def _top(items: Sequence[T], site: Callable[[T], str], url: Callable[[T], str], per_domain: int, limit: int,
         dropped: list[tuple[str, str]], below: str) -> list[T]:
    """Step 7 on best-first `items`: at most `per_domain` per site, then the first `limit`; the rest dropped."""
    per: Counter[str] = Counter()
    out: list[T] = []
    for it in items:
        if per[site(it)] >= per_domain:
            dropped.append((url(it), f"more than {per_domain} from {site(it)}"))
        elif len(out) >= limit:
            dropped.append((url(it), below))
        else:
            per[site(it)] += 1
            out.append(it)
    return out

