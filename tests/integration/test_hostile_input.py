"""Requests of hostile shape or size: each answers a 4xx in the error envelope, never a 5xx.

Found by trying them: a 5,000-digit `Last-Event-ID` and a huge `pageNum`
answered 500, `/agent/stop` took any id, and nothing capped headers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.integration.service import running_service, service_settings

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
