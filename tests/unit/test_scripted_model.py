"""The scripted model agent tests rely on: steps in order, requests recorded, a clear end."""

from __future__ import annotations

from unittest.mock import ANY

import pytest

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from app.core.responses import ChatResponse, ModelEvent, Retrying, Usage, accumulate
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.errors import ModelHTTPError
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel

SEARCH = ToolSchema("web_search", "Search the web.")


async def call(
    model: ScriptedModel,
    messages: list[Msg],
    tools: list[ToolSchema] | None = None,
    options: GenerateOptions | None = None,
) -> list[ModelEvent]:
    return [event async for event in model.stream(messages, tools or [], options)]


def responses(events: list[ModelEvent]) -> list[ChatResponse]:
    return [event for event in events if isinstance(event, ChatResponse)]


async def test_canned_replies_stream_as_an_adapter_would() -> None:
    model = ScriptedModel(
        Reply.tool_calls(("web_search", {"query": "pumps"}), reasoning="Need facts."),
        Reply.text("Pumps hum.", usage=Usage(7, 2)),
    )

    first = responses(await call(model, [Msg.text("user", "Tell me about pumps")], [SEARCH]))
    second = responses(await call(model, [Msg.text("user", "And?")]))

    assert [c.content for c in first] == [
        [ThinkingBlock("Need ")],
        [ThinkingBlock("facts.")],
        [
            ToolUseBlock(
                ANY, "web_search", {"query": "pumps"}, '{"query":"pumps"}', provider_id="call_1"
            )
        ],
        [],
    ]
    assert (first[-1].finish_reason, first[-1].usage) == ("tool_calls", Usage(4, 3))
    assert [c.content for c in second[:-1]] == [[TextBlock("Pumps ")], [TextBlock("hum.")]]
    assert (second[-1].finish_reason, second[-1].usage) == ("stop", Usage(7, 2))
    assert model.unused_steps == 0


async def test_a_step_function_is_given_the_request_and_every_request_is_kept() -> None:
    def echo(request: ModelRequest) -> str:
        return f"{request.messages[-1].text_content()} / {request.options.get('max_tokens')}"

    model = ScriptedModel(echo)
    messages = [Msg.text("system", "Be brief."), Msg.text("user", "ping")]

    reply = accumulate(responses(await call(model, messages, [SEARCH], {"max_tokens": 5})))
    messages.append(Msg.text("user", "changed afterwards"))

    assert reply.content == [TextBlock("ping / 5")]
    [request] = model.requests
    assert [m.text_content() for m in request.messages] == ["Be brief.", "ping"]
    assert request.tool_names == ["web_search"]
    assert request.options == {"max_tokens": 5}


async def test_think_tags_in_scripted_text_become_thinking_as_with_any_provider() -> None:
    model = ScriptedModel(Reply.text("<think>hmm</think>Done."))

    reply = accumulate(responses(await call(model, [Msg.text("user", "Go")])))

    assert reply.content == [ThinkingBlock("hmm"), TextBlock("Done.")]


async def test_a_step_that_raises_a_retryable_error_is_retried_by_the_real_policy() -> None:
    async def overloaded(request: ModelRequest) -> Reply:
        raise ModelHTTPError(429, "slow down", retry_after=0)

    model = ScriptedModel(overloaded, Reply.text("Made it."))

    events = await call(model, [Msg.text("user", "Go")])

    assert isinstance(events[0], Retrying)
    assert accumulate(responses(events)).content == [TextBlock("Made it.")]
    assert len(model.requests) == 2


async def test_a_call_beyond_the_script_fails_the_test_and_says_so() -> None:
    model = ScriptedModel(Reply.text("Only answer."))
    await call(model, [Msg.text("user", "First")])

    with pytest.raises(pytest.fail.Exception, match="model call 2 has no step") as failed:
        await call(model, [Msg.text("user", "Second question")])

    assert "the script had 1" in str(failed.value)
    assert "Second question" in str(failed.value)
    assert len(model.requests) == 2
