"""Turn our messages, tools and options into a DashScope native text-generation request body.

DashScope's native API wraps OpenAI-style messages and tools in its own
envelope: `{"model", "input": {"messages"}, "parameters"}`. The messages and
tool definitions are the OpenAI formatter's (DashScope wants a string
`content`, so an assistant turn with only tool calls sends ""), the rest is
DashScope's: `result_format: message` so the answer comes as chat messages,
and `incremental_output: true` so each event carries only what is new.

DashScope's `tool_choice` takes `auto`, `none` or one named function; a
`required` choice names the tool when there is only one, and is `auto` otherwise.
A `response_format` option turns on DashScope's JSON mode (`response_format:
{"type": "json_object"}`; the prompt says the shape), which Qwen's models
refuse while thinking, so such a call does not think.
A thinking budget sets `enable_thinking` (Qwen3's hybrid models think only
when asked) and `thinking_budget`.

No pictures: this endpoint takes none (the adapter's `image_max_side` is 0, so
a picture reaches the model as its text). Qwen's vision models take them on
DashScope's OpenAI-compatible endpoint, the `qwen` provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.messages import Msg
from app.core.tools import GenerateOptions, ToolChoice, ToolSchema
from app.llm.openai_format import OpenAIChatFormatter, function_choice, function_tool

_SAMPLING_OPTIONS = ("temperature", "max_tokens", "top_p")


class DashScopeChatFormatter:
    def __init__(self) -> None:
        self._openai = OpenAIChatFormatter()

    def format(
        self,
        model: str,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> dict[str, Any]:
        wire = [m for msg in messages for m in self._openai.format_message(msg)]
        for message in wire:
            if message.get("content") is None:
                message["content"] = ""
        parameters: dict[str, Any] = {"result_format": "message", "incremental_output": True}
        parameters.update((k, v) for k, v in options.items() if k in _SAMPLING_OPTIONS)
        if "response_format" in options:
            parameters["response_format"] = {"type": "json_object"}
            parameters["enable_thinking"] = False
        elif "thinking_budget" in options:
            budget = options["thinking_budget"]
            parameters["enable_thinking"] = budget != 0
            if budget:
                parameters["thinking_budget"] = budget
        if tools:
            parameters["tools"] = [function_tool(t) for t in tools]
            if "tool_choice" in options:
                parameters["tool_choice"] = _tool_choice(options["tool_choice"], tools)
        return {"model": model, "input": {"messages": wire}, "parameters": parameters}


def _tool_choice(choice: ToolChoice, tools: Sequence[ToolSchema]) -> str | dict[str, Any]:
    if choice == "required":
        return function_choice(tools[0].name) if len(tools) == 1 else "auto"
    if choice in ("auto", "none"):
        return choice
    return function_choice(choice)
