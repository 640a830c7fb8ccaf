"""Turn our messages, tools and options into an OpenAI Chat Completions request body.

Kept apart from the adapter so the wire format can be tested (and reused by
other OpenAI-compatible providers) without any HTTP. The body always asks for
a stream with usage, so the last chunk reports token counts.

A `response_format` option is sent as OpenAI documents it: `json_schema`
with the step's schema, `strict` where the schema has a strict form
(json_schema.py), or `json_object` where the server takes only that.

A user's picture goes as an `image_url` part holding a data URL, before the
question's text part (the message's `content` is then a list of parts).

Left out on purpose: thinking blocks (OpenAI-compatible servers neither accept
nor need reasoning sent back), and `n > 1`. `max_tokens` is used
rather than `max_completion_tokens` because every compatible server
(vLLM, Ollama, DeepSeek, Qwen) understands it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from app.core.messages import Msg, ToolResultBlock, ToolUseBlock
from app.core.tools import GenerateOptions, ResponseFormat, ToolChoice, ToolSchema
from app.llm.json_schema import strict_schema

_SAMPLING_OPTIONS = ("temperature", "max_tokens", "top_p")
_CHOICE_KEYWORDS = ("auto", "none", "required")


class OpenAIChatFormatter:
    def format(
        self,
        model: str,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": [m for msg in messages for m in self.format_message(msg)],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        body.update((k, v) for k, v in options.items() if k in _SAMPLING_OPTIONS)
        if tools:
            body["tools"] = [function_tool(t) for t in tools]
            if "tool_choice" in options:
                body["tool_choice"] = _tool_choice(options["tool_choice"])
        if "response_format" in options:
            body["response_format"] = response_format(options["response_format"])
        return body

    def format_message(self, msg: Msg) -> list[dict[str, Any]]:
        """One message becomes several on the wire when it carries several tool results."""
        if msg.role == "tool":
            return [
                {"role": "tool", "tool_call_id": b.tool_use_id, "content": b.output}
                for b in msg.content
                if isinstance(b, ToolResultBlock)
            ]
        text = msg.text_content()
        if msg.role != "assistant":
            images = msg.images()
            if not images:
                return [{"role": msg.role, "content": text}]
            parts: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": image.data_url()}} for image in images
            ]
            if text:
                parts.append({"type": "text", "text": text})
            return [{"role": msg.role, "content": parts}]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = msg.tool_uses()
        if calls:
            out["tool_calls"] = [_tool_call(c) for c in calls]
        elif not text:
            out["content"] = ""
        return [out]


def function_tool(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def response_format(shape: ResponseFormat) -> dict[str, Any]:
    if shape.schema is None:
        return {"type": "json_object"}
    strict = strict_schema(shape.schema)
    json_schema = {"name": shape.name, "schema": strict or shape.schema, "strict": bool(strict)}
    return {"type": "json_schema", "json_schema": json_schema}


def _tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    return choice if choice in _CHOICE_KEYWORDS else function_choice(choice)


def function_choice(name: str) -> dict[str, Any]:
    """The `tool_choice` that makes the model call this one tool."""
    return {"type": "function", "function": {"name": name}}


def _tool_call(call: ToolUseBlock) -> dict[str, Any]:
    # The model's own text is replayed when we have it, so the conversation it
    # sees is byte-for-byte what it produced.
    arguments = call.raw_input or orjson.dumps(call.input).decode()
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }
