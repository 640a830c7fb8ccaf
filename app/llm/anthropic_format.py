"""Turn our messages, tools and options into an Anthropic Messages API request body.

System messages become the `system` field; tool results become `tool_result`
blocks of a user turn; consecutive turns of one role are joined. Thinking
blocks go back only when Anthropic signed them (it rejects unsigned ones, such
as reasoning another provider produced), and must go back with the tool calls
they led to, which the ReAct loop does by replaying the whole response;
`redacted_thinking` blocks go back the same way, their data untouched.
Thinking of earlier turns is not sent: Anthropic ignores it there.

`max_tokens` is required by the API: 4096 unless the call says. With a
thinking budget, `max_tokens` counts thinking and answer together, so the
budget is added to it; and since the API refuses sampling options and forced
tool use while thinking, those are left out then (a forced choice becomes `auto`).

A `response_format` option is a forced tool (Anthropic's way to hold an
answer to a schema): one more tool, named as the shape, whose input schema is
the answer's, and `tool_choice` naming it. The API refuses forced tool use
while thinking, so such a call does not think. The adapter reads that tool's
input back as the answer's text.

A user's picture is an `image` block with a base64 `source`, in the order
the message holds it (before the question).

Left out: documents, prompt caching.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.messages import (
    ImageBlock,
    Msg,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.core.tools import GenerateOptions, ToolChoice, ToolSchema
from app.llm.alternating import system_prompt, turns

DEFAULT_MAX_TOKENS = 4096
ANSWER_TOOL = "Give your answer by calling this tool with it."
_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "none": {"type": "none"},
    "required": {"type": "any"},
}


class AnthropicChatFormatter:
    def format(
        self,
        model: str,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> dict[str, Any]:
        conversation = turns(messages, self.format_content, assistant="assistant")
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": options.get("max_tokens", DEFAULT_MAX_TOKENS),
            "messages": [{"role": role, "content": content} for role, content in conversation],
            "stream": True,
        }
        system = system_prompt(messages)
        if system:
            body["system"] = system
        shape = options.get("response_format")
        budget = 0 if shape is not None else options.get("thinking_budget", 0)
        if budget:
            body["max_tokens"] += budget
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        else:
            body.update((k, options[k]) for k in ("temperature", "top_p") if k in options)
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
            if "tool_choice" in options:
                body["tool_choice"] = _tool_choice(options["tool_choice"], thinking=bool(budget))
        if shape is not None:
            schema = shape.schema or {"type": "object"}
            answer = {"name": shape.name, "description": ANSWER_TOOL, "input_schema": schema}
            body["tools"] = [*body.get("tools", ()), answer]
            body["tool_choice"] = {"type": "tool", "name": shape.name}
        return body

    def format_content(self, msg: Msg) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for block in msg.content:
            if isinstance(block, TextBlock):
                if block.text:
                    out.append({"type": "text", "text": block.text})
            elif isinstance(block, ThinkingBlock):
                if block.signature and msg.role == "assistant":
                    out.append(
                        {
                            "type": "thinking",
                            "thinking": block.thinking,
                            "signature": block.signature,
                        }
                    )
            elif isinstance(block, RedactedThinkingBlock):
                if msg.role == "assistant":
                    out.append({"type": "redacted_thinking", "data": block.data})
            elif isinstance(block, ImageBlock):
                source = {"type": "base64", "media_type": block.media_type, "data": block.base64()}
                out.append({"type": "image", "source": source})
            elif isinstance(block, ToolUseBlock):
                out.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
            elif isinstance(block, ToolResultBlock):
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": block.tool_use_id,
                    "content": block.output,
                }
                if block.is_error:
                    result["is_error"] = True
                out.append(result)
        return out


def _tool_choice(choice: ToolChoice, *, thinking: bool) -> dict[str, Any]:
    if thinking and choice != "none":
        return _CHOICES["auto"]
    return _CHOICES.get(choice) or {"type": "tool", "name": choice}
