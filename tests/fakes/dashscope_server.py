"""`FakeDashScope`: the scripted server speaking DashScope's native streaming format.

With `X-DashScope-SSE: enable`, `result_format: message` and
`incremental_output: true`, each event is `id:N`, `event:result`, a
`:HTTP_STATUS/200` comment and a `data:` payload (no space after the colons,
as DashScope writes them) holding `output.choices[0].message` (new
`content`, `reasoning_content`, `tool_calls` fragments), a `finish_reason`
that is the string "null" until the last event, the running `usage` and the
`request_id`. Errors are `{"code", "message", "request_id"}`, as a status or
as an `event:error`.

Like the real API it refuses a request without a Bearer key or a message
whose `content` is not a string, and tool calls and results that do not
pair, as OpenAI's (`tool_pairing_problem`); it serves only the streamed, incremental,
message-format answers our adapter asks for. JSON mode
(`parameters.response_format: {"type": "json_object"}`) needs the word
"json" in the messages and thinking off, as Model Studio's documents say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from tests.fakes.openai_wire import tool_pairing_problem
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
    split,
)

CODES = {
    400: "InvalidParameter",
    401: "InvalidApiKey",
    429: "Throttling.RateQuota",
    500: "InternalError",
    503: "ServiceUnavailable",
}
PATH = "/api/v1/services/aigc/text-generation/generation"


def frame(number: int, payload: Body, *, event: str = "result", status: int = 200) -> bytes:
    head = b"id:%d\nevent:%s\n:HTTP_STATUS/%d\n" % (number, event.encode(), status)
    return head + b"data:" + orjson.dumps(payload) + b"\n\n"


def error(status: int, message: str) -> Body:
    return {"code": CODES.get(status, "InternalError"), "message": message, "request_id": "req-e"}


class DashScopeEncoder(Encoder):
    def __init__(self, request: Body, response_id: str) -> None:
        super().__init__(request, response_id)
        self._sent = 0

    @classmethod
    def error_body(cls, status: int, message: str) -> bytes:
        return orjson.dumps(error(status, message))

    def prompt_tokens(self) -> int:
        messages = (self.request.get("input") or {}).get("messages", [])
        return sum(len(str(m.get("content") or "").split()) for m in messages)

    def sent_options(self) -> Body:
        parameters = self.request.get("parameters") or {}
        keys = ("temperature", "max_tokens", "top_p")
        options = {k: parameters[k] for k in keys if k in parameters}
        choice = parameters.get("tool_choice")
        if isinstance(choice, dict):
            choice = choice["function"]["name"]
        if choice is not None:
            options["tool_choice"] = choice
        return options

    def thinking(self, piece: str) -> list[bytes]:
        return [self._event({"content": "", "reasoning_content": piece, "role": "assistant"})]

    def text(self, piece: str) -> list[bytes]:
        return [self._event({"content": piece, "reasoning_content": "", "role": "assistant"})]

    def tool_calls(self, calls: Sequence[Call], fragments: int) -> list[bytes]:
        frames = []
        for index, call in enumerate(calls):
            for n, part in enumerate(split(call.arguments, parts=fragments)):
                function = {"name": call.name, "arguments": part} if n == 0 else {"arguments": part}
                fragment = {
                    "index": index,
                    "id": (call.id or "") if n == 0 else "",
                    "type": "function",
                    "function": function,
                }
                frames.append(
                    self._event({"content": "", "role": "assistant", "tool_calls": [fragment]})
                )
        return frames

    def closing(self, finish: Finish, usage: Tokens | None) -> list[bytes]:
        self.usage = usage
        return [self._event({"content": "", "role": "assistant"}, finish)]

    def malformed(self) -> bytes:
        return b'id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"output": {"choices": [{"mess\n\n'

    def stream_error(self, status: int, message: str) -> list[bytes]:
        return [frame(self._sent + 1, error(status, message), event="error", status=status)]

    def _event(self, message: Body, finish: str = "null") -> bytes:
        self._sent += 1
        payload: dict[str, Any] = {
            "output": {"choices": [{"message": message, "finish_reason": finish}]},
            "request_id": self.response_id,
        }
        if self.usage is not None:
            prompt, completion = self.usage
            done = completion if finish != "null" else min(self._sent, completion)
            payload["usage"] = {
                "input_tokens": prompt,
                "output_tokens": done,
                "total_tokens": prompt + done,
            }
        return frame(self._sent, payload)


class FakeDashScope(ScriptedServer):
    encoder = DashScopeEncoder
    base_path = "/api/v1"
    refused_native = "The parameter response_format is not supported by this model."

    def requested(self, body: Body) -> Requested | None:
        form = (body.get("parameters") or {}).get("response_format") or {}
        return Requested("", None) if form.get("type") == "json_object" else None

    def system_text(self, body: Body) -> str:
        messages = body["input"]["messages"]
        return next((m["content"] for m in messages if m["role"] == "system"), "")

    def tool_result_count(self, body: Body) -> int:
        return sum(m["role"] == "tool" for m in body["input"]["messages"])

    def is_chat(self, request: Request) -> bool:
        return request.method == "POST" and request.target == PATH

    def refusal(self, request: Request, body: Body) -> Reply | None:
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return Reply.error(401, message="Invalid API-key provided.")
        parameters = body.get("parameters") or {}
        streamed = request.headers.get("x-dashscope-sse") == "enable"
        if not streamed or parameters.get("incremental_output") is not True:
            return Reply.error(400, message="fake: only incremental streams are served")
        if parameters.get("result_format") != "message":
            return Reply.error(400, message="fake: only result_format=message is served")
        messages = (body.get("input") or {}).get("messages", [])
        for message in messages:
            if not isinstance(message.get("content"), str):
                return Reply.error(400, message="Input should be a valid string: content")
        problem = tool_pairing_problem(messages)
        if problem is not None:
            return Reply.error(400, message=problem)
        if self.requested(body) is not None:
            if "json" not in orjson.dumps(body["input"]["messages"]).decode().casefold():
                return Reply.error(
                    400, message="'messages' must contain the word 'json' to use json_object."
                )
            if parameters.get("enable_thinking"):
                return Reply.error(
                    400, message="response_format json_object does not work in thinking mode."
                )
        return None
