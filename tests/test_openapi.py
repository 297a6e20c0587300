"""docs/openapi.json is what the code generates (`tipline openapi` rewrites it); tests/test_http_api.py asks
the running server every route it names."""

from __future__ import annotations

from pathlib import Path

from adapters.openapi import openapi, openapi_text

ROOT = Path(__file__).resolve().parents[1]


def test_the_checked_in_document_is_current():
    assert (ROOT / "docs" / "openapi.json").read_text(encoding="utf-8") == openapi_text(), \
        "run `tipline openapi` and commit docs/openapi.json"


def test_every_error_response_is_the_error_schema():
    doc = openapi()
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            for status, response in op["responses"].items():
                if int(status) >= 400 and path != "/healthz":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (path, method, status)
