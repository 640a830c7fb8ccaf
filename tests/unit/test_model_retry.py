"""Retry, configuration and key hygiene of `ChatModel.stream()` over the OpenAI adapter.

Through httpx2's MockTransport: the adapter turns statuses and transport
errors into `ModelError`s, and the base class decides what to retry. Delays
are tiny, so the backoff is real but the tests stay fast.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx2
import pytest

from app.core.messages import Msg, TextBlock
from app.core.responses import ChatResponse, Retrying, accumulate
from app.llm.base import RetryPolicy
from app.llm.errors import ModelConnectionError, ModelHTTPError, ModelNotConfigured
from tests.fakes.mock_transport import Handler, mock_model, run
from tests.fakes.openai_wire import delta_chunk, sse

USER = [Msg.text("user", "hi")]
FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)
KEY = "sk-live-SECRET-0123456789"
OK_BODY = sse(delta_chunk({"content": "ok"}), delta_chunk({}, "stop"), "[DONE]")


def replies(*responses: Callable[[], httpx2.Response]) -> tuple[Handler, list[int]]:
    """A handler answering with these responses in turn (the last one forever), and a call count."""
    calls: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        return responses[min(len(calls), len(responses)) - 1]()

    return handle, calls


async def test_rate_limit_then_success_yields_a_notice_then_the_answer() -> None:
    handler, calls = replies(
        lambda: httpx2.Response(
            429, headers={"Retry-After": "1"}, json={"error": {"message": "slow"}}
        ),
        lambda: httpx2.Response(200, content=OK_BODY),
    )
    async with mock_model(handler, retry=FAST) as model:
        events, error = await run(model, USER)
    assert error is None
    # Retry-After (1 s) is honoured, capped by the policy's max_delay.
    assert events[0] == Retrying(attempt=1, delay=0.01, reason="LLM_RATE_LIMITED")
    chunks = [e for e in events[1:] if isinstance(e, ChatResponse)]
    assert len(chunks) == len(events) - 1
    assert accumulate(chunks).content == [TextBlock("ok")]
    assert len(calls) == 2


async def test_server_errors_forever_give_up_after_max_retries() -> None:
    handler, calls = replies(lambda: httpx2.Response(500, text="upstream exploded"))
    async with mock_model(handler, retry=FAST) as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert (error.status, error.code, error.retryable) == (500, "LLM_UNAVAILABLE", True)
    assert error.detail == "HTTP 500: upstream exploded"
    assert [type(e) for e in events] == [Retrying, Retrying]
    assert [e.attempt for e in events if isinstance(e, Retrying)] == [1, 2]
    assert len(calls) == 3


async def test_client_errors_are_not_retried() -> None:
    handler, calls = replies(lambda: httpx2.Response(400, json={"error": {"message": "bad tools"}}))
    async with mock_model(handler, retry=FAST) as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert (error.code, error.detail) == ("LLM_BAD_REQUEST", "HTTP 400: bad tools")
    assert events == []
    assert len(calls) == 1


async def test_an_error_after_the_first_chunk_is_not_retried() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(delta_chunk({"content": "partial"}))
        raise httpx2.ReadError("connection reset")

    handler, calls = replies(lambda: httpx2.Response(200, content=body()))
    async with mock_model(handler, retry=FAST) as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelConnectionError)
    assert error.detail == "ReadError: connection reset"
    assert events == [ChatResponse("chatcmpl-test", [TextBlock("partial")])]
    assert len(calls) == 1


async def test_a_connection_failure_before_any_chunk_is_retried() -> None:
    attempts: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        if len(attempts) == 1:
            raise httpx2.ConnectError("refused", request=request)
        return httpx2.Response(200, content=OK_BODY)

    async with mock_model(handle, retry=FAST) as model:
        events, error = await run(model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert events[0].reason == "LLM_UNAVAILABLE"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("7", 7.0),
        ("0.5", 0.5),
        ("-3", 0.0),
        ("soon", None),
        ("nan", None),
    ],
)
async def test_retry_after_is_read_from_the_error(header: str, expected: float | None) -> None:
    handler, _ = replies(lambda: httpx2.Response(503, headers={"Retry-After": header}))
    async with mock_model(handler) as model:
        _, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert error.retry_after == expected


async def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    handler, _ = replies(lambda: httpx2.Response(429, headers={"Retry-After": when}))
    async with mock_model(handler) as model:
        _, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert error.retry_after is not None
    assert 25 < error.retry_after <= 30


async def test_no_base_url_means_not_configured_and_no_request() -> None:
    handler, calls = replies(lambda: httpx2.Response(200, content=OK_BODY))
    async with mock_model(handler, base_url="") as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelNotConfigured)
    assert events == []
    assert calls == []


async def test_the_key_never_appears_in_an_error() -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}
    handler, _ = replies(lambda: httpx2.Response(401, json=echo))
    async with mock_model(handler, api_key=KEY, retry=FAST) as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert error.code == "LLM_AUTH_FAILED"
    assert events == []
    for text in (str(error), repr(error), error.detail, *map(str, error.args)):
        assert KEY not in text
    assert error.detail == "HTTP 401: Incorrect API key provided: [redacted]."


async def test_a_long_error_body_gives_a_short_detail() -> None:
    handler, _ = replies(lambda: httpx2.Response(502, text="<html>" + "x" * 100_000))
    async with mock_model(handler) as model:
        _, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert error.detail.startswith("HTTP 502: <html>xxx")
    assert len(error.detail) < 400
