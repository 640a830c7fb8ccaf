"""`FakeAnthropic`: the scripted server speaking Anthropic's Messages streaming format.

Named events, as documented: `message_start` (with the input tokens), a
`ping`, then per content block `content_block_start`, its deltas
(`thinking_delta` then a `signature_delta`, `text_delta`, `input_json_delta`
for a tool's arguments, whose first fragment is empty as Anthropic's is) and
`content_block_stop`; then `message_delta` (stop reason, output tokens) and
`message_stop`. `RedactedThinkingReply` adds what Anthropic sends when its
safety systems encrypt reasoning: a `redacted_thinking` block whose opaque
`data` comes whole in `content_block_start`, with no deltas. Errors are
`{"type": "error", "error": {"type", "message"}}`, as a status or as an
`error` event.

Like the real API it refuses a request without `x-api-key` or
`anthropic-version`, without `max_tokens`, with a role other than user and
assistant, with an empty text block, or with tool uses and results that do
not pair (`tool_pairing_problem`); and a forced tool (`tool_choice`
`{"type": "tool", "name"}`, how a structured answer is asked for) that is
not among the tools, or asked for while thinking. A structured answer comes
back as that tool's call, its input streamed in `input_json_delta`s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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
    ToolCallsReply,
    Wire,
    split,
)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use"}
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def frame(payload: Body) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (payload["type"].encode(), orjson.dumps(payload))


def delta(index: int, content: Body) -> bytes:
    return frame({"type": "content_block_delta", "index": index, "delta": content})


def _words_of(content: Any) -> int:
    """Words in a system prompt or message content: a string, or a list of blocks."""
    if isinstance(content, str):
        return len(content.split())
    return sum(_words_of(b.get("text") or b.get("content") or "") for b in content)


class AnthropicEncoder(Encoder):
    def __init__(self, request: Body, response_id: str) -> None:
        super().__init__(request, response_id)
        self._index = -1
        self._open: str | None = None
        """The type of the content block being streamed."""

    @classmethod
    def error_body(cls, status: int, message: str) -> bytes:
        kind = ERROR_TYPES.get(status, "api_error")
        return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})

    def prompt_tokens(self) -> int:
        system = _words_of(self.request.get("system") or "")
        return system + sum(_words_of(m["content"]) for m in self.request.get("messages", []))

    def sent_options(self) -> Body:
        keys = ("temperature", "max_tokens", "top_p")
        options = {k: self.request[k] for k in keys if k in self.request}
        choice = self.request.get("tool_choice")
        if choice is not None:
            options["tool_choice"] = CHOICES.get(choice["type"]) or choice["name"]
        return options

    def opening(self, usage: Tokens | None) -> list[bytes]:
        prompt_tokens = usage[0] if usage else self.prompt_tokens()
        message = {
            "id": self.response_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.request.get("model", "fake-model"),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
        }
        return [frame({"type": "message_start", "message": message}), frame({"type": "ping"})]

    def thinking(self, piece: str) -> list[bytes]:
        block = self._switch("thinking", {"type": "thinking", "thinking": ""})
        return [*block, delta(self._index, {"type": "thinking_delta", "thinking": piece})]

    def text(self, piece: str) -> list[bytes]:
        block = self._switch("text", {"type": "text", "text": ""})
        return [*block, delta(self._index, {"type": "text_delta", "text": piece})]

    def tool_calls(self, calls: Sequence[Call], fragments: int) -> list[bytes]:
        frames = self._close()
        for call in calls:
            named = {} if call.id is None else {"id": call.id}
            block = {"type": "tool_use", **named, "name": call.name, "input": {}}
            frames += self._switch("tool_use", block)
            for part in ["", *split(call.arguments, parts=fragments)]:
                frames.append(
                    delta(self._index, {"type": "input_json_delta", "partial_json": part})
                )
            frames += self._close()
        return frames

    def structured(self, answer: str) -> tuple[list[bytes], Finish]:
        forced = self.request["tool_choice"]["name"]
        return self.tool_calls([Call(f"toolu_{self.response_id}", forced, answer)], 3), "tool_calls"

    def redacted_thinking(self, data: str) -> list[bytes]:
        frames = self._close()
        self._index += 1
        block = {"type": "redacted_thinking", "data": data}
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return [*frames, frame(start), frame({"type": "content_block_stop", "index": self._index})]

    def closing(self, finish: Finish, usage: Tokens | None) -> list[bytes]:
        message_delta = {
            "type": "message_delta",
            "delta": {"stop_reason": STOP_REASONS[finish], "stop_sequence": None},
            "usage": {"output_tokens": usage[1] if usage else 1},
        }
        return [*self._close(), frame(message_delta), frame({"type": "message_stop"})]

    def malformed(self) -> bytes:
        return (
            b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "de\n\n'
        )

    def stream_error(self, status: int, message: str) -> list[bytes]:
        error = {"type": ERROR_TYPES.get(status, "api_error"), "message": message}
        return [frame({"type": "error", "error": error})]

    def _switch(self, kind: str, block: Body) -> list[bytes]:
        """Start a block of this kind unless one is open."""
        if self._open == kind and kind != "tool_use":
            return []
        frames = self._close()
        self._index += 1
        self._open = kind
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        return [*frames, frame(start)]

    def _close(self) -> list[bytes]:
        if self._open is None:
            return []
        frames = []
        if self._open == "thinking":
            signature = {"type": "signature_delta", "signature": f"sig-fake-{self._index}"}
            frames.append(delta(self._index, signature))
        self._open = None
        return [*frames, frame({"type": "content_block_stop", "index": self._index})]


class FakeAnthropic(ScriptedServer):
    encoder = AnthropicEncoder
    base_path = "/v1"
    refused_native = "tool_choice: forcing a tool is not supported by this model"

    def requested(self, body: Body) -> Requested | None:
        choice = body.get("tool_choice") or {}
        if choice.get("type") != "tool":
            return None
        tool = next(t for t in body["tools"] if t["name"] == choice["name"])
        return Requested(tool["name"], tool["input_schema"])

    def system_text(self, body: Body) -> str:
        return str(body.get("system") or "")

    def tool_result_count(self, body: Body) -> int:
        return sum(
            b.get("type") == "tool_result"
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        )

    def is_chat(self, request: Request) -> bool:
        return request.method == "POST" and request.target == "/v1/messages"

    def refusal(self, request: Request, body: Body) -> Reply | None:
        if not request.headers.get("x-api-key"):
            return Reply.error(401, message="x-api-key header is required")
        if not request.headers.get("anthropic-version"):
            return Reply.error(400, message="anthropic-version: header is required")
        if "max_tokens" not in body or body.get("stream") is not True:
            return Reply.error(400, message="max_tokens: Field required (and only streams here)")
        for message in body.get("messages", []):
            if message.get("role") not in ("user", "assistant"):
                return Reply.error(400, message=f"messages: unexpected role {message.get('role')}")
            for block in message["content"]:
                if block.get("type") == "text" and not block.get("text"):
                    return Reply.error(
                        400, message="messages: text content blocks must be non-empty"
                    )
        problem = tool_pairing_problem(body.get("messages", []))
        if problem is not None:
            return Reply.error(400, message=problem)
        return _forced_tool_refusal(body)


def tool_pairing_problem(messages: list[Body]) -> str | None:
    """What Anthropic says of tool uses and results that do not pair, if anything: each
    `tool_use` has an id of its own in the request, answered by a `tool_result` in the
    next message, and a result answers a use of the message before."""
    seen: set[str] = set()
    waiting: list[str] = []
    for at, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        answered = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        stray = [a for a in answered if a not in waiting]
        if stray:
            return (
                f"messages.{at}.content: unexpected `tool_use_id` found in `tool_result` blocks:"
                f" {stray[0]}. Each `tool_result` block must have a corresponding `tool_use`"
                " block in the previous message."
            )
        unanswered = [w for w in waiting if w not in answered]
        if unanswered:
            return (
                f"messages.{at - 1}: `tool_use` ids were found without `tool_result` blocks"
                f" immediately after: {', '.join(unanswered)}."
            )
        waiting = []
        for n, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            use_id = str(block.get("id") or "")
            if not TOOL_USE_ID.match(use_id) or not block.get("name"):
                return (
                    f"messages.{at}.content.{n}.tool_use: `id` should match pattern"
                    " '^[a-zA-Z0-9_-]+$' and `name` be non-empty."
                )
            if use_id in seen:
                return f"messages.{at}.content.{n}: `tool_use` ids must be unique"
            seen.add(use_id)
            waiting.append(use_id)
    return None


def _forced_tool_refusal(body: Body) -> Reply | None:
    choice = body.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return None
    if choice.get("name") not in [t["name"] for t in body.get("tools", [])]:
        return Reply.error(400, message=f"tool_choice: tool {choice.get('name')!r} not found")
    if (body.get("thinking") or {}).get("type") == "enabled":
        return Reply.error(
            400, message="Thinking may not be enabled when tool_choice forces tool use."
        )
    return None


@dataclass(frozen=True)
class RedactedThinkingReply(Reply):
    """A `redacted_thinking` block first, then `then`'s tool calls."""

    data: str
    then: ToolCallsReply

    async def play(self, wire: Wire) -> None:
        encoder = wire.encoder
        assert isinstance(encoder, AnthropicEncoder)
        calls = wire.calls(self.then.calls)
        usage = wire.usage(True, self.then.fragments * len(calls))
        await wire.start()
        await wire.send(encoder.opening(usage))
        await wire.send(encoder.redacted_thinking(self.data))
        await wire.send(encoder.tool_calls(calls, self.then.fragments))
        await wire.send(encoder.closing("tool_calls", usage))
        await wire.end()
