"""`FakeGemini`: the scripted server speaking Gemini's `streamGenerateContent?alt=sse` format.

Each `data:` event (CRLF-terminated, as Google's servers send them) is a
whole `GenerateContentResponse`: one candidate whose parts carry text,
thoughts (`thought: true`) or a complete `functionCall` (Gemini never splits
a call's arguments), `usageMetadata` with the running counts, the
`responseId`, and on the last event `finishReason: STOP`, also after function
calls. Errors are `{"error": {"code", "message", "status"}}`; a 429 says when
to retry in a `google.rpc.RetryInfo` detail of the body, not in a header.

Like the real API it refuses a request without `x-goog-api-key` and turns
whose role is neither `user` nor `model`, a function call without a name or
not answered by as many function responses in the next turn, and a
`generationConfig` with a response schema (`responseJsonSchema` or
`responseSchema`, not both) but no `responseMimeType: application/json`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from tests.fakes.scripted_server import (
    Body,
    Call,
    Encoder,
    Finish,
    Reply,
    Request,
    Requested,
    ScriptedServer,
    Tokens,
)

STATUSES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
MODES = {"AUTO": "auto", "NONE": "none"}
ROUTE = re.compile(r"^/v1beta/models/[^/:]+:streamGenerateContent\?alt=sse$")
_CONFIG = (("temperature", "temperature"), ("topP", "top_p"), ("maxOutputTokens", "max_tokens"))


def frame(payload: Body) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\r\n\r\n"


def error(status: int, message: str, details: list[Body] | None = None) -> Body:
    body: Body = {"code": status, "message": message, "status": STATUSES.get(status, "INTERNAL")}
    if details:
        body["details"] = details
    return {"error": body}


class GeminiEncoder(Encoder):
    def __init__(self, request: Body, response_id: str) -> None:
        super().__init__(request, response_id)
        self._sent = 0

    @classmethod
    def error_body(cls, status: int, message: str) -> bytes:
        return orjson.dumps(error(status, message))

    @classmethod
    def error_response(
        cls, status: int, message: str, retry_after: str | None
    ) -> tuple[dict[str, str], bytes]:
        try:
            seconds = float(retry_after) if retry_after is not None else None
        except ValueError:
            return super().error_response(status, message, retry_after)
        if seconds is None:
            return {}, cls.error_body(status, message)
        retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}
        return {}, orjson.dumps(error(status, message, [retry]))

    def prompt_tokens(self) -> int:
        contents = [self.request.get("systemInstruction") or {}, *self.request.get("contents", [])]
        return sum(len(str(p.get("text") or "").split()) for c in contents for p in c["parts"])

    def sent_options(self) -> Body:
        config = self.request.get("generationConfig") or {}
        options = {ours: config[theirs] for theirs, ours in _CONFIG if theirs in config}
        calling = (self.request.get("toolConfig") or {}).get("functionCallingConfig")
        if calling:
            names = calling.get("allowedFunctionNames")
            options["tool_choice"] = MODES.get(calling["mode"]) or (
                names[0] if names else "required"
            )
        return options

    def thinking(self, piece: str) -> list[bytes]:
        return [self._response([{"text": piece, "thought": True}])]

    def text(self, piece: str) -> list[bytes]:
        return [self._response([{"text": piece}])]

    def tool_calls(self, calls: Sequence[Call], fragments: int) -> list[bytes]:
        return [
            self._response(
                [
                    {
                        "functionCall": {
                            **({} if c.id is None else {"id": c.id}),
                            "name": c.name,
                            "args": orjson.loads(c.arguments),
                        }
                    }
                ]
            )
            for c in calls
        ]

    def closing(self, finish: Finish, usage: Tokens | None) -> list[bytes]:
        self.usage = usage
        return [self._response([{"text": ""}], finish="STOP")]

    def malformed(self) -> bytes:
        return b'data: {"candidates": [{"content": {"parts": [{"text": "oo\r\n\r\n'

    def stream_error(self, status: int, message: str) -> list[bytes]:
        return [frame(error(status, message))]

    def _response(self, parts: list[Body], finish: str | None = None) -> bytes:
        self._sent += 1
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        response: Body = {
            "candidates": [candidate],
            "modelVersion": "fake-model",
            "responseId": self.response_id,
        }
        if self.usage is not None:
            prompt, completion = self.usage
            done = completion if finish else min(self._sent, completion)
            response["usageMetadata"] = {
                "promptTokenCount": prompt,
                "candidatesTokenCount": done,
                "totalTokenCount": prompt + done,
            }
        return frame(response)


class FakeGemini(ScriptedServer):
    encoder = GeminiEncoder
    base_path = "/v1beta"
    refused_native = (
        'Invalid JSON payload received. Unknown name "responseJsonSchema" at '
        "'generation_config': Cannot find field."
    )

    def requested(self, body: Body) -> Requested | None:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") != "application/json":
            return None
        return Requested("", config.get("responseJsonSchema") or config.get("responseSchema"))

    def system_text(self, body: Body) -> str:
        parts = (body.get("systemInstruction") or {}).get("parts") or []
        return "".join(str(p.get("text") or "") for p in parts)

    def tool_result_count(self, body: Body) -> int:
        return sum("functionResponse" in p for c in body["contents"] for p in c["parts"])

    def is_chat(self, request: Request) -> bool:
        return request.method == "POST" and bool(ROUTE.match(request.target))

    def refusal(self, request: Request, body: Body) -> Reply | None:
        if not request.headers.get("x-goog-api-key"):
            return Reply.error(403, message="Method doesn't allow unregistered callers")
        for content in body.get("contents", []):
            if content.get("role") not in ("user", "model"):
                return Reply.error(400, message="Please use a valid role: user, model.")
        problem = function_pairing_problem(body.get("contents", []))
        if problem is not None:
            return Reply.error(400, message=problem)
        config = body.get("generationConfig") or {}
        schemas = [k for k in ("responseJsonSchema", "responseSchema") if k in config]
        if len(schemas) > 1:
            return Reply.error(400, message="responseSchema and responseJsonSchema: set only one.")
        if schemas and config.get("responseMimeType") != "application/json":
            return Reply.error(
                400, message=f"{schemas[0]} needs responseMimeType: application/json."
            )
        return None


def function_pairing_problem(contents: list[Body]) -> str | None:
    """What Gemini says of function calls and responses that do not pair, if anything."""
    calls = 0
    for at, content in enumerate(contents):
        parts = content.get("parts") or []
        responses = sum("functionResponse" in part for part in parts)
        if responses != calls:
            return (
                "Please ensure that the number of function response parts is equal to the"
                " number of function call parts of the function call turn."
            )
        for n, part in enumerate(parts):
            if "functionCall" in part and not part["functionCall"].get("name"):
                return f"* contents[{at}].parts[{n}].function_call.name: Name cannot be empty."
        calls = sum("functionCall" in part for part in parts)
    return None
