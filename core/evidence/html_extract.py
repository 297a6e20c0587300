"""Main text and metadata from an HTML page: JSON-LD first, then OpenGraph/meta, then readable text.

    info = extract_page(html, url)   # -> PageInfo; never raises on hostile input

A small tokenizer of our own (`tokenize`) rather than the stdlib `html.parser`: the stdlib one re-scans
its buffer on unfinished constructs and goes quadratic on hostile input (50 KB of "<x " took 46 s,
200 KB of "<!--" 58 s). Here every search runs forward from the current position and a failed search
ends the document, so the work is linear in its size. No tree is kept, so deep nesting costs nothing.
Input is already capped by the fetcher (2 MB); tags, attribute values, JSON-LD blocks and the collected
text are capped again so a megabyte attribute or a huge script cannot blow up memory or JSON parsing.
JSON nested deeper than Python's recursion limit is skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from html import unescape
from typing import Any

from schema.models import Verdict
from core.ingest.ratings import normalize_rating

_SKIP = frozenset({"script", "style", "nav", "footer", "header", "aside", "noscript", "template", "svg",
                   "form", "button", "select", "iframe", "object", "canvas", "math"})
_BLOCK = frozenset({"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
                    "blockquote", "tr", "td", "th", "pre", "figcaption", "dd", "dt", "main"})
MAX_ATTR = 4_000
MAX_JSONLD_BLOCK = 300_000
MAX_JSONLD_BLOCKS = 20
MAX_TEXT = 60_000
MAX_JSON_NODES = 20_000


@dataclass
class ClaimReviewInfo:
    claim: str = ""
    rating: str = ""
    verdict: Verdict = Verdict.NOT_ENOUGH_EVIDENCE
    author: str = ""
    url: str = ""
    date: str = ""


@dataclass
class PageInfo:
    url: str
    title: str = ""
    description: str = ""
    site_name: str = ""
    published: datetime | None = None
    language: str = ""
    text: str = ""
    claim_reviews: list[ClaimReviewInfo] = field(default_factory=list)


def _cap(value: str | None, n: int = MAX_ATTR) -> str:
    return (value or "")[:n]


_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "noscript", "plaintext"})
_TAG_NAME = re.compile(r"/?([a-zA-Z][a-zA-Z0-9:_-]{0,40})")
_ATTR = re.compile(r"""([^\s"'>/=]{1,100})(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_OPEN = re.compile(r"<[a-zA-Z/!?]")  # a "<" that can start markup; any other "<" is just text
MAX_TAGS = 100_000  # real pages have a few thousand; past this it is an attack, stop reading
MAX_ATTRS = 50


def _attrs(text: str) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for m in _ATTR.finditer(text):
        value = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4)
        out.append((m.group(1).lower(), unescape(value[:MAX_ATTR]) if value is not None else None))
        if len(out) >= MAX_ATTRS:
            break
    return out


def tokenize(html: str, handler: _Extractor) -> None:
    """Drive `handler` with start tags, end tags and text, in one forward pass."""
    pos, n, tags = 0, len(html), 0
    lower_cache: str | None = None
    while pos < n and tags < MAX_TAGS:
        found = _OPEN.search(html, pos)
        if found is None:
            handler.handle_data(unescape(html[pos:]))
            return
        lt = found.start()
        if lt > pos:
            handler.handle_data(unescape(html[pos:lt]))
        if html.startswith("<!--", lt):
            end = html.find("-->", lt + 4)
            if end < 0:
                return  # an unclosed comment swallows the rest, as in browsers
            pos = end + 3
            continue
        nxt = html[lt + 1: lt + 2]
        if nxt in ("!", "?"):  # doctype, CDATA, processing instruction: skipped
            end = html.find(">", lt + 2)
            if end < 0:
                return
            pos = end + 1
            continue
        m = _TAG_NAME.match(html, lt + 1)
        if not m:  # "</" + something that is not a name
            handler.handle_data("</")
            pos = lt + 2
            continue
        end = html.find(">", m.end())
        if end < 0:
            return  # an unfinished tag at the end: nothing more to read
        tags += 1
        name = m.group(1).lower()
        if html[lt + 1] == "/":
            handler.handle_endtag(name)
            pos = end + 1
            continue
        handler.handle_starttag(name, _attrs(html[m.end(): min(end, m.end() + 8 * MAX_ATTR)]))
        pos = end + 1
        if name in _RAW_TEXT and not html[end - 1: end] == "/":
            # Raw text runs to the matching end tag: markup inside a <script> is not markup.
            if lower_cache is None:
                lower_cache = html.lower()
            close = lower_cache.find("</" + name, pos)
            if close < 0:
                close = n
            text = html[pos:close]
            handler.handle_data(text if name in ("script", "style", "xmp", "plaintext") else unescape(text))
            gt = html.find(">", close)
            if close < n:
                handler.handle_endtag(name)
            pos = n if close >= n or gt < 0 else gt + 1


class _Extractor:
    def __init__(self) -> None:
        self.skip_depth = 0
        self.in_title = False
        self.in_jsonld = False
        self.article_depth = 0
        self.title_parts: list[str] = []
        self.jsonld: list[str] = []
        self._jsonld_buf: list[str] = []
        self._jsonld_size = 0
        self.meta: dict[str, str] = {}
        self.lang = ""
        self.text: list[str] = []
        self.article_text: list[str] = []
        self.text_size = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): _cap(v) for k, v in attrs[:50] if k}
        if tag == "html" and not self.lang:
            self.lang = a.get("lang", "")[:20]
        elif tag == "meta":
            key = (a.get("property") or a.get("name") or a.get("itemprop") or "").lower()
            if key and "content" in a and key not in self.meta and len(self.meta) < 200:
                self.meta[key] = a["content"]
        elif tag == "title":
            self.in_title = True
        elif tag == "script" and a.get("type", "").lower().strip() == "application/ld+json":
            if len(self.jsonld) < MAX_JSONLD_BLOCKS:
                self.in_jsonld = True
                self._jsonld_buf, self._jsonld_size = [], 0
        if tag in _SKIP:
            self.skip_depth += 1
        elif tag == "article":
            self.article_depth += 1
        if tag in _BLOCK:
            self._add("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag == "script" and self.in_jsonld:
            self.in_jsonld = False
            self.jsonld.append("".join(self._jsonld_buf))
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag == "article":
            self.article_depth = max(0, self.article_depth - 1)
        if tag in _BLOCK:
            self._add("\n")

    def handle_data(self, data: str) -> None:
        if self.in_jsonld:
            if self._jsonld_size < MAX_JSONLD_BLOCK:
                self._jsonld_buf.append(data)
                self._jsonld_size += len(data)
            return
        if self.in_title:
            if sum(map(len, self.title_parts)) < 1000:
                self.title_parts.append(data)
            return
        if self.skip_depth == 0:
            self._add(data)

    def _add(self, data: str) -> None:
        if self.text_size >= MAX_TEXT:
            return
        self.text.append(data)
        if self.article_depth:
            self.article_text.append(data)
        self.text_size += len(data)


def _clean(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _iter_nodes(doc: Any) -> list[dict]:
    """Every JSON object in the document (@graph, lists, nesting), breadth-first, bounded."""
    out: list[dict] = []
    queue = [doc]
    seen = 0
    while queue and seen < MAX_JSON_NODES:
        node = queue.pop(0)
        seen += 1
        if isinstance(node, dict):
            out.append(node)
            queue.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            queue.extend(v for v in node[:500] if isinstance(v, dict | list))
    return out


def _types(node: dict) -> set[str]:
    t = node.get("@type")
    items = t if isinstance(t, list) else [t]
    return {str(x).rsplit("/", 1)[-1].lower() for x in items if isinstance(x, str)}


def _name(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, dict):
        value = value.get("name") or value.get("url") or ""
    return _cap(str(value), 300) if isinstance(value, str | int | float) else ""


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_date(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()[:40].replace("Z", "+00:00")
    for candidate in (text, text[:19], text[:10]):
        try:
            return datetime.fromisoformat(candidate)
        except ValueError:
            continue
    return None


def _claim_review(node: dict) -> ClaimReviewInfo:
    rating = node.get("reviewRating")
    rating = rating[0] if isinstance(rating, list) and rating else rating
    rating = rating if isinstance(rating, dict) else {}
    words = _name(rating.get("alternateName")) or _name(rating.get("name"))
    verdict = normalize_rating(words, _num(rating.get("ratingValue")), _num(rating.get("bestRating")),
                               _num(rating.get("worstRating")))
    claim = node.get("claimReviewed")
    return ClaimReviewInfo(claim=_cap(claim if isinstance(claim, str) else "", 1000), rating=words,
                           verdict=verdict, author=_name(node.get("author")) or _name(node.get("publisher")),
                           url=_name(node.get("url")), date=_name(node.get("datePublished")))


def extract_page(html: str, url: str) -> PageInfo:
    parser = _Extractor()
    tokenize(html, parser)
    info = PageInfo(url=url, language=parser.lang.split("-")[0].lower())
    article: dict = {}
    for block in parser.jsonld:
        try:
            doc = json.loads(block.strip().removeprefix("<!--").removesuffix("-->"))
        except (ValueError, RecursionError):
            continue
        for node in _iter_nodes(doc):
            types = _types(node)
            if "claimreview" in types:
                info.claim_reviews.append(_claim_review(node))
            elif types & {"newsarticle", "article", "reportagenewsarticle", "blogposting", "webpage",
                          "analysisnewsarticle", "backgroundnewsarticle"} and not article:
                article = node
    meta = parser.meta
    info.title = (_name(article.get("headline")) or meta.get("og:title") or meta.get("twitter:title")
                  or _clean("".join(parser.title_parts)))[:500]
    info.description = (_name(article.get("description")) or meta.get("og:description")
                        or meta.get("description") or meta.get("twitter:description") or "")[:2000]
    info.site_name = (_name(article.get("publisher")) or meta.get("og:site_name") or "")[:200]
    info.published = (parse_date(article.get("datePublished")) or parse_date(meta.get("article:published_time"))
                      or parse_date(meta.get("datepublished")) or parse_date(meta.get("date")))
    info.language = info.language or _name(article.get("inLanguage")).split("-")[0].lower()[:8]
    body = _clean("".join(parser.article_text)) if parser.article_text else ""
    # An <article> with almost nothing in it (teasers, a wrapper around the headline) is not the story.
    info.text = body if len(body) >= 200 else _clean("".join(parser.text))
    if not info.text and isinstance(article.get("articleBody"), str):
        info.text = _clean(article["articleBody"][:MAX_TEXT])
    return info


_WORD = re.compile(r"\w{3,}", re.U)


def best_passage(text: str, claim: str, size: int = 600) -> str:
    """The window of `text` sharing the most words with the claim: what a judge should read."""
    if len(text) <= size:
        return text
    terms = {w.casefold() for w in _WORD.findall(claim)}
    sentences = re.split(r"(?<=[.!?])\s+|\n+", text)
    best, best_score = "", -1.0
    for i in range(len(sentences)):
        window = ""
        for s in sentences[i:]:
            if len(window) + len(s) > size and window:
                break
            window = f"{window} {s}".strip()
        words = {w.casefold() for w in _WORD.findall(window)}
        score = len(words & terms) - i * 1e-6  # ties: earlier wins
        if score > best_score:
            best, best_score = window, score
        if i > 2000:
            break
    return best[:size]
