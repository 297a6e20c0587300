"""JSON read with a nesting limit, so hostile input gets a sentence instead of a RecursionError.

Python's json decoder recurses once per level: a body nested 10,000 deep made the REST API answer 500
and `tipline ingest` "unexpected error (RecursionError…)". Readers that then walk the document
recursively (ClaimReview's nested objects) would fail the same way a little below the interpreter's
limit. Real fact-check files nest a handful of levels (ClaimReview: ~5); 64 leaves room to spare.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_JSON_DEPTH = 64


class JSONTooDeep(ValueError):
    """The JSON nests deeper than the limit; the message says so in one sentence."""


def depth_exceeds(doc: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when `doc` nests containers deeper than `limit` (walked with a stack, not recursion)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, level = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """json.loads, raising JSONTooDeep (not RecursionError) for a document nested deeper than `limit`.
    Malformed JSON still raises json.JSONDecodeError."""
    try:
        doc = json.loads(text)
    except RecursionError as exc:
        raise JSONTooDeep(f"the JSON is nested deeper than {limit} levels") from exc
    if depth_exceeds(doc, limit):
        raise JSONTooDeep(f"the JSON is nested deeper than {limit} levels")
    return doc
