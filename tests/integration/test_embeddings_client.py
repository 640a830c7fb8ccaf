"""The OpenAI-compatible embeddings client against a local fake server over real HTTP."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import httpx2
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.llm.embeddings import EmbeddingError, OpenAIEmbeddings, build_embedder
from tests.fakes.embeddings_server import FakeEmbeddings, embed


@pytest.fixture
async def fake() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings().running() as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=10) as client:
        yield client


async def test_batches_come_back_in_input_order(
    fake: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    fake.reverse = True
    client = OpenAIEmbeddings(http, fake.base_url, SecretStr("sk-emb"), "m-1", batch_size=2)
    texts = ["one apple", "two pears", "three plums", "four figs", "five limes"]

    vectors = await client.embed(texts)

    assert vectors == [embed(t) for t in texts]
    assert fake.inputs == [texts[0:2], texts[2:4], texts[4:5]]
    assert fake.models == ["m-1"] * 3
    assert fake.auth_headers == ["Bearer sk-emb"] * 3


async def test_no_key_sends_no_authorization(
    fake: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    client = OpenAIEmbeddings(http, fake.base_url + "/", SecretStr(""), "m")

    await client.embed(["x"])

    assert fake.auth_headers == [""]


async def test_an_error_status_names_the_status_not_the_key(
    fake: FakeEmbeddings, http: httpx2.AsyncClient
) -> None:
    fake.fail_status = 401
    client = OpenAIEmbeddings(http, fake.base_url, SecretStr("sk-very-secret"), "m")

    with pytest.raises(EmbeddingError, match=r"HTTP 401") as caught:
        await client.embed(["x"])

    assert "sk-very-secret" not in str(caught.value)


async def test_an_unreachable_endpoint_is_an_embedding_error(http: httpx2.AsyncClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIEmbeddings(http, f"http://127.0.0.1:{port}/v1", SecretStr(""), "m")

    with pytest.raises(EmbeddingError, match="ConnectError"):
        await client.embed(["x"])


async def test_no_base_url_means_no_embedder(http: httpx2.AsyncClient) -> None:
    assert build_embedder(Settings(_env_file=None), http) is None
    configured = build_embedder(
        Settings(_env_file=None, embedding_base_url="http://e.test/v1", embedding_model="e5"), http
    )
    assert configured is not None
    assert configured.model == "e5"
