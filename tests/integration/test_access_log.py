"""What the access log keeps of a request: never the question a stream was asked."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for


async def test_the_access_log_never_shows_what_a_stream_was_asked(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    access_log: Callable[[], io.StringIO],
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."))
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        written = access_log()
        got = await client.get(
            "/agent/chat/stream", params={"query": "my secret GET question", "conversationId": "a"}
        )
        posted = await client.post(
            "/agent/chat/stream?conversationId=b", json={"query": "my secret POST question"}
        )
        searched = await client.get("/session/search", params={"q": "secret words"})
        listed = await client.get("/session/list", params={"pageNum": 1, "pageSize": 5})

    assert [r.status_code for r in (got, posted, searched, listed)] == [200, 200, 200, 200]
    lines = written.getvalue().splitlines()
    assert '"GET /agent/chat/stream HTTP/1.1" 200' in lines[0]
    assert '"POST /agent/chat/stream HTTP/1.1" 200' in lines[1]
    assert '"GET /session/search HTTP/1.1" 200' in lines[2]
    # Routes whose parameters are not a person's words keep them.
    assert '"GET /session/list?pageNum=1&pageSize=5 HTTP/1.1" 200' in lines[3]
    assert "secret" not in written.getvalue()
    assert "conversationId" not in written.getvalue()


async def test_limits_tell_a_client_how_long_a_question_may_be(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, query_max_chars=500)
    async with running_service(settings) as client:
        limits = (await client.get("/agent/limits")).json()["data"]

    assert limits == {"queryMaxChars": 500, "uploadMaxBytes": settings.upload_max_bytes}
