"""A model call's chunks, merged as they stream: the answer a tool round sends back.

The ReAct loop and the usage count read the merged response, so it must be
the same whether it is asked for at the end or part-way (the usage count
asks when the finish reason arrives, and chunks may still follow).
"""

from __future__ import annotations

from app.core.messages import TextBlock, ThinkingBlock, ToolUseBlock
from app.core.responses import Accumulator, ChatResponse, Usage, accumulate

CALL = ToolUseBlock(id="c1", name="search", input={"q": "x"})


def test_deltas_join_into_blocks_in_the_order_they_came() -> None:
    chunks = [
        ChatResponse("r1", [ThinkingBlock("Let me "), ThinkingBlock("look.")]),
        ChatResponse("", [ThinkingBlock("", signature="sig")]),
        ChatResponse("", [TextBlock("Search"), TextBlock("ing.")]),
        ChatResponse("", [CALL], Usage(3, 4), "tool_calls"),
        ChatResponse("", [TextBlock("After.")]),
    ]

    whole = accumulate(chunks)

    assert whole.id == "r1"
    assert whole.content == [
        ThinkingBlock("Let me look.", signature="sig"),
        TextBlock("Searching."),
        CALL,
        TextBlock("After."),
    ]
    assert (whole.usage, whole.finish_reason) == (Usage(3, 4), "tool_calls")


def test_a_result_asked_part_way_does_not_change_what_comes_after() -> None:
    merged = Accumulator()
    merged.add(ChatResponse("r1", [TextBlock("Hel"), TextBlock("lo")]))

    early = merged.result()
    merged.add(ChatResponse("", [TextBlock(", world")], finish_reason="stop"))
    whole = merged.result()

    assert early.content == [TextBlock("Hello")]
    assert (whole.content, whole.finish_reason) == ([TextBlock("Hello, world")], "stop")
