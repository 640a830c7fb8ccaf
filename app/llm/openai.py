"""The adapter for OpenAI's Chat Completions API and every server that speaks it.

The request comes from the formatter, the HTTP call and its errors from
`StreamingChatModel`; this module knows the endpoint, the optional Bearer key
and how to read a `chat.completion.chunk`.

Compatible servers differ in small ways, all handled here: the key is
optional (Ollama and vLLM run without one), reasoning arrives as
`reasoning_content` (DeepSeek, Qwen, GLM) or `reasoning` (vLLM, OpenRouter),
some omit `index` on tool-call fragments or report `stop` after tool calls,
and vLLM reports errors in-band with their HTTP status as `code`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from app.core.messages import ContentBlock, TextBlock, ThinkingBlock
from app.core.responses import ChatResponse, FinishReason, Usage
from app.core.tools import GenerateOptions
from app.core.urls import public_url
from app.llm.errors import ModelError, ModelResponseError
from app.llm.openai_format import OpenAIChatFormatter
from app.llm.sse import SSEvent
from app.llm.streaming import StreamingChatModel, StreamParser, message_of, upstream_error
from app.llm.toolcalls import ToolCallBuffer

_VERSION_PATH = re.compile(r"/v\d+\b")
"""`/v1`, `/api/paas/v4`: a base URL with an API version in its path."""
FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class OpenAIChatModel(StreamingChatModel):
    provider = "openai"
    formatter = OpenAIChatFormatter()
    structured_parameters = ("response_format", "json_schema", "json_object")
    image_max_side = 2048
    """OpenAI scales a picture to fit 2048 x 2048 before it reads it."""

    def endpoint(self, base_url: str) -> str:
        return f"{base_url}/chat/completions"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def parser(self, options: GenerateOptions) -> StreamParser:
        return OpenAIStreamParser()

    def http_error(self, status: int, body: bytes, retry_after: float | None) -> ModelError:
        error = super().http_error(status, body, retry_after)
        base_url = self.config.base_url.rstrip("/")
        if status == 404 and not _VERSION_PATH.search(urlsplit(base_url).path):
            # The commonest first-hour mistake: http://host:11434 for http://host:11434/v1.
            error.hint = (
                "LLM_BASE_URL has no version in its path, and OpenAI-compatible servers "
                f"answer under /v1: try LLM_BASE_URL={public_url(base_url)}/v1"
            )
        return error


class OpenAIStreamParser(StreamParser):
    def feed(self, event: SSEvent) -> ChatResponse | None:
        if event.data == "[DONE]":
            self.ended = True
            return None
        return super().feed(event)

    def read(self, event: str, payload: Any) -> list[ContentBlock]:
        error = payload.get("error")
        if error:
            raise _in_band_error(error)
        usage = payload.get("usage")
        if usage:
            self.usage = Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)
        choices = payload.get("choices")
        if not choices:
            return []
        self.id = payload.get("id") or self.id
        choice = choices[0]
        reason = choice.get("finish_reason")
        if reason:
            self.finish = FINISH_REASONS.get(reason, "stop")
        return read_delta(choice.get("delta") or {}, self.calls)


def read_delta(delta: dict[str, Any], calls: ToolCallBuffer) -> list[ContentBlock]:
    """The thinking and text of one OpenAI-style delta; its tool-call fragments go to `calls`.

    DashScope's native `message` has the same fields, so its adapter reads it here too.
    """
    content: list[ContentBlock] = []
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    if reasoning:
        content.append(ThinkingBlock(reasoning))
    text = delta.get("content")
    if text and isinstance(text, str):
        content.append(TextBlock(text))
    for fragment in delta.get("tool_calls") or ():
        function = fragment.get("function") or {}
        calls.add(
            fragment.get("index"),
            call_id=fragment.get("id"),
            name=function.get("name"),
            arguments=function.get("arguments"),
        )
    return content


def _in_band_error(error: Any) -> Exception:
    """vLLM sends `{"error": {"code": 500, ...}}`; without a status code it is just bad."""
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, int):
        return upstream_error(code, message_of(error))
    return ModelResponseError(f"upstream error: {message_of(error)}")
