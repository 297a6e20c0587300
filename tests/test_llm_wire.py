"""How core.llm.client spells a call for each kind of server, against the fake OpenAI server playing OpenAI's models by
name (its 400 bodies are OpenAI's own wording: tests/fakes/openai_api.py) and Azure's deployment route."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from core.llm.client import LLMError, OpenAICompatibleLLM, Wire, default_reasoning_effort, reasoning_model
from tests.fakes.openai_api import FakeOpenAI, model_refusal
from tests.llm_fixtures import API_KEY, fake  # noqa: F401  (fixture)


class Answer(BaseModel):
    label: str
    score: int


GOOD = {"label": "ok", "score": 3}
AZURE_VERSION = "2024-10-21"


def client(fake: FakeOpenAI, model: str, **kw) -> OpenAICompatibleLLM:  # noqa: F811
    return OpenAICompatibleLLM(fake.base_url, API_KEY, model, timeout_s=3.0, **kw)


def azure(fake: FakeOpenAI, deployment: str, **kw) -> OpenAICompatibleLLM:  # noqa: F811
    url = f"http://127.0.0.1:{fake.port}/openai/deployments/{deployment}?api-version={AZURE_VERSION}"
    return OpenAICompatibleLLM(url, API_KEY, deployment, timeout_s=3.0, **kw)


def sent(fake: FakeOpenAI, key: str) -> list[object]:  # noqa: F811
    return [r.get(key) for r in fake.requests]


# --- the model's name and host ------------------------------------------------------------------


@pytest.mark.parametrize("model, reasoning, effort", [
    ("gpt-5-mini", True, "minimal"), ("gpt-5", True, "minimal"), ("gpt-5-nano-2025-08-07", True, "minimal"),
    ("gpt-5.1", True, "none"), ("gpt-5.4-mini", True, "none"), ("o3-mini", True, "low"), ("o1", True, "low"),
    ("o4-mini", True, "low"), ("openai/gpt-5-mini", True, "minimal"), ("gpt-4.1-mini", False, None),
    ("gpt-4o-mini", False, None), ("llama3.1", False, None), ("qwen2.5:7b", False, None)])
def test_reasoning_models_are_known_by_name(model, reasoning, effort):
    assert reasoning_model(model) is reasoning
    assert default_reasoning_effort(model) == effort


@pytest.mark.parametrize("base_url, model, limit, temperature", [
    (None, "gpt-4.1-mini", "max_completion_tokens", True),  # OpenAI: every chat model takes it
    ("https://api.openai.com/v1", "gpt-4o-mini", "max_completion_tokens", True),
    ("https://res.openai.azure.com/openai/v1", "my-deployment", "max_completion_tokens", True),
    ("http://ollama:11434/v1", "llama3.1", "max_tokens", True),  # Ollama ignores max_completion_tokens
    ("http://127.0.0.1:8080/v1", "gpt-5-mini", "max_completion_tokens", False),  # a proxy to a reasoning model
    (None, "o3-mini", "max_completion_tokens", False)])
def test_the_first_guess_comes_from_the_host_and_the_name(base_url, model, limit, temperature):
    wire = Wire.guess(model, base_url)
    assert wire.limit == limit and wire.temperature is temperature
    params = wire.params(100, headroom=1000)
    assert set(params) & {"max_tokens", "max_completion_tokens"} == {limit}
    assert params[limit] == (1100 if reasoning_model(model) else 100)  # reasoning gets headroom
    assert ("temperature" in params) is temperature


def test_an_explicit_effort_goes_to_every_model_and_an_empty_one_to_none():
    assert Wire.guess("my-deployment", None, "medium").params(10, 0)["reasoning_effort"] == "medium"
    assert "reasoning_effort" not in Wire.guess("gpt-5-mini", None, "").params(10, 0)


@pytest.mark.parametrize("body, refused", [
    ({"max_tokens": 5}, "max_tokens"), ({"temperature": 0}, "temperature"),
    ({"reasoning_effort": "minimal"}, "reasoning_effort"), ({"max_completion_tokens": 5}, None)])
def test_the_fakes_refusals_teach_the_wire_exactly_one_thing(body, refused):
    error = model_refusal("gpt-5.1", body)
    if refused is None:
        assert error is None
        return
    assert error is not None and error["param"] == refused
    wire = Wire(limit="max_tokens", temperature=True, reasoning_effort="minimal", reasoning=False)
    assert wire.learn(error["param"], error["message"]) is not None
    assert wire.learn(error["param"], error["message"]) is None  # the same refusal twice: nothing left to change


def test_a_refusal_is_read_from_the_message_when_no_param_is_named():
    wire = Wire(limit="max_completion_tokens", temperature=True, reasoning_effort=None, reasoning=False)
    # a proxy's wording; the first name in the message is the refused one
    assert wire.learn(None, "Unrecognized request argument supplied: max_completion_tokens") is not None
    assert wire.limit == "max_tokens"
    wire = Wire(limit="max_tokens", temperature=True, reasoning_effort=None, reasoning=False)
    wire.learn(None, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                     "'max_completion_tokens' instead.")
    assert wire.limit == "max_completion_tokens" and wire.reasoning and not wire.temperature
    # a 400 that refuses nothing (a prompt too long) changes nothing
    assert wire.learn("messages", "This model's maximum context length is 8192 tokens.") is None


# --- against the fake -----------------------------------------------------------------------------


async def test_gpt5_mini_is_spelled_right_the_first_time(fake):  # noqa: F811
    llm = client(fake, "gpt-5-mini")
    fake.reply_json(GOOD)
    fake.reply_json(GOOD)
    assert await llm.structured("sys", "u", Answer, name="answer", max_tokens=60) == Answer(**GOOD)
    await llm.structured("sys", "u", Answer, name="answer")
    await llm.aclose()
    assert len(fake.requests) == 2  # no 400 on the way
    assert sent(fake, "max_completion_tokens") == [60 + 1024, 600 + 1024]
    assert sent(fake, "max_tokens") == sent(fake, "temperature") == [None, None]
    assert sent(fake, "reasoning_effort") == ["minimal", "minimal"]
    assert fake.requests[0]["response_format"]["type"] == "json_schema"


async def test_gpt41_mini_keeps_temperature_zero_and_gets_no_effort(fake):  # noqa: F811
    llm = client(fake, "gpt-4.1-mini")
    fake.reply_json(GOOD)
    await llm.structured("sys", "u", Answer, name="answer", max_tokens=60)
    await llm.aclose()
    [req] = fake.requests
    assert req["temperature"] == 0 and req["max_tokens"] == 60 and "reasoning_effort" not in req


async def test_an_azure_deployment_learns_its_model_once_and_never_sends_a_refused_parameter_again(fake):  # noqa: F811
    fake.api_key = API_KEY
    fake.deployments["factcheck-prod"] = "gpt-5-mini"  # its name says nothing of the model behind it
    llm = azure(fake, "factcheck-prod")
    for _ in range(3):
        fake.reply_json(GOOD)
        assert await llm.structured("sys", "u", Answer, name="answer", max_tokens=60) == Answer(**GOOD)
    await llm.aclose()
    # one refusal (max_tokens; temperature goes with it: only reasoning models refuse max_tokens), then right
    assert len(fake.requests) == 4
    assert [("max_tokens" in r, "temperature" in r) for r in fake.requests] == [(True, True)] + [(False, False)] * 3
    assert sent(fake, "max_completion_tokens")[1:] == [60 + 1024] * 3  # it reasons: headroom too
    assert all(u == f"/openai/deployments/factcheck-prod/chat/completions?api-version={AZURE_VERSION}"
               for u in fake.urls)
    assert fake.auth == [None] * 4  # the key went in Azure's api-key header, not as a bearer token


async def test_calls_made_at_once_at_start_up_send_the_refused_parameter_once(fake):  # noqa: F811
    fake.deployments["prod"] = "o4-mini"
    llm = azure(fake, "prod")
    fake.respond("answer", lambda body: GOOD)
    answers = await asyncio.gather(*(llm.structured("sys", f"u{i}", Answer, name="answer") for i in range(8)))
    await llm.aclose()
    assert answers == [Answer(**GOOD)] * 8
    assert sum("max_tokens" in r for r in fake.requests) == 1 and len(fake.requests) == 9


async def test_a_refused_effort_is_dropped_and_remembered(fake):  # noqa: F811
    llm = client(fake, "gpt-5.1", reasoning_effort="minimal")  # gpt-5.1 takes none..xhigh, not minimal
    fake.reply_json(GOOD)
    fake.reply_json(GOOD)
    await llm.structured("sys", "u", Answer, name="answer")
    await llm.structured("sys", "u", Answer, name="answer")
    await llm.aclose()
    assert sent(fake, "reasoning_effort") == ["minimal", None, None]


async def test_a_model_without_structured_outputs_gets_json_mode_with_the_schema_in_the_prompt(fake):  # noqa: F811
    llm = client(fake, "gpt-4-turbo")
    fake.reply_json(GOOD)
    fake.reply_json(GOOD)
    assert await llm.structured("sys", "u", Answer, name="answer") == Answer(**GOOD)
    await llm.structured("sys", "u", Answer, name="answer")
    await llm.aclose()
    assert [r["response_format"]["type"] for r in fake.requests] == ["json_schema", "json_object", "json_object"]
    system = fake.requests[1]["messages"][0]["content"]
    assert system.startswith("sys") and "JSON schema" in system
    assert json.loads(system.split("\n")[-1])["required"] == ["label", "score"]


async def test_a_model_that_refuses_every_json_format_is_an_llm_error_naming_why(fake):  # noqa: F811
    llm = client(fake, "gpt-4")
    fake.reply_json(GOOD)
    with pytest.raises(LLMError, match="HTTP 400: Invalid parameter: 'response_format' of type 'json_object'"):
        await llm.structured("sys", "u", Answer, name="answer")
    await llm.aclose()
    assert len(fake.requests) == 2


async def test_reasoning_spends_the_budget_and_the_headroom_pays_for_it(fake):  # noqa: F811
    fake.reply_json(GOOD)
    fake.reply_json(GOOD)
    bare = client(fake, "gpt-5-mini", reasoning_effort="medium", reasoning_tokens=0)
    with pytest.raises(LLMError, match=r"cut off at 60 tokens \(60 of them reasoning\)"):
        await bare.structured("sys", "u", Answer, name="answer", max_tokens=60)
    await bare.aclose()
    roomy = client(fake, "gpt-5-mini", reasoning_effort="medium")  # medium: 512 tokens of reasoning here
    assert await roomy.structured("sys", "u", Answer, name="answer", max_tokens=60) == Answer(**GOOD)
    await roomy.aclose()
    assert roomy.usage.completion_tokens == 7 + 512


async def test_the_api_key_is_never_in_a_400s_error(fake):  # noqa: F811
    llm = client(fake, "gpt-4")
    fake.reply_json(GOOD)
    with pytest.raises(LLMError) as exc:
        await llm.structured("sys", "u", Answer, name="answer")
    await llm.aclose()
    assert API_KEY not in str(exc.value) and API_KEY not in repr(llm)
