"""The adapter for Google's Gemini API (`models/{model}:streamGenerateContent?alt=sse`).

The key goes in the `x-goog-api-key` header, never in the `?key=` query
parameter, which would put it in every logged URL. Each event is a whole
`GenerateContentResponse`: candidate parts carry text, thoughts (`thought:
true`, streamed as thinking) and complete `functionCall`s; `usageMetadata`
holds the running token counts; `finishReason` comes with the last one.
There is no end marker, so a stream that stops before a finish reason was cut.

A blocked prompt (`promptFeedback.blockReason`) or answer (a safety-class
finish reason) is a `ModelContentBlocked` error, so the user is told why
there is no answer. A 429 tells its wait in the body's `RetryInfo`, which is
honoured like a Retry-After header.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from app.core.messages import ContentBlock, TextBlock, ThinkingBlock
from app.core.responses import FinishReason, Usage
from app.core.tools import GenerateOptions
from app.llm.errors import ModelContentBlocked, ModelError, ModelResponseError
from app.llm.gemini_format import GeminiChatFormatter
from app.llm.streaming import StreamingChatModel, StreamParser, message_of, upstream_error

FINISH_REASONS: dict[str, FinishReason] = {"STOP": "stop", "MAX_TOKENS": "length"}
BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
    }
)
"""Finish reasons that mean a filter stopped the answer."""
_SECONDS = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class GeminiChatModel(StreamingChatModel):
    provider = "gemini"
    structured_parameters = (
        "responseJsonSchema",
        "response_json_schema",
        "responseMimeType",
        "response_mime_type",
    )
    formatter = GeminiChatFormatter()
    image_max_side = 3072
    """Gemini scales a picture to fit 3072 x 3072 before it reads it."""

    def endpoint(self, base_url: str) -> str:
        model = self.config.model.removeprefix("models/")
        return f"{base_url}/models/{model}:streamGenerateContent?alt=sse"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def parser(self, options: GenerateOptions) -> StreamParser:
        return GeminiStreamParser()

    def http_error(self, status: int, body: bytes, retry_after: float | None) -> ModelError:
        if retry_after is None:
            retry_after = _retry_delay(body)
        return super().http_error(status, body, retry_after)


class GeminiStreamParser(StreamParser):
    def read(self, event: str, payload: Any) -> list[ContentBlock]:
        if "error" in payload:
            error = payload["error"]
            raise upstream_error(error.get("code"), message_of(error))
        self.id = payload.get("responseId") or self.id
        meta = payload.get("usageMetadata")
        if meta:
            self.usage = Usage(
                (meta.get("promptTokenCount") or 0) + (meta.get("toolUsePromptTokenCount") or 0),
                (meta.get("candidatesTokenCount") or 0) + (meta.get("thoughtsTokenCount") or 0),
            )
        blocked = (payload.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            raise ModelContentBlocked(f"prompt blocked: {blocked}")
        candidates = payload.get("candidates")
        if not candidates:
            return []
        candidate = candidates[0]
        content: list[ContentBlock] = []
        for part in (candidate.get("content") or {}).get("parts") or ():
            call = part.get("functionCall")
            if call is not None:
                self.calls.add(
                    self.calls.next_index(),
                    call_id=call.get("id"),
                    name=call["name"],
                    arguments=orjson.dumps(call.get("args") or {}).decode(),
                    signature=part.get("thoughtSignature"),
                )
            elif part.get("text"):
                text = part["text"]
                content.append(ThinkingBlock(text) if part.get("thought") else TextBlock(text))
        reason = candidate.get("finishReason")
        if reason in BLOCKED:
            raise ModelContentBlocked(f"answer blocked: {reason}")
        if reason == "MALFORMED_FUNCTION_CALL":
            raise ModelResponseError("the model wrote a function call that could not be parsed")
        if reason:
            self.finish = FINISH_REASONS.get(reason, "stop")
        return content


def _retry_delay(body: bytes) -> float | None:
    """`retryDelay` of a `google.rpc.RetryInfo` detail in an error body, e.g. "36s"."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(payload, list) and payload:
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        match = _SECONDS.match(delay) if isinstance(delay, str) else None
        if match:
            return float(match.group(1))
    return None
