"""`FakeOpenAI`: the scripted server speaking OpenAI's Chat Completions streaming format.

`chat.completion.chunk` objects, one per `data:` event: a first delta with
the role, `reasoning_content` deltas (DeepSeek's field) for thinking,
`tool_calls` fragments interleaved across parallel calls (the hardest order
for a client to reassemble), a finish chunk, a usage chunk with `choices: []`
when `stream_options.include_usage` was asked for, then `data: [DONE]`.
No key is required, as with local servers.

Structured output is read from `response_format` as OpenAI documents it:
`json_schema` with a `name` and a `schema` (a `strict` one must close every
object and require every property), or `json_object`, which needs the word
"json" in the messages. A malformed one is refused with OpenAI's 400, and so
are tool calls and results that do not pair (`tool_pairing_problem`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import orjson

from tests.fakes.openai_wire import chat_chunk, choice, sse, tool_pairing_problem
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

_FIRST_DELTA: Body = {"role": "assistant", "content": "", "refusal": None}
_SAMPLING = ("temperature", "max_tokens", "top_p")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def strict_problem(schema: Body, where: str = "()") -> str | None:
    """What OpenAI's strict mode refuses in `schema`, if anything (a few of its rules)."""
    if where == "()" and schema.get("type") != "object":
        return "schema must be a JSON Schema of 'type: \"object\"'."
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied"
                " and to be false."
            )
        missing = set(schema.get("properties", {})) - set(schema.get("required", []))
        if missing:
            return (
                f"In context={where}, 'required' is required to include every property:"
                f" {sorted(missing)}."
            )
    for key in ("default", "minLength", "maxLength", "prefixItems"):
        if key in schema:
            return f"In context={where}, '{key}' is not permitted."
    children = [*schema.get("properties", {}).values(), *schema.get("$defs", {}).values()]
    children += schema.get("anyOf", [])
    if isinstance(schema.get("items"), dict):
        children.append(schema["items"])
    return next((p for c in children if (p := strict_problem(c, f"{where}.*")) is not None), None)


class OpenAIEncoder(Encoder):
    def __init__(self, request: Body, response_id: str) -> None:
        super().__init__(request, response_id)
        self._created = int(time.time())
        self._model = str(request.get("model", "fake-model"))
        self._with_usage = bool((request.get("stream_options") or {}).get("include_usage"))

    @classmethod
    def error_body(cls, status: int, message: str) -> bytes:
        kind = "rate_limit_exceeded" if status == 429 else "server_error"
        return orjson.dumps(
            {"error": {"message": message, "type": kind, "param": None, "code": None}}
        )

    def prompt_tokens(self) -> int:
        messages = self.request.get("messages", [])
        return sum(len(str(m.get("content") or "").split()) for m in messages)

    def sent_options(self) -> Body:
        options = {k: self.request[k] for k in _SAMPLING if k in self.request}
        choice = self.request.get("tool_choice")
        if choice is not None:
            options["tool_choice"] = (
                choice if isinstance(choice, str) else choice["function"]["name"]
            )
        return options

    def opening(self, usage: Tokens | None) -> list[bytes]:
        return [self._delta(_FIRST_DELTA)]

    def thinking(self, piece: str) -> list[bytes]:
        return [self._delta({"reasoning_content": piece})]

    def text(self, piece: str) -> list[bytes]:
        return [self._delta({"content": piece})]

    def tool_calls(self, calls: Sequence[Call], fragments: int) -> list[bytes]:
        deltas: list[list[Body]] = []
        for index, call in enumerate(calls):
            named = {} if call.id is None else {"id": call.id}
            first = {"index": index, **named, "type": "function"}
            function = {"name": call.name, "arguments": ""}
            rest = split(call.arguments, parts=fragments)
            deltas.append(
                [{**first, "function": function}]
                + [{"index": index, "function": {"arguments": part}} for part in rest]
            )
        frames = []
        # Round-robin across calls: the hardest order for a client to reassemble.
        for step in range(max(map(len, deltas), default=0)):
            for call_deltas in deltas:
                if step < len(call_deltas):
                    frames.append(self._delta({"tool_calls": [call_deltas[step]]}))
        return frames

    def closing(self, finish: Finish, usage: Tokens | None) -> list[bytes]:
        frames = [self._delta({}, finish)]
        if usage is not None and self._with_usage:
            prompt_tokens, completion_tokens = usage
            counts = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            frames.append(sse({**self._chunk([]), "usage": counts}))
        return [*frames, sse("[DONE]")]

    def malformed(self) -> bytes:
        return b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oo\n\n'

    def stream_error(self, status: int, message: str) -> list[bytes]:
        # vLLM's shape: the HTTP status the failure would have had, as `code`.
        return [sse({"error": {"message": message, "type": "server_error", "code": status}})]

    def _delta(self, delta: Body, finish_reason: str | None = None) -> bytes:
        return sse(self._chunk([choice(delta, finish_reason)]))

    def _chunk(self, choices: list[Body]) -> Body:
        chunk = chat_chunk(
            choices, chunk_id=self.response_id, model=self._model, created=self._created
        )
        if self._with_usage:
            chunk["usage"] = None
        return chunk


class FakeOpenAI(ScriptedServer):
    encoder = OpenAIEncoder
    base_path = "/v1"
    refused_native = "Unrecognized request argument supplied: response_format"

    def refusal(self, request: Request, body: Body) -> Reply | None:
        problem = tool_pairing_problem(body.get("messages", []))
        if problem is not None:
            return Reply.error(400, message=problem)
        form = body.get("response_format")
        if form is None:
            return None
        if form.get("type") == "json_object":
            if "json" not in orjson.dumps(body.get("messages")).decode().casefold():
                return Reply.error(
                    400,
                    message="'messages' must contain the word 'json' in some form, to use "
                    "'response_format' of type 'json_object'.",
                )
            return None
        spec = form.get("json_schema") or {}
        if form.get("type") != "json_schema" or not _NAME.match(str(spec.get("name", ""))):
            return Reply.error(400, message="Invalid value for 'response_format'.")
        if not isinstance(spec.get("schema"), dict):
            return Reply.error(
                400, message="Missing required parameter: 'response_format.json_schema.schema'."
            )
        problem = strict_problem(spec["schema"]) if spec.get("strict") else None
        if problem is not None:
            return Reply.error(
                400, message=f"Invalid schema for response_format '{spec['name']}': {problem}"
            )
        return None

    def requested(self, body: Body) -> Requested | None:
        form = body.get("response_format")
        if form is None:
            return None
        if form["type"] == "json_object":
            return Requested("", None)
        return Requested(form["json_schema"]["name"], form["json_schema"]["schema"])

    def system_text(self, body: Body) -> str:
        return next((str(m["content"]) for m in body["messages"] if m["role"] == "system"), "")

    def tool_result_count(self, body: Body) -> int:
        return sum(m["role"] == "tool" for m in body["messages"])

    def is_chat(self, request: Request) -> bool:
        # Exactly under the base path, as a real server: `/chat/completions` without
        # `/v1` answers 404, the commonest misconfiguration.
        return request.method == "POST" and request.target == f"{self.base_path}/chat/completions"
