"""The agents' JSON steps against each vendor's fake, for each way a model answers them.

`structured()` (app/llm/structured.py) is what deep research, the deck
builder and the follow-up questions ask through; here it runs through the
real adapter, over HTTP, to each vendor's fake, with a thinking budget set
(which Anthropic's forced tools and DashScope's JSON mode refuse, so a
structured call must turn it off). Each model behaviour of
`tests/fakes/model_behaviours.py` gives the plan, or fails with a clear
error where failing is right: a model that answers JSON only when asked
natively, asked in the prompt alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from pydantic import SecretStr

from app.agents.deep import prompts
from app.agents.deep.state import ResearchPlan
from app.agents.pptx.schema import DeckSchema
from app.config import Settings
from app.core.messages import Msg
from app.core.responses import Usage
from app.llm.base import ChatModel
from app.llm.errors import ModelHTTPError
from app.llm.http import build_http_client
from app.llm.registry import PROVIDERS as REGISTRY
from app.llm.registry import build_chat_model
from app.llm.structured import StructuredOutputInvalid, structured
from tests.fakes.model_behaviours import (
    ANSWER_KEEPING,
    Behaving,
    Behaviour,
    IgnoresNative,
    NativeOnly,
)
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.scripted_server import Body, Reply, ScriptedServer

PLAN = {
    "tasks": [
        {"id": "a", "title": "Market size", "goal": "How big it is", "dependsOn": []},
        {"id": "b", "title": "Outlook", "goal": "Where it goes", "dependsOn": ["a"]},
    ]
}
MESSAGES = [
    Msg.text("system", prompts.PLAN.format(today="2026-11-26", max_tasks=6, previous="")),
    Msg.text("user", "Topic: heat pumps.\n1. Market\n2. Outlook"),
]
PROVIDERS = sorted(FAKE_PROVIDERS)
"""One provider per adapter; `model_on` takes any of the registry's."""


def plan_answer(server: ScriptedServer, body: Body) -> str:
    return orjson.dumps(PLAN).decode()


@asynccontextmanager
async def model_on(
    provider: str, behaviour: Behaviour, **settings: Any
) -> AsyncIterator[tuple[ChatModel, ScriptedServer, Behaving]]:
    """The real adapter of `provider` against its fake, the fake behaving so."""
    async with FAKE_PROVIDERS[REGISTRY[provider].model_class.provider]() as fake:
        behaving = Behaving(fake, plan_answer, behaviour)
        fake.responder = behaving
        config = Settings(
            _env_file=None,
            llm_provider=provider,
            llm_base_url=fake.base_url,
            llm_api_key=SecretStr("sk-structured"),
            llm_model="fake-model",
            llm_max_retries=0,
            llm_thinking_budget=1024,
            **settings,
        )
        async with build_http_client(config) as client:
            yield build_chat_model(config, client), fake, behaving


async def ask_plan(model: ChatModel, usage: list[Usage] | None = None) -> ResearchPlan:
    return await structured(
        model, MESSAGES, ResearchPlan, on_usage=None if usage is None else usage.append
    )


@pytest.mark.parametrize("behaviour", sorted(ANSWER_KEEPING))
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_every_behaviour_gives_the_plan_on_every_provider(
    provider: str, behaviour: str
) -> None:
    usage: list[Usage] = []
    async with model_on(provider, ANSWER_KEEPING[behaviour]()) as (model, fake, behaving):
        plan = await ask_plan(model, usage)

    assert plan == ResearchPlan.model_validate(PLAN)
    # Asked natively each time (a second time only for the answer that was cut off).
    assert all(asked is not None for asked in behaving.asked)
    assert len(fake.requests) == (2 if behaviour == "invalid-once" else 1)
    assert len(usage) == len(fake.requests)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_request_asks_natively_as_the_vendor_documents_it(provider: str) -> None:
    async with model_on(provider, NativeOnly()) as (model, fake, _):
        await ask_plan(model)
    [body] = fake.requests
    schema = ResearchPlan.model_json_schema(by_alias=True)

    if provider == "openai":
        form = body["response_format"]
        assert form["type"] == "json_schema"
        assert (form["json_schema"]["name"], form["json_schema"]["strict"]) == (
            "ResearchPlan",
            True,
        )
        task = form["json_schema"]["schema"]["$defs"]["PlannedTaskOut"]
        assert task["required"] == ["id", "title", "goal", "dependsOn"]
        assert task["additionalProperties"] is False
    elif provider == "anthropic":
        assert body["tool_choice"] == {"type": "tool", "name": "ResearchPlan"}
        assert [t["input_schema"] for t in body["tools"]] == [schema]
        assert "thinking" not in body
    elif provider == "gemini":
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == schema
        assert "responseSchema" not in config
    else:
        parameters = body["parameters"]
        assert parameters["response_format"] == {"type": "json_object"}
        assert parameters["enable_thinking"] is False
    assert fake.requested(body) is not None


@pytest.mark.parametrize("provider", ["deepseek", "glm", "qwen"])
async def test_a_server_taking_only_json_object_gets_json_object(provider: str) -> None:
    async with model_on(provider, NativeOnly()) as (model, fake, _):
        assert await ask_plan(model) == ResearchPlan.model_validate(PLAN)
    assert fake.requests[0]["response_format"] == {"type": "json_object"}


async def test_a_schema_with_open_keys_goes_without_strict() -> None:
    """A deck's slide fields are an object with open keys: no strict form, a guide still."""
    deck = {"slides": [{"pageType": "cover", "fields": {"title": "Solar"}}]}
    async with model_on("openai", NativeOnly()) as (model, fake, behaving):
        behaving.answers = lambda server, body: orjson.dumps(deck).decode()
        answer = await structured(model, MESSAGES, DeckSchema)
    assert answer == DeckSchema.model_validate(deck)
    form = fake.requests[0]["response_format"]["json_schema"]
    assert form["strict"] is False
    assert form["schema"] == DeckSchema.model_json_schema(by_alias=True)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_server_refusing_the_field_is_asked_in_the_prompt_and_that_is_remembered(
    provider: str,
) -> None:
    async with model_on(provider, IgnoresNative()) as (model, fake, _):
        fake.refuses_native = True
        first = await ask_plan(model)
        second = await ask_plan(model)

    assert first == second == ResearchPlan.model_validate(PLAN)
    # Refused once, asked again at once without it, and not asked with it again.
    assert [fake.requested(body) is not None for body in fake.requests] == [True, False, False]
    assert model.structured_output == "prompt"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_another_bad_request_is_an_error_and_not_a_refusal(provider: str) -> None:
    async with model_on(provider, NativeOnly()) as (model, fake, _):
        fake.script(Reply.error(400, message="prompt is too long: 300000 tokens"))
        with pytest.raises(ModelHTTPError) as raised:
            await ask_plan(model)
        assert raised.value.status == 400
        assert model.structured_output != "prompt"
        assert await ask_plan(model) == ResearchPlan.model_validate(PLAN)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_prompt_mode_asks_in_the_prompt_alone(provider: str) -> None:
    async with model_on(provider, IgnoresNative(), llm_structured_output="prompt") as (
        model,
        fake,
        behaving,
    ):
        assert await ask_plan(model) == ResearchPlan.model_validate(PLAN)
    assert behaving.asked == [None]
    # The prompt says the shape, with an example, so a model can follow it.
    assert '"tasks": [{"id": "1"' in orjson.dumps(fake.requests[0]).decode().replace("\\", "")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_native_only_model_asked_in_the_prompt_fails_clearly(provider: str) -> None:
    async with model_on(provider, NativeOnly(), llm_structured_output="prompt") as (
        model,
        fake,
        _,
    ):
        with pytest.raises(StructuredOutputInvalid) as raised:
            await ask_plan(model)
    assert raised.value.code == "LLM_INVALID_OUTPUT"
    assert raised.value.detail.startswith("ResearchPlan: The JSON does not match the format")
    assert "tasks: Field required" in raised.value.detail
    assert len(fake.requests) == 2


def always(text: str) -> Callable[[ScriptedServer, Body], str]:
    return lambda server, body: text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_answer_invalid_twice_fails_with_what_was_wrong(provider: str) -> None:
    async with model_on(provider, IgnoresNative()) as (model, fake, behaving):
        behaving.answers = always('{"tasks": []}')
        with pytest.raises(StructuredOutputInvalid) as raised:
            await ask_plan(model)
    assert "tasks: List should have at least 1 item" in raised.value.detail
    # The second request carried the first answer back, with what was wrong.
    second = orjson.dumps(fake.requests[1]).decode()
    assert "That answer cannot be used" in second
    assert "at least 1 item" in second
