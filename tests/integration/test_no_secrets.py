"""No secret ever leaves the process: not in a log line, an event, an error or `/ready`.

The service runs on PostgreSQL and Redis with known secret values (the
model key, the search key, the database password, the API keys), and is
driven through turns of each agent, failures included, where upstreams echo
the key they were sent, as real ones do. Every log record (at DEBUG) and
every byte sent to the client, headers included, is searched for them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import TEST_LLM_KEY, running_service, service_settings
from tests.support.documents import pdf_bytes

SEARCH_KEY = "tvly-secret-search-key-4242"
DB_PASSWORD = "pg-secret-password-4242"
USER_KEY = "user-secret-api-key-4242"
SECRETS = (TEST_LLM_KEY, SEARCH_KEY, DB_PASSWORD, USER_KEY)


def with_password(url: str) -> str:
    """The database URL with a password (trust authentication accepts and ignores it)."""
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user or 'postgres'}:{DB_PASSWORD}@{host}"))


def seen(response: httpx.Response) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.multi_items())
    return f"{response.status_code}\n{headers}\n{response.text}"


async def test_no_secret_in_logs_events_errors_or_readiness(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = service_settings(
        tmp_path,
        with_password(postgres_url),
        redis_url,
        redis_prefix=redis_prefix,
        llm_base_url=fake_llm.base_url,
        tavily_api_key=SEARCH_KEY,
        tavily_base_url=fake_search.base_url,
        api_keys=f"{USER_KEY}:alice",
        recommendations_enabled=True,
        log_level="DEBUG",
    )
    auth = {"Authorization": f"Bearer {USER_KEY}"}
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "tea"})]),
        Reply.text("Tea is a drink."),
        Reply.text('{"questions": ["More?", "Why?", "How?"]}'),
        Reply.error(401, message=f"Incorrect API key provided: {TEST_LLM_KEY}"),
    )
    sent: list[str] = []
    with caplog.at_level(logging.DEBUG):
        async with running_service(settings) as client:
            for url, params in [
                ("/agent/chat/stream", {"query": "Tea?", "conversationId": "c1"}),
                ("/agent/chat/stream", {"query": "Again", "conversationId": "c2"}),
                ("/session/c1", {}),
                ("/session/c2", {}),
                ("/session/list", {}),
                ("/ready", {}),
                ("/ready", {"deep": "1"}),
                ("/health", {}),
                ("/openapi.json", {}),
            ]:
                sent.append(seen(await client.get(url, params=params, headers=auth)))
            fake_search.fail_status = 401
            fake_llm.script(
                Reply.tool_calls([("web_search", {"query": "coffee"})]), Reply.text("No luck.")
            )
            params = {"query": "Coffee?", "conversationId": "c3"}
            sent.append(seen(await client.get("/agent/chat/stream", params=params, headers=auth)))
            upload = await client.post(
                "/file/upload", files={"file": ("m.pdf", pdf_bytes(["Warranty."]))}, headers=auth
            )
            sent.append(seen(upload))
            file_id = upload.json()["data"]["fileId"]
            fake_llm.script(
                Reply.tool_calls([("search_document", {"query": "warranty"})]),
                Reply.text("Seven years."),
            )
            params = {"query": "Warranty?", "conversationId": "c4", "fileId": file_id}
            sent.append(seen(await client.get("/agent/file/stream", params=params, headers=auth)))
            for token in ("wrong-key", USER_KEY[:-1]):
                response = await client.get("/session/list", params={"access_token": token})
                sent.append(seen(response))

    logged = "\n".join(
        f"{r.getMessage()}\n{r.exc_text or ''}\n{r.stack_info or ''}" for r in caplog.records
    )
    everything = "\n".join(sent)
    # The turns ran as meant: the search answered, then failed with the key echoed back.
    assert "Tea is a drink." in everything
    assert "LLM_AUTH_FAILED" in everything
    assert "Unauthorized: invalid API key" in logged
    for secret in SECRETS:
        assert secret not in everything, f"a secret was sent to the client: {secret[:6]}…"
        assert secret not in logged, f"a secret was logged: {secret[:6]}…"
