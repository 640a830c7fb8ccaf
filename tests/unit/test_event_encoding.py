"""The wire shape of every event, as the original web client reads it."""

from __future__ import annotations

from typing import get_args

import orjson

from app.core.events import (
    ApprovalEvent,
    CompleteEvent,
    CritiqueEvent,
    DeckEvent,
    DeckSlide,
    DeckVersion,
    ErrorEvent,
    Event,
    FileEvent,
    PlanEvent,
    PlannedTask,
    QueuedEvent,
    RecommendEvent,
    Reference,
    ReferenceEvent,
    RunUsage,
    SourceLink,
    StartEvent,
    StepEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
    encode_data,
)
from app.core.frames import decode_frames, encode_frame


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
    assert wire(CompleteEvent("stopped", 12, 340, ["web_search"], RunUsage(10, 5))) == {
        "type": "complete",
        "status": "stopped",
        "firstResponseTime": 12,
        "totalResponseTime": 340,
        "tools": ["web_search"],
        "usage": {"promptTokens": 10, "completionTokens": 5, "estimated": False},
    }


def test_reference_and_recommend_content_is_a_json_array_string() -> None:
    refs = wire(ReferenceEvent.of([Reference("https://a.example", "A", "about a")]))
    assert refs["count"] == 1
    assert orjson.loads(str(refs["content"])) == [
        {"url": "https://a.example", "title": "A", "content": "about a"}
    ]
    rec = wire(RecommendEvent.of(["q1?", "q2?", "q3?"]))
    assert orjson.loads(str(rec["content"])) == ["q1?", "q2?", "q3?"]


def test_frame_is_one_data_line_even_when_the_text_has_newlines() -> None:
    frame = encode_frame(3, encode_data(TextEvent("line one\nline two\r\n")))
    lines = frame.decode().split("\n")
    assert lines[0] == "id: 3"
    assert lines[1].startswith("data: {")
    assert lines[2:] == ["", ""]
    assert orjson.loads(lines[1][len("data: ") :])["content"] == "line one\nline two\r\n"


EVERY_KIND: list[Event] = [
    StartEvent("c1", 7, "deep", "t1", trace_id="0af7651916cd43dd8448eb211c80319c"),
    QueuedEvent("c1", 2),
    ThinkingEvent("Planning"),
    TextEvent("An answer"),
    ToolStartEvent("web_search", "call_1", '{"query":"x"}', task_id="a"),
    ToolEndEvent("web_search", "call_1", "found", True, task_id="a"),
    ReferenceEvent.of([Reference("/file/download/f1#page=2&passage=3", "manual.pdf", "p. 2")]),
    RecommendEvent.of(["Why?"]),
    FileEvent("f1", "deck.pptx", "/file/download/f1", 1024, "application/zip"),
    FileEvent(
        "f2", "r.pdf", "/file/download/f2", 0, "application/pdf", status="failed", error="No PDF"
    ),
    DeckEvent(
        "ready", 2, "Solar", "ocean", [DeckSlide("Solar", "cover")], [DeckVersion(2, "v2", "/x")]
    ),
    ErrorEvent("LLM_TIMEOUT", "too slow", "ModelTimeout"),
    CompleteEvent("paused", None, 12, ["web_search"], RunUsage(3, 4, estimated=True)),
    PlanEvent(1, [PlannedTask("a", "Market", ("b",), "running")]),
    StepEvent("a", "completed", "Found it", [SourceLink("https://a.example", "A")]),
    CritiqueEvent(1, False, "More on costs"),
    ApprovalEvent("apr_1", "tool", {"path": "a.txt"}, tool_call_id="call_2", tool_name="write"),
]


def test_every_kind_decodes_back_to_the_event_it_was() -> None:
    """The other wire formats translate decoded frames: nothing may be lost on the way."""
    assert {type(e) for e in EVERY_KIND} == set(get_args(Event))
    data = b"".join(encode_frame(n, encode_data(e)) for n, e in enumerate(EVERY_KIND, 1))
    assert decode_frames(data) == list(enumerate(EVERY_KIND, 1))


def test_a_document_passage_reference_keeps_its_relative_link() -> None:
    [event] = [e for e in EVERY_KIND if isinstance(e, ReferenceEvent)]
    assert [r.url for r in event.references()] == ["/file/download/f1#page=2&passage=3"]
