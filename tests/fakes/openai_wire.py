"""OpenAI's streaming wire format, built by hand, and the checks its messages must pass.

`FakeOpenAI` serves these chunks over a socket; unit tests hand them to the
real `OpenAIChatModel` through httpx's `MockTransport` (`mock_transport.py`),
cut wherever they like, without any socket. `FakeDashScope`, whose messages
are OpenAI's, checks them the same way.
"""

from __future__ import annotations

import orjson

from tests.fakes.scripted_server import Body


def chat_chunk(
    choices: list[Body],
    *,
    chunk_id: str = "chatcmpl-test",
    model: str = "fake-model",
    created: int = 1700000000,
) -> Body:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": choices,
    }


def choice(delta: Body, finish_reason: str | None = None) -> Body:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def delta_chunk(delta: Body, finish_reason: str | None = None) -> Body:
    return chat_chunk([choice(delta, finish_reason)])


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> Body:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return {**chat_chunk([]), "usage": usage}


def sse(*events: Body | str) -> bytes:
    """`data:` events; a str (like "[DONE]") is sent as is."""
    return b"".join(
        b"data: " + (e.encode() if isinstance(e, str) else orjson.dumps(e)) + b"\n\n"
        for e in events
    )


UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to"
    " each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def tool_pairing_problem(messages: list[Body]) -> str | None:
    """What OpenAI says of messages whose tool calls and results do not pair, if anything.

    Each call needs an id and a name, the ids of one message told apart (a
    server pairs results by id), and the tool messages right after it answer
    each call once.
    """
    waiting: list[str] | None = None
    """The ids of the open assistant message's calls still to answer; None: no call is open."""
    for at, message in enumerate(messages):
        if message.get("role") == "tool":
            answered = message.get("tool_call_id")
            if waiting is None or answered not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a"
                    f" preceeding message with 'tool_calls' (messages[{at}]: {answered!r})."
                )
            waiting.remove(answered)
            continue
        if waiting:
            return UNANSWERED + ", ".join(waiting)
        waiting = None
        calls = (message.get("tool_calls") or []) if message.get("role") == "assistant" else []
        for n, call in enumerate(calls):
            named = {"id": call.get("id"), "function.name": call["function"].get("name")}
            for field, value in named.items():
                if not value:
                    return (
                        f"Invalid 'messages[{at}].tool_calls[{n}].{field}': empty string."
                        " Expected a string with minimum length 1."
                    )
        if calls:
            waiting = [str(call["id"]) for call in calls]
            if len(set(waiting)) < len(waiting):
                return f"Invalid 'messages[{at}].tool_calls': tool call ids must be unique."
    return UNANSWERED + ", ".join(waiting) if waiting else None
