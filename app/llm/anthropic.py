"""The adapter for Anthropic's Messages API (`POST /v1/messages`, streamed).

The key goes in `x-api-key` with the `anthropic-version` header. The stream is
named events: `message_start` (id, input tokens), then per content block a
`content_block_start`, its `content_block_delta`s and a `content_block_stop`,
then `message_delta` (stop reason, output tokens) and `message_stop`, with
`ping`s anywhere. Text and thinking deltas stream as they come; a thinking
block's `signature_delta` comes out as a thinking block with no text and the
signature (`accumulate` joins it to its block, so the loop can send it back);
`input_json_delta` fragments are assembled into whole tool calls, except
those of the forced tool that carries a structured answer (anthropic_format.py):
the first call of it streams out as the answer's text, as JSON answers do on
the other providers. A
`redacted_thinking` block (reasoning Anthropic's safety systems encrypted)
arrives whole in its `content_block_start` and is kept as it came, so the
loop sends it back with its tool calls; nothing of it is shown.

An `error` event (`overloaded_error` at busy times) is classed by the HTTP
status Anthropic documents for its type, so an overload before the first
chunk is retried exactly like a 529 status. Unknown event and block types are
skipped, as Anthropic's versioning policy asks of clients.
"""

from __future__ import annotations

from typing import Any

from app.core.messages import ContentBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock
from app.core.responses import ChatResponse, FinishReason, Usage
from app.core.tools import GenerateOptions
from app.llm.anthropic_format import AnthropicChatFormatter
from app.llm.streaming import StreamingChatModel, StreamParser, message_of, upstream_error

ANTHROPIC_VERSION = "2023-06-01"
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicChatModel(StreamingChatModel):
    provider = "anthropic"
    formatter = AnthropicChatFormatter()
    structured_parameters = ("tool_choice",)
    image_max_side = 1568
    """Anthropic scales down a picture whose longest side is over 1568 px."""

    def endpoint(self, base_url: str) -> str:
        return f"{base_url}/messages"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
            "x-api-key": key,
        }

    def parser(self, options: GenerateOptions) -> StreamParser:
        shape = options.get("response_format")
        return AnthropicStreamParser(shape.name if shape is not None else None)


class AnthropicStreamParser(StreamParser):
    def __init__(self, answer_tool: str | None = None) -> None:
        super().__init__()
        self._prompt_tokens = 0
        self._tool_blocks: set[int] = set()
        """Indexes of `tool_use` blocks: server tools' blocks stream JSON too, and are not ours."""
        self._answer_tool = answer_tool
        self._answer_block: int | None = None
        """The index of the block whose input is the structured answer."""

    def read(self, event: str, payload: Any) -> list[ContentBlock]:
        kind = payload["type"]
        if kind == "content_block_delta":
            return self._delta(payload["index"], payload["delta"])
        if kind == "content_block_start":
            return self._start(payload["index"], payload["content_block"])
        if kind == "message_start":
            message = payload["message"]
            self.id = message.get("id") or self.id
            self._usage(message.get("usage") or {})
        elif kind == "message_delta":
            reason = (payload.get("delta") or {}).get("stop_reason")
            if reason:
                self.finish = STOP_REASONS.get(reason, "stop")
            self._usage(payload.get("usage") or {})
        elif kind == "message_stop":
            self.ended = True
        elif kind == "error":
            error = payload.get("error") or {}
            raise upstream_error(ERROR_STATUS.get(str(error.get("type")), 500), message_of(error))
        return []

    def _start(self, index: int, block: dict[str, Any]) -> list[ContentBlock]:
        kind = block["type"]
        if kind == "tool_use" and block["name"] == self._answer_tool and self._answer_block is None:
            self._answer_block = index
        elif kind == "tool_use":
            self._tool_blocks.add(index)
            self.calls.add(index, call_id=block.get("id"), name=block["name"])
        elif kind == "text" and block.get("text"):
            return [TextBlock(block["text"])]
        elif kind == "thinking" and block.get("thinking"):
            return [ThinkingBlock(block["thinking"])]
        elif kind == "redacted_thinking":
            return [RedactedThinkingBlock(block["data"])]
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ContentBlock]:
        kind = delta["type"]
        if kind == "text_delta" and delta["text"]:
            return [TextBlock(delta["text"])]
        if kind == "thinking_delta" and delta["thinking"]:
            return [ThinkingBlock(delta["thinking"])]
        if kind == "signature_delta":
            return [ThinkingBlock("", signature=delta["signature"])]
        if kind == "input_json_delta" and index == self._answer_block and delta["partial_json"]:
            return [TextBlock(delta["partial_json"])]
        if kind == "input_json_delta" and index in self._tool_blocks:
            self.calls.add(index, arguments=delta["partial_json"])
        return []

    def final(self) -> ChatResponse:
        last = super().final()
        if (
            self._answer_block is not None
            and last.finish_reason == "tool_calls"
            and not last.content
        ):
            # Only the answer's forced tool was called: the answer is whole.
            last.finish_reason = "stop"
        return last

    def _usage(self, usage: dict[str, Any]) -> None:
        """Input tokens come in `message_start`, the running output count in `message_delta`.

        Cached input is billed apart but is still prompt the model read, so it counts.
        """
        if "input_tokens" in usage:
            self._prompt_tokens = sum(
                usage.get(k) or 0
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            )
        if "output_tokens" in usage or self.usage is None:
            self.usage = Usage(self._prompt_tokens, usage.get("output_tokens") or 0)
