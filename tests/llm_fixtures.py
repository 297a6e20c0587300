"""The fake OpenAI-compatible server and a real client pointed at it, for every test module that talks
to an LLM: `from tests.llm_fixtures import fake, llm  # noqa: F401` makes them available."""

from __future__ import annotations

import pytest

from core.llm.client import OpenAICompatibleLLM
from tests.fakes.openai_api import FakeOpenAI

API_KEY = "sk-secret-test-key"


@pytest.fixture
async def fake():
    f = await FakeOpenAI().start()
    yield f
    await f.stop()


@pytest.fixture
async def llm(fake):
    # 3 s, not 1: in the full suite on 2 loaded cores a request once failed to reach the fake within
    # 1 s (test_llm's 429 case: "LLM timed out", no request seen). Still well under the 5 s of the
    # fake's slow replies, which the timeout tests of adjudicate, queries and stance rely on.
    client = OpenAICompatibleLLM(fake.base_url, API_KEY, "fake-model", timeout_s=3.0)
    yield client
    await client.aclose()
