"""The wire shape of every event, as the original web client reads it."""

from __future__ import annotations

import orjson

from app.core.events import (
    CompleteEvent,
    ErrorEvent,
    Event,
    RecommendEvent,
    Reference,
    ReferenceEvent,
    StartEvent,
    TextEvent,
    ToolEndEvent,
    ToolStartEvent,
    encode_data,
    encode_frame,
)


def wire(event: Event) -> dict[str, object]:
    decoded: dict[str, object] = orjson.loads(encode_data(event))
    return decoded


def test_every_event_has_its_camel_case_shape() -> None:
    assert wire(StartEvent("c1", 7, "chat", "t1")) == {
        "type": "start",
        "conversationId": "c1",
        "sessionId": 7,
        "agentType": "chat",
        "taskId": "t1",
    }
    assert wire(ToolStartEvent("web_search", "call_1", '{"query":"x"}')) == {
        "type": "tool_start",
        "toolName": "web_search",
        "toolCallId": "call_1",
        "arguments": '{"query":"x"}',
    }
    assert wire(ToolEndEvent("web_search", "call_1", "found", False)) == {
        "type": "tool_end",
        "toolName": "web_search",
        "toolCallId": "call_1",
        "result": "found",
        "isError": False,
    }
    assert wire(ErrorEvent("LLM_TIMEOUT", "too slow", "ModelTimeout")) == {
        "type": "error",
        "code": "LLM_TIMEOUT",
        "message": "too slow",
        "detail": "ModelTimeout",
        "content": "too slow",
    }
    assert wire(CompleteEvent("stopped", 12, 340, ["web_search"], 10, 5)) == {
        "type": "complete",
        "status": "stopped",
        "firstResponseTime": 12,
        "totalResponseTime": 340,
        "tools": ["web_search"],
        "usage": {"promptTokens": 10, "completionTokens": 5, "estimated": False},
    }


def test_reference_and_recommend_content_is_a_json_array_string() -> None:
    refs = wire(ReferenceEvent([Reference("https://a.example", "A", "about a")]))
    assert refs["count"] == 1
    assert orjson.loads(str(refs["content"])) == [
        {"url": "https://a.example", "title": "A", "content": "about a"}
    ]
    rec = wire(RecommendEvent(["q1?", "q2?", "q3?"]))
    assert orjson.loads(str(rec["content"])) == ["q1?", "q2?", "q3?"]


def test_frame_is_one_data_line_even_when_the_text_has_newlines() -> None:
    frame = encode_frame(3, encode_data(TextEvent("line one\nline two\r\n")))
    lines = frame.decode().split("\n")
    assert lines[0] == "id: 3"
    assert lines[1].startswith("data: {")
    assert lines[2:] == ["", ""]
    assert orjson.loads(lines[1][len("data: ") :])["content"] == "line one\nline two\r\n"
