"""The fake OpenAI-compatible server and a real client pointed at it, for every test module that talks
to an LLM: `from tests.llm_fixtures import fake, llm  # noqa: F401` makes them available."""

from __future__ import annotations

import pytest

from core.llm import OpenAICompatibleLLM
from tests.fakes.openai_api import FakeOpenAI

API_KEY = "sk-secret-test-key"


@pytest.fixture
async def fake():
    f = await FakeOpenAI().start()
    yield f
    await f.stop()


@pytest.fixture
async def llm(fake):
    client = OpenAICompatibleLLM(fake.base_url, API_KEY, "fake-model", timeout_s=1.0)
    yield client
    await client.aclose()
