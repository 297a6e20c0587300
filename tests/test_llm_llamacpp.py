"""core.llm.client against a REAL llama.cpp server (tests/llamacpp_server.py: xllamacpp's llama-server code and the
Gemma 3 270M GGUF from PyPI, both in the test extra), not a fake: the wire format, grammar-constrained JSON
from `response_format` json_schema, the token limit in both spellings, a timeout, and what a check does when the
server dies. A 270M model proves the wire, not verdict quality; its answers are only checked against the schema.

One thread for the server: on the 2 shared cores a second llama.cpp thread spin-waiting against other work
slowed generation from ~58 to 3-7 tokens/s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from bot.app import build_app
from bot.digest import StorySummary
from core.verdict.adjudicate import _LLMVerdict
from core.intake.claims import _LLMAnswer
from core.llm.client import LLMError, OpenAICompatibleLLM
from core.evidence.queries import _LLMQueries
from core.verdict.stance import _Batch
from schema.models import Result
from tests.llamacpp_server import MODEL_NAME, LlamaServer, gguf_model, start_server


class Verdict(BaseModel):
    verdict: Literal["true", "false", "unclear"]
    confidence: int
    reason: str = Field(max_length=60)


class Essay(BaseModel):
    text: str  # unbounded: the model writes until the limit


ASK = "Answer with a JSON object."


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    server = start_server(gguf_model(), threads=1, parallel=2)
    yield server
    server.stop()


def client(server: LlamaServer, model: str = MODEL_NAME, **kw) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(server.base_url, "", model, **{"timeout_s": 60.0, **kw})


async def test_a_grammar_constrained_answer_over_the_real_wire(llama):
    llm = client(llama)
    started = time.monotonic()
    out = await llm.structured(ASK, "Water boils at 50C at sea level", Verdict, name="verdict", max_tokens=120)
    await llm.aclose()
    assert isinstance(out, Verdict) and len(out.reason) <= 60  # the schema held, maxLength included
    assert llm.usage.calls == 1 and 0 < llm.usage.completion_tokens <= 120 and llm.usage.prompt_tokens > 0
    assert llm.wire.limit == "max_tokens" and llm.wire.temperature  # llama-server takes both as sent
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("schema, name", [(_LLMAnswer, "claim_extraction"), (_LLMQueries, "query_plan"),
                                          (_Batch, "stance"), (_LLMVerdict, "adjudication"),
                                          (StorySummary, "digest_summary")])
async def test_every_schema_the_product_sends_is_taken_by_the_servers_grammar(llama, schema, name):
    """A schema llama.cpp could not turn into a grammar would be an HTTP error on every call; a few tokens of
    an answer (cut off, or complete) show the server took it."""
    llm = client(llama)
    try:
        await llm.structured(ASK, "Water boils at 50C at sea level", schema, name=name, max_tokens=8)
    except LLMError as e:
        assert "cut off at 8 tokens" in str(e)
    finally:
        await llm.aclose()
    assert llm.usage.calls == 1


@pytest.mark.parametrize("model, sent_as", [(MODEL_NAME, "max_tokens"), ("gpt-5-mini", "max_completion_tokens")])
async def test_the_token_limit_holds_in_both_spellings(llama, model, sent_as):
    """What a proxy in front of llama-server would receive for a reasoning model's name (max_completion_tokens,
    reasoning_effort) bounds the answer just as max_tokens does (this llama.cpp, 2026-10, reads both)."""
    llm = client(llama, model, reasoning_tokens=0)
    assert llm.wire.limit == sent_as
    started = time.monotonic()
    with pytest.raises(LLMError, match="cut off at 12 tokens"):
        await llm.structured("Write a long essay.", "Write about water, at length.", Essay, name="essay", max_tokens=12)
    await llm.aclose()
    assert llm.usage.completion_tokens == 12 and time.monotonic() - started < 15


async def test_a_timeout_is_an_llm_error_and_the_server_answers_the_next_call(llama):
    slow = client(llama, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out"):
        await slow.structured("Write a long essay.", "Write about water, at length.", Essay, name="essay",
                              max_tokens=4000)
    assert time.monotonic() - started < 3
    await slow.aclose()
    llm = client(llama)
    assert isinstance(await llm.structured(ASK, "The Moon is made of cheese", Verdict, name="verdict",
                                           max_tokens=120), Verdict)
    await llm.aclose()


async def test_a_server_that_dies_costs_the_llm_and_never_the_check(settings):
    """Killed mid-answer: the call fails at once (not at its timeout); after that every call and a whole check
    fail fast, and the check answers by the offline rules and says why."""
    server = start_server(gguf_model(), threads=1, parallel=1)
    llm = client(server)
    try:
        assert isinstance(await llm.structured(ASK, "Water boils at 50C", Verdict, name="verdict", max_tokens=120),
                          Verdict)
        answering = asyncio.create_task(llm.structured("Write a long essay.", "Write about water, at length.",
                                                       Essay, name="essay", max_tokens=4000))
        await asyncio.sleep(1.0)
        killed = time.monotonic()
        await asyncio.to_thread(server.kill)
        with pytest.raises(LLMError, match="unreachable|LLM error"):
            await answering
        assert time.monotonic() - killed < 5  # the timeout is 60 s
        started = time.monotonic()
        with pytest.raises(LLMError, match="unreachable"):
            await llm.structured(ASK, "Water boils at 50C", Verdict, name="verdict")
        assert time.monotonic() - started < 2
    finally:
        await llm.aclose()
        server.stop()
    s = settings.model_copy(update={"llm_base_url": server.base_url, "llm_model": MODEL_NAME, "llm_timeout_s": 60.0})
    started = time.monotonic()
    async with build_app(s) as app:
        result = await app.engine.check("Water boils at 50C at sea level")
    assert time.monotonic() - started < 30
    assert result.mode == "offline" and any("could not be reached" in n for n in result.notes), result.notes
    assert Result.model_validate_json(result.model_dump_json()) == result
