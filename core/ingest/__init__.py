"""Ingestion of previously fact-checked claims: files in, `FactCheck` rows out (see detect.parse_bytes).

ratings.py maps a fact-checker's own rating words to our six verdicts (`normalize_rating`), for every
path a fact-check comes in by (files, feeds, ClaimReview pages).
"""

from core.ingest.base import IngestFormatError, ParsedRow
from core.ingest.detect import MAX_BYTES, detect_format, parse_bytes

__all__ = ["IngestFormatError", "MAX_BYTES", "ParsedRow", "detect_format", "parse_bytes"]
