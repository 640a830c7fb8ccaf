"""Stored tool calls: cut-short calls closed, and every call replayed with its result."""

from __future__ import annotations

from app.agents.tool_history import INTERRUPTED_RESULT, closed, replay
from app.core.messages import ToolResultBlock, ToolUseBlock
from app.store.records import ToolCall

FINISHED = ToolCall(
    id="call_1", name="web_search", arguments='{"query": "a"}', result="Found a.", is_error=False
)
CUT_SHORT = ToolCall(id="call_2", name="web_search", arguments='{"query": "b"}')


def test_a_call_without_a_result_gets_the_interrupted_one_and_the_record_is_untouched() -> None:
    calls = [FINISHED, CUT_SHORT]

    assert closed(calls) == [
        FINISHED,
        ToolCall(
            id="call_2",
            name="web_search",
            arguments='{"query": "b"}',
            result=INTERRUPTED_RESULT,
            is_error=True,
        ),
    ]
    assert CUT_SHORT.result is None


def test_replay_pairs_every_call_with_its_result() -> None:
    uses, results = replay([FINISHED, CUT_SHORT])

    assert uses.role == "assistant"
    assert uses.content == [
        ToolUseBlock("call_1", "web_search", {"query": "a"}, raw_input='{"query": "a"}'),
        ToolUseBlock("call_2", "web_search", {"query": "b"}, raw_input='{"query": "b"}'),
    ]
    assert results.role == "tool"
    assert results.content == [
        ToolResultBlock("call_1", "web_search", "Found a.", is_error=False),
        ToolResultBlock("call_2", "web_search", INTERRUPTED_RESULT, is_error=True),
    ]


def test_malformed_arguments_are_replayed_as_the_model_wrote_them() -> None:
    [uses, _] = replay([FINISHED.model_copy(update={"arguments": '{"query": "a'})])

    assert uses.content == [ToolUseBlock("call_1", "web_search", {}, raw_input='{"query": "a')]


def test_a_turn_without_tool_calls_replays_nothing() -> None:
    assert replay([]) == []


def test_a_call_is_stored_with_the_field_names_the_wire_has_always_had() -> None:
    assert FINISHED.wire() == {
        "id": "call_1",
        "name": "web_search",
        "arguments": '{"query": "a"}',
        "result": "Found a.",
        "isError": False,
    }
    assert ToolCall.model_validate(FINISHED.wire()) == FINISHED
