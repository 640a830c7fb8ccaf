"""Requests of hostile shape or size: each answers a 4xx in the error envelope, never a 5xx.

Found by trying them: a 5,000-digit `Last-Event-ID` and a huge `pageNum`
answered 500, `/agent/stop` took any id, and nothing capped headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend, running_service, service_settings, settings_for
from tests.support.logs import LogSignal, attached, server_errors
from tests.support.raw_http import connection, request_head, send_and_hang_up

LONG_ID = "a" * 10_000
CRLF_ID = "c1\r\nX-Injected: yes"


def case(method: str, url: str, status: int, **kwargs: Any) -> Any:
    return pytest.param(method, url, status, kwargs, id=f"{method} {url} {status}")


JSON = {"content-type": "application/json"}
C1 = {"conversationId": "c1"}


@pytest.mark.parametrize(
    ("method", "url", "status", "kwargs"),
    [
        case("GET", "/agent/chat/stream", 400, params={"query": "hi", "conversationId": CRLF_ID}),
        case("GET", "/agent/chat/stream", 400, params={"query": "hi", "conversationId": LONG_ID}),
        case("POST", "/agent/chat/stream", 400, json={"query": "hi", "conversationId": CRLF_ID}),
        case("GET", "/agent/stop", 400, params={"conversationId": CRLF_ID}),
        case("GET", "/agent/stop", 400, params={"conversationId": LONG_ID}),
        case("POST", "/agent/stop", 400, json={"conversationId": CRLF_ID}),
        case("GET", "/agent/resume", 400, params={"conversationId": CRLF_ID}),
        case("GET", "/agent/resume", 400, params={**C1, "lastEventId": "9" * 5000}),
        case("GET", "/agent/resume", 400, params={**C1, "lastEventId": "-1"}),
        case("GET", "/agent/resume", 400, params=C1, headers={"Last-Event-ID": "1e3"}),
        case("GET", "/agent/resume", 400, params=C1, headers={"Last-Event-ID": "²".encode()}),
        case("GET", "/session/list", 422, params={"pageNum": "abc"}),
        case("GET", "/session/list", 422, params={"pageNum": str(10**30)}),
        case("GET", "/session/list", 422, params={"pageNum": str(2**62)}),
        case("GET", "/session/list", 422, params={"pageNum": "9" * 5000}),
        case("GET", "/session/list", 422, params={"pageSize": "1000000000"}),
        case("GET", "/session/list", 422, params={"pageSize": "0"}),
        case("GET", f"/session/{LONG_ID}", 422),
        case("GET", f"/file/info/{LONG_ID}", 422),
        case("POST", "/agent/chat/stream", 413, content=b'"' + b"a" * (1 << 20), headers=JSON),
        case("POST", "/agent/chat/stream", 400, content=b"[" * 100_000, headers=JSON),
        case("POST", "/agent/stop", 400, content=b"\xff\xfe{", headers=JSON),
        case("GET", "/session/list", 431, headers={"X-Filler": "a" * 100_000}),
        case("GET", "/session/list", 431, headers={f"X-Filler-{i}": "a" for i in range(2000)}),
    ],
)
async def test_hostile_requests_answer_a_4xx_in_the_envelope(
    tmp_path: Path, sqlite_url: str, method: str, url: str, status: int, kwargs: dict[str, Any]
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        response = await client.request(method, url, **kwargs)
        health = await client.get("/health")

    assert response.status_code == status, response.text
    body = response.json()
    assert body == {"code": status, "message": body["message"], "data": None}
    assert "\n" not in body["message"]
    assert health.status_code == 200


async def test_a_stream_parameter_out_of_its_values_is_422_naming_it(
    tmp_path: Path, sqlite_url: str
) -> None:
    """GET or POST, the query string's fields are checked before anything is stored."""
    c1 = {"query": "hi", "conversationId": "c1"}
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        refused = [
            await client.get("/agent/chat/stream", params={**c1, "onDisconnect": "later"}),
            await client.post("/agent/chat/stream", params={"toolApproval": "maybe"}, json=c1),
            await client.get("/agent/chat/stream", params={**c1, "approval": "{not json"}),
        ]
        stored = await client.get("/session/c1")

    assert [r.status_code for r in refused] == [422, 422, 422]
    assert [r.json()["message"].split(":")[1].strip() for r in refused] == [
        "onDisconnect",
        "toolApproval",
        "approval",
    ]
    assert refused[0].json()["message"].endswith("Input should be 'continue' or 'cancel'")
    assert stored.status_code == 404


async def test_a_query_string_longer_than_any_query_is_414(tmp_path: Path, sqlite_url: str) -> None:
    settings = service_settings(tmp_path, sqlite_url, query_max_chars=100)
    async with running_service(settings) as client:
        refused = await client.get("/session/list", params={"pad": "a" * 30_000})
        longest_query = "\U0001f600" * 100
        allowed = await client.get(
            "/agent/stop", params={"conversationId": "c1", "q": longest_query}
        )

    assert refused.status_code == 414
    assert refused.json()["code"] == 414
    assert refused.json()["message"].startswith("The query string is longer than")
    assert allowed.status_code == 200


async def test_a_json_body_as_large_as_the_longest_query_is_read(
    tmp_path: Path, sqlite_url: str
) -> None:
    """The body cap leaves room for a query of QUERY_MAX_CHARS, even escaped to the maximum."""
    settings = service_settings(tmp_path, sqlite_url, query_max_chars=1000)
    body = orjson.dumps({"conversationId": "c1", "note": "\U0001f600" * 1000}).decode()
    escaped = body.encode("ascii", "backslashreplace").replace(b"\\U0001f600", b"\\ud83d\\ude00")
    async with running_service(settings) as client:
        response = await client.post(
            "/agent/stop", content=escaped, headers={"content-type": "application/json"}
        )

    assert response.status_code == 200
    assert response.json()["success"] is False


NUL_QUERY = {"query": "hi\x00there", "conversationId": "c1"}
SEND_MESSAGE = (
    b'{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":'
    b'{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"%s"}]}}}'
)


def multipart(file_name: bytes) -> tuple[bytes, dict[str, str]]:
    """An upload of a small text file named `file_name`, its bytes as given."""
    body = (
        b"--b0undary\r\n"
        b'Content-Disposition: form-data; name="file"; filename="' + file_name + b'"\r\n'
        b"Content-Type: text/plain\r\n\r\nhello\r\n--b0undary--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=b0undary"}


def unstorable(method: str, url: str, where: str, name: str, **kwargs: Any) -> Any:
    return pytest.param(method, url, where, kwargs, id=name)


@pytest.mark.parametrize(
    ("method", "url", "where", "kwargs"),
    [
        unstorable("GET", "/agent/chat/stream", "query string", "nul-in-query", params=NUL_QUERY),
        unstorable("POST", "/agent/chat/stream", "request body", "nul-in-json", json=NUL_QUERY),
        unstorable(
            "POST",
            "/agent/chat/stream",
            "request body",
            "escaped-lone-surrogate",
            content=b'{"query":"hi \\ud83d there","conversationId":"c1"}',
            headers=JSON,
        ),
        unstorable(
            "POST",
            "/agent/chat/stream",
            "request body",
            "cesu-8-surrogate-bytes",
            content=b'{"query":"hi \xed\xa0\xbd\xed\xb8\x80","conversationId":"c1"}',
            headers=JSON,
        ),
        unstorable(
            "POST",
            "/agent/chat/stream",
            "request body",
            "lone-surrogate-in-a-key",
            content=b'{"query":"hi","conversationId":"c1","\\udfff":1}',
            headers=JSON,
        ),
        unstorable(
            "POST",
            "/ai-sdk/chat",
            "request body",
            "ai-sdk-message",
            json={
                "id": "c1",
                "messages": [
                    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "\0"}]}
                ],
            },
        ),
        unstorable(
            "POST",
            "/ag-ui/chat",
            "request body",
            "ag-ui-message",
            json={
                "threadId": "c1",
                "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "a\0"}],
            },
        ),
        unstorable("GET", "/session/c1%00", "path", "nul-in-path"),
        unstorable("GET", "/ai-sdk/chat/c1%00/stream", "path", "nul-in-path-of-a-stream"),
        unstorable(
            "POST",
            "/a2a",
            "request body",
            "a2a-jsonrpc",
            content=SEND_MESSAGE % b"a\\u0000",
            headers=JSON,
        ),
        unstorable(
            "POST",
            "/a2a/rest/message:send",
            "request body",
            "a2a-rest",
            content=b'{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"\\ud800"}]}}',
            headers=JSON,
        ),
    ],
)
async def test_text_no_store_can_hold_is_a_400_and_nothing_is_stored(
    tmp_path: Path,
    database_url: str,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    method: str,
    url: str,
    where: str,
    kwargs: dict[str, Any],
) -> None:
    """PostgreSQL's text holds no NUL and no store a lone surrogate: these answered 503
    ("the database is unavailable", an outage to every monitor) after a failed statement."""
    settings = settings_for(Backend(database_url, "", ""), tmp_path, fake_llm)
    with server_errors(caplog) as errors:
        async with running_service(settings) as client:
            response = await client.request(method, url, **kwargs)
            sessions = await client.get("/session/list")

    assert response.status_code == 400, response.text
    body = response.json()
    assert body == {"code": 400, "message": body["message"], "data": None}
    assert body["message"].startswith(f"The {where} holds a ")
    assert body["message"].endswith(", which cannot be stored")
    assert sessions.json()["data"]["total"] == 0
    assert fake_llm.requests == []
    assert errors == []


async def test_an_escaped_surrogate_pair_and_an_escaped_backslash_are_fine(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Only text a store cannot hold is refused: an emoji as JSON escapes it as a pair,
    and `\\\\u0000` is a backslash and the letters `u0000`."""
    body = b'{"conversationId":"c1","note":"\\ud83d\\ude00 \\\\u0000 \\\\ud800"}'
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        response = await client.post("/agent/stop", content=body, headers=JSON)

    assert response.status_code == 200, response.text


async def test_an_upload_named_with_a_nul_is_a_400_and_not_stored(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    content, headers = multipart(b"notes\x00.txt")
    with server_errors(caplog) as errors:
        async with running_service(service_settings(tmp_path, database_url)) as client:
            response = await client.post("/file/upload", content=content, headers=headers)
            files = await client.get("/file/list")

    assert response.status_code == 400, response.text
    assert response.json() == {
        "code": 400,
        "message": "The file name holds a NUL character, which cannot be stored",
        "data": None,
    }
    assert files.json()["data"] == []
    assert errors == []


async def test_a_client_hanging_up_mid_upload_logs_no_error(
    tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    content, headers = multipart(b"notes.txt")
    settings = service_settings(tmp_path, sqlite_url, log_level="DEBUG")
    with server_errors(caplog) as errors:
        async with running_service(settings) as client:
            with attached("app.api.errors", LogSignal("hung up")) as hung_up:
                head = request_head("POST", "/file/upload", 100_000, headers["content-type"])
                await send_and_hang_up(str(client.base_url), head + content[:60])
                await hung_up.seen.wait()
            files = await client.get("/file/list")

    assert files.json()["data"] == []
    assert errors == []


EDGE_SECONDS = 0.5
"""The head and body bounds of the tests below: short, so a test takes about that long."""
KEEP_ALIVE_SECONDS = 5
"""uvicorn's own `timeout_keep_alive`, as `scripts/run` serves: it closes a connection
idle after an answer, so a cut sooner than this one is the head timeout's."""


async def closed_after(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, trickle: bytes
) -> tuple[bytes, float]:
    """Send `trickle` a byte at a time (one every tenth of a second) until the server
    closes the connection; what it answered, and how long it took."""
    started = time.monotonic()
    answer = bytearray()

    async def read_to_end() -> None:
        while chunk := await reader.read(65536):
            answer.extend(chunk)

    reading = asyncio.create_task(read_to_end())
    for byte in trickle:
        if reading.done():
            break
        with contextlib.suppress(ConnectionError):
            writer.write(bytes([byte]))
            await writer.drain()
        await asyncio.wait([reading], timeout=0.1)
    async with asyncio.timeout(10):
        await reading
    return bytes(answer), time.monotonic() - started


@pytest.mark.parametrize(
    ("sent", "trickle"),
    [
        pytest.param(b"", b"", id="nothing-sent"),
        pytest.param(b"GET /health HTTP/1.1\r\nHost: test\r\n", b"", id="head-cut-short"),
        pytest.param(
            b"",
            b"GET /health HTTP/1.1\r\nHost: test\r\nX-Filler: " + b"a" * 100,
            id="head-trickled",
        ),
        pytest.param(
            b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: test\r\nX-Filler: " + b"a" * 100,
            id="next-head-trickled",
        ),
    ],
)
async def test_a_request_head_that_does_not_arrive_in_time_closes_the_connection(
    tmp_path: Path, sqlite_url: str, sent: bytes, trickle: bytes
) -> None:
    """uvicorn held these for as long as the client liked: a socket and a buffer each."""
    settings = service_settings(tmp_path, sqlite_url, request_head_timeout_seconds=EDGE_SECONDS)
    async with (
        running_service(settings) as client,
        connection(str(client.base_url)) as (reader, writer),
    ):
        writer.write(sent)
        answer, seconds = await closed_after(reader, writer, trickle)

    # Not sooner than the bound, and before anything else would have cut it: a stalled
    # machine once took 4.2 s to close it (the bound was then 2 s above the timeout).
    assert EDGE_SECONDS * 0.9 < seconds < KEEP_ALIVE_SECONDS
    assert answer.count(b"HTTP/1.1 200 OK") == sent.count(b"\r\n\r\n")


async def test_a_client_still_trickling_its_next_head_when_cut_still_reads_its_answer(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Cut while bytes keep coming and before the client read the answer it had: a reset
    would lose that answer, so the server half-closes and drops what follows."""
    settings = service_settings(tmp_path, sqlite_url, request_head_timeout_seconds=EDGE_SECONDS)
    async with (
        running_service(settings) as client,
        connection(str(client.base_url)) as (reader, writer),
    ):
        writer.write(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\nGET /health HTTP/1.1\r\n")
        sending_until = time.monotonic() + EDGE_SECONDS + 0.5
        while time.monotonic() < sending_until:  # past the cut, not reading meanwhile
            # A reset connection refuses the write (ConnectionError, or asyncio's RuntimeError).
            with contextlib.suppress(ConnectionError, RuntimeError):
                writer.write(b"X-Filler: a\r\n")
                await writer.drain()
            await asyncio.sleep(0.01)
        answer = b"connection reset"
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(10):
                answer = await reader.read()

    assert answer.count(b"HTTP/1.1 200 OK") == 1, answer[:40]


async def test_a_request_body_that_does_not_arrive_in_time_is_a_408_and_closes_the_connection(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A body trickled a byte at a time, so never idle, is cut when its time is up."""
    settings = service_settings(tmp_path, sqlite_url, request_body_timeout_seconds=EDGE_SECONDS)
    body = b'{"conversationId": "c1", "pad": "' + b"a" * 100 + b'"}'
    async with (
        running_service(settings) as client,
        connection(str(client.base_url)) as (reader, writer),
    ):
        writer.write(request_head("POST", "/agent/stop", len(body), "application/json"))
        answer, seconds = await closed_after(reader, writer, body)

    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in head.lower()
    assert orjson.loads(payload) == {
        "code": 408,
        "message": f"The request body did not arrive within {EDGE_SECONDS:g} seconds",
        "data": None,
    }
    assert EDGE_SECONDS * 0.9 < seconds < EDGE_SECONDS + 2


async def test_a_client_still_sending_when_its_body_is_cut_still_reads_the_408(
    tmp_path: Path, sqlite_url: str
) -> None:
    """The server stops reading and answers while bytes keep coming: closing then would
    reset the connection and lose the answer, so it half-closes and drops what follows."""
    settings = service_settings(tmp_path, sqlite_url, request_body_timeout_seconds=EDGE_SECONDS)
    async with (
        running_service(settings) as client,
        connection(str(client.base_url)) as (reader, writer),
    ):
        writer.write(request_head("POST", "/agent/stop", 300_000, "application/json"))
        sending_until = time.monotonic() + EDGE_SECONDS + 0.5
        while time.monotonic() < sending_until:  # past the cut, not reading meanwhile
            # A reset connection refuses the write (ConnectionError, or asyncio's RuntimeError).
            with contextlib.suppress(ConnectionError, RuntimeError):
                writer.write(b"a" * 64)
                await writer.drain()
            await asyncio.sleep(0.01)
        answer = b"connection reset"
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(10):
                answer = await reader.read()

    assert answer.startswith(b"HTTP/1.1 408 "), answer[:40]


async def test_a_body_slower_than_the_head_bound_but_within_its_own_is_answered(
    tmp_path: Path, sqlite_url: str
) -> None:
    """The head's clock stops when the head is in: the request is the app's from then on."""
    settings = service_settings(
        tmp_path, sqlite_url, request_head_timeout_seconds=0.2, request_body_timeout_seconds=10
    )
    body = b'{"conversationId": "c1"}'
    async with (
        running_service(settings) as client,
        connection(str(client.base_url)) as (reader, writer),
    ):
        writer.write(request_head("POST", "/agent/stop", len(body), "application/json"))
        await writer.drain()
        await asyncio.sleep(0.5)  # the client is slow: that is the case under test
        writer.write(body)
        status_line = await reader.readline()

    assert status_line.startswith(b"HTTP/1.1 200 ")
