"""OpenAI's streaming wire format, built by hand.

`FakeOpenAI` serves these chunks over a socket; unit tests hand them to the
real `OpenAIChatModel` through httpx's `MockTransport` (`mock_transport.py`),
cut wherever they like, without any socket.
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
