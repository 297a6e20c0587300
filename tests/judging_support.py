"""Builders shared by the judging tests (ranking, stance, scoring, adjudication, verify): plain data only."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from core.evidence.base import Evidence
from schema.models import Verdict
from core.numeric import NumericCheck
from core.evidence.ranking import Ranked
from core.verdict.scoring import Judged
from core.verdict.stance import Stance
from tests.fakes.openai_api import user_text


def ev(url: str, title: str = "", snippet: str = "", *, source_type: str = "web", verdict: Verdict | None = None,
       rating: str = "", published: datetime | None = None, publisher: str = "") -> Evidence:
    return Evidence(url=url, title=title, snippet=snippet, source="test", source_type=source_type,  # type: ignore[arg-type]
                    verdict=verdict, rating=rating, published_at=published, publisher=publisher)


def judged(domain: str, supports: float = 0.0, refutes: float = 0.0, *, credibility: float = 0.5,
           recency: float = 0.5, relevance: float = 0.8, numeric: str = "n/a", method: str = "llm",
           fc: Verdict | None = None, published: datetime | None = None, snippet: str = "text",
           url: str | None = None) -> Judged:
    label = "supports" if supports >= max(refutes, 1 - supports - refutes) else (
        "refutes" if refutes >= 1 - supports - refutes else "neutral")
    st = Stance(label=label, supports=supports, refutes=refutes, neutral=round(max(0.0, 1 - supports - refutes), 4),
                method=method, factcheck_verdict=fc, confidence=max(supports, refutes) or 0.2)  # type: ignore[arg-type]
    e = ev(url or f"https://{domain}/story-{abs(hash((domain, supports, refutes, snippet))) % 10_000}", f"Title {domain}",
           snippet, published=published)
    r = Ranked(e, domain, relevance, credibility, recency, relevance + 0.3 * (credibility - 0.5))
    return Judged(r, st, NumericCheck(numeric, "detail" if numeric != "n/a" else ""))  # type: ignore[arg-type]


def utc(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


_PASSAGE = re.compile(r"<passage id=(\d+) source=(\S+?)(?: \(|\s|>)", re.S)


def passages(body: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(id, source, text) of every passage in a recorded stance request."""
    text = user_text(body)
    out = []
    for m in re.finditer(r"<passage id=(\d+) source=([^\s>]+)[^>]*>\n(.*?)\n</passage>", text, re.S):
        out.append((int(m.group(1)), m.group(2), m.group(3)))
    return out


def stance_by_keyword(rules: dict[str, str]):
    """A fake-LLM responder for "stance" calls: a passage containing a keyword gets that label."""
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        items = []
        for pid, _src, text in passages(body):
            label = next((lab for kw, lab in rules.items() if kw.lower() in text.lower()), "neutral")
            p = {"supports": 0.05, "refutes": 0.05, "neutral": 0.05}
            p[label] = 0.9
            items.append({"id": pid, "label": label, **p})
        return {"items": items}
    return respond
