"""Turn our messages, tools and options into a Gemini `generateContent` request body.

Turns are `contents` of `user` and `model` role made of parts; system messages
become `systemInstruction`; a tool result is a `functionResponse` part (its
text under `output`, or under `error` when the tool failed), sent with the
call's id and name. Thought text is not sent back, but a call's
`thoughtSignature` is: Gemini 3 refuses a function call replayed without it.

Tools are declared with `parametersJsonSchema`, which takes our JSON Schemas
as they are (the older `parameters` field takes only an OpenAPI subset).

A `response_format` option asks for JSON (`responseMimeType:
application/json`) held to its schema by `responseJsonSchema`, which, like
`parametersJsonSchema`, takes JSON Schema as it is: `responseSchema` takes
only the OpenAPI subset, which cannot say a deck's slide fields (an object
with open keys) or pydantic's `$defs`.

A user's picture is an `inlineData` part (`mimeType`, base64 `data`), in the
order the message holds it.

Left out: files, safety settings (the API's defaults apply),
cached content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.messages import ImageBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from app.core.tools import GenerateOptions, ToolChoice, ToolSchema
from app.llm.alternating import system_prompt, turns

_GENERATION_OPTIONS = (
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("max_tokens", "maxOutputTokens"),
)
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


class GeminiChatFormatter:
    def format(
        self,
        model: str,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> dict[str, Any]:
        """The body; `model` is named in the URL, not here."""
        conversation = turns(messages, self.format_parts, assistant="model")
        body: dict[str, Any] = {"contents": [{"role": r, "parts": p} for r, p in conversation]}
        system = system_prompt(messages)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {
            theirs: options.get(ours) for ours, theirs in _GENERATION_OPTIONS if ours in options
        }
        if "thinking_budget" in options:
            budget = options["thinking_budget"]
            config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": budget != 0}
        if "response_format" in options:
            shape = options["response_format"]
            config["responseMimeType"] = "application/json"
            if shape.schema is not None:
                config["responseJsonSchema"] = shape.schema
        if config:
            body["generationConfig"] = config
        if tools:
            declarations = [
                {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                for t in tools
            ]
            body["tools"] = [{"functionDeclarations": declarations}]
            if "tool_choice" in options:
                body["toolConfig"] = {"functionCallingConfig": _calling(options["tool_choice"])}
        return body

    def format_parts(self, msg: Msg) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for block in msg.content:
            if isinstance(block, TextBlock):
                if block.text:
                    parts.append({"text": block.text})
            elif isinstance(block, ImageBlock):
                parts.append({"inlineData": {"mimeType": block.media_type, "data": block.base64()}})
            elif isinstance(block, ToolUseBlock):
                call = {"id": block.id, "name": block.name, "args": block.input}
                part: dict[str, Any] = {"functionCall": call}
                if block.signature:
                    part["thoughtSignature"] = block.signature
                parts.append(part)
            elif isinstance(block, ToolResultBlock):
                key = "error" if block.is_error else "output"
                response = {
                    "id": block.tool_use_id,
                    "name": block.name,
                    "response": {key: block.output},
                }
                parts.append({"functionResponse": response})
        return parts


def _calling(choice: ToolChoice) -> dict[str, Any]:
    if choice in _MODES:
        return {"mode": _MODES[choice]}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}
