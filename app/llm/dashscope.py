"""The adapter for DashScope's native API (Alibaba Cloud Model Studio, the Qwen models).

`POST {base}/services/aigc/text-generation/generation` with a Bearer key and
`X-DashScope-SSE: enable`. Events are `event:result` with a `:HTTP_STATUS/200`
comment (which the SSE decoder skips) and a payload whose
`output.choices[0].message` reads like an OpenAI delta: `content`,
`reasoning_content` and `tool_calls` fragments, so it is read by the same
code. `finish_reason` is the string "null" until the last event; `usage`
(`input_tokens`, `output_tokens`) is in every event, the last one counting.

Errors, as an error status or an `event:error` in the stream, carry a
`code`: rate limits (`Throttling…`) and server faults are classed so they
are retried, and a content-inspection refusal (`DataInspectionFailed`) is a
`ModelContentBlocked` error rather than a bad request.
"""

from __future__ import annotations

from typing import Any

from app.core.messages import ContentBlock
from app.core.responses import Usage
from app.core.tools import GenerateOptions
from app.llm.dashscope_format import DashScopeChatFormatter
from app.llm.errors import ModelContentBlocked, ModelError
from app.llm.openai import FINISH_REASONS, read_delta
from app.llm.streaming import StreamingChatModel, StreamParser, upstream_error

ERROR_STATUS: dict[str, int] = {
    "Throttling": 429,
    "InvalidApiKey": 401,
    "AccessDenied": 403,
    "InternalError": 500,
    "SystemError": 500,
    "ServiceUnavailable": 503,
}
"""The HTTP status of an error code, by the code's first dotted part; others are 400."""
CONTENT_BLOCKED = "DataInspectionFailed"


class DashScopeChatModel(StreamingChatModel):
    provider = "dashscope"
    structured_parameters = ("response_format",)
    formatter = DashScopeChatFormatter()

    def endpoint(self, base_url: str) -> str:
        return f"{base_url}/services/aigc/text-generation/generation"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}", "X-DashScope-SSE": "enable"}

    def parser(self, options: GenerateOptions) -> StreamParser:
        return DashScopeStreamParser()

    def http_error(self, status: int, body: bytes, retry_after: float | None) -> ModelError:
        error = super().http_error(status, body, retry_after)
        if CONTENT_BLOCKED.encode() in body:
            return ModelContentBlocked(error.detail)
        return error


class DashScopeStreamParser(StreamParser):
    def read(self, event: str, payload: Any) -> list[ContentBlock]:
        if event == "error" or ("output" not in payload and "code" in payload):
            raise _error(payload)
        self.id = payload.get("request_id") or self.id
        usage = payload.get("usage")
        if usage:
            self.usage = Usage(usage.get("input_tokens") or 0, usage.get("output_tokens") or 0)
        choices = (payload.get("output") or {}).get("choices")
        if not choices:
            return []
        choice = choices[0]
        reason = choice.get("finish_reason")
        if reason and reason != "null":
            self.finish = FINISH_REASONS.get(reason, "stop")
        return read_delta(choice.get("message") or {}, self.calls)


def _error(payload: Any) -> ModelError:
    code = str(payload.get("code") or "")
    message = f"{code}: {payload.get('message') or ''}"
    if code == CONTENT_BLOCKED:
        return ModelContentBlocked(message)
    return upstream_error(ERROR_STATUS.get(code.split(".")[0], 400), message)
