"""A picture attached to a turn reaches a vision model as an image, in each provider's format.

The real service over HTTP; the models are the vendors' fakes, which record
each request. The catalog names one vision model per provider beside the
`LLM_*` model (`default`, no vision). The pictures are made here with Pillow:
a 4000x3000 one must arrive scaled to the provider's limit, decoded back from
the recorded request; a model without vision must be given the text OCR read
from the picture, and the user told so.
"""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from PIL import Image, ImageDraw

from app.agents.picture import NO_VISION
from tests.conftest import require_binary
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.dashscope_server import FakeDashScope
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply, ScriptedServer
from tests.integration.service import running_service, service_settings
from tests.support.documents import text_picture
from tests.support.sse import Event, collect, text_of

QUESTION = "What colour is the square in this picture?"


def photo(width: int = 4000, height: int = 3000) -> bytes:
    """A JPEG photo-sized picture with no text in it: a red square on blue."""
    image = Image.new("RGB", (width, height), "navy")
    ImageDraw.Draw(image).rectangle((width // 4, height // 4, width // 2, height // 2), "red")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return out.getvalue()


def openai_image(request: dict[str, Any]) -> tuple[str, bytes, list[dict[str, Any]]]:
    user = request["messages"][-1]
    image, text = user["content"]
    prefix, _, data = image["image_url"]["url"].partition(",")
    return prefix, base64.b64decode(data), [text]


def anthropic_image(request: dict[str, Any]) -> tuple[str, bytes, list[dict[str, Any]]]:
    image, *rest = request["messages"][-1]["content"]
    assert (image["type"], image["source"]["type"]) == ("image", "base64")
    return image["source"]["media_type"], base64.b64decode(image["source"]["data"]), rest


def gemini_image(request: dict[str, Any]) -> tuple[str, bytes, list[dict[str, Any]]]:
    image, *rest = request["contents"][-1]["parts"]
    inline = image["inlineData"]
    return inline["mimeType"], base64.b64decode(inline["data"]), rest


PROVIDERS: dict[str, tuple[type[ScriptedServer], int, Callable[..., Any]]] = {
    "openai": (FakeOpenAI, 2048, openai_image),
    "anthropic": (FakeAnthropic, 1568, anthropic_image),
    "gemini": (FakeGemini, 3072, gemini_image),
}


def catalog(provider: str, fake: ScriptedServer) -> str:
    entry = {
        "id": "eyes",
        "provider": provider,
        "baseUrl": fake.base_url,
        "apiKey": "sk-eyes",
        "model": "eyes-model",
        "vision": True,
    }
    return orjson.dumps([entry]).decode()


@pytest.fixture
async def default_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(lambda body: Reply.text("The text says so.")) as fake:
        yield fake


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> str:
    response = await client.post("/file/upload", files={"file": (name, data)})
    assert response.status_code == 200, response.text
    file_id: str = response.json()["data"]["fileId"]
    return file_id


async def turn(client: httpx.AsyncClient, kind: str, **params: str) -> list[Event]:
    async with client.stream("GET", f"/agent/{kind}/stream", params=params) as response:
        assert response.status_code == 200
        return await collect(response)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_a_picture_goes_to_a_vision_model_in_its_providers_format_scaled_to_its_limit(
    tmp_path: Path, sqlite_url: str, default_llm: FakeOpenAI, provider: str
) -> None:
    fake_class, limit, image_of = PROVIDERS[provider]
    async with fake_class(lambda body: Reply.text("A red square.")) as eyes:
        settings = service_settings(
            tmp_path,
            sqlite_url,
            llm_base_url=default_llm.base_url,
            models=catalog(provider, eyes),
        )
        async with running_service(settings) as client:
            file_id = await upload(client, "photo.jpg", photo())
            evts = await turn(
                client, "chat", query=QUESTION, conversationId="c-v", fileId=file_id, model="eyes"
            )
            later = await turn(
                client, "chat", query="And the background?", conversationId="c-v", model="eyes"
            )

    assert text_of(evts) == "A red square."
    assert "cannot see" not in text_of(evts, "thinking")
    media_type, data, rest = image_of(eyes.requests[0])
    assert media_type.removeprefix("data:").removesuffix(";base64") == "image/jpeg"
    with Image.open(io.BytesIO(data)) as sent:
        # 4000x3000 scaled to fit the provider's box, its proportions kept.
        assert sent.size == (limit, limit * 3 // 4)
        pixel = sent.getpixel((limit * 3 // 8, limit * 9 // 32))
        assert isinstance(pixel, tuple)
        red, _, blue = pixel
        assert red > 150 > blue  # the square's middle, red, where it was
    # The question follows the picture in the same message.
    assert QUESTION in orjson.dumps(rest).decode()
    # The next turn remembers the question and answer, not the picture's bytes.
    assert text_of(later) == "A red square."
    second = orjson.dumps(eyes.requests[1]).decode()
    assert QUESTION in second
    assert base64.b64encode(data[:300]).decode()[:200] not in second
    assert all(word not in second for word in ("image_url", "inlineData", '"image"'))


async def test_the_file_agent_shows_a_picture_without_text_to_a_vision_model(
    tmp_path: Path, sqlite_url: str, default_llm: FakeOpenAI
) -> None:
    async with FakeAnthropic(lambda body: Reply.text("A red square on blue.")) as eyes:
        settings = service_settings(
            tmp_path,
            sqlite_url,
            llm_base_url=default_llm.base_url,
            models=catalog("anthropic", eyes),
        )
        async with running_service(settings) as client:
            file_id = await upload(client, "photo.jpg", photo(1200, 900))
            evts = await turn(
                client, "file", query=QUESTION, conversationId="c-f", fileId=file_id, model="eyes"
            )

    # No text in the photo: OCR finds none, yet a vision model can answer from it.
    assert text_of(evts) == "A red square on blue."
    media_type, data, _ = anthropic_image(eyes.requests[0])
    with Image.open(io.BytesIO(data)) as sent:
        assert (media_type, sent.size) == ("image/jpeg", (1200, 900))


async def test_the_skills_agent_shows_the_picture_and_copies_it_into_the_workspace(
    tmp_path: Path, sqlite_url: str, default_llm: FakeOpenAI
) -> None:
    async with FakeGemini(lambda body: Reply.text("I see it.")) as eyes:
        settings = service_settings(
            tmp_path,
            sqlite_url,
            llm_base_url=default_llm.base_url,
            models=catalog("gemini", eyes),
        )
        async with running_service(settings) as client:
            file_id = await upload(client, "photo.jpg", photo(800, 600))
            evts = await turn(
                client,
                "skills",
                query=QUESTION,
                conversationId="c-s",
                fileId=file_id,
                model="eyes",
            )

    assert "Copied photo.jpg into the workspace" in text_of(evts, "thinking")
    media_type, data, rest = gemini_image(eyes.requests[0])
    with Image.open(io.BytesIO(data)) as sent:
        assert (media_type, sent.size) == ("image/jpeg", (800, 600))
    assert rest == [{"text": QUESTION}]


@pytest.mark.parametrize("kind", ["chat", "file"])
async def test_a_model_without_vision_is_given_the_pictures_text_and_the_user_is_told(
    tmp_path: Path, sqlite_url: str, kind: str
) -> None:
    require_binary("tesseract", "Tesseract (scripts/install-ocr)")
    async with FakeOpenAI(lambda body: Reply.text("The warranty lasts seven years.")) as plain:
        settings = service_settings(tmp_path, sqlite_url, llm_base_url=plain.base_url)
        async with running_service(settings) as client:
            picture = text_picture(["The warranty of the pump lasts seven years."])
            file_id = await upload(client, "page.png", picture)
            question = "How long is the warranty?"
            evts = await turn(client, kind, query=question, conversationId="c-n", fileId=file_id)

    assert text_of(evts) == "The warranty lasts seven years."
    assert NO_VISION in text_of(evts, "thinking")
    sent = orjson.dumps(plain.requests[0]).decode()
    assert "image_url" not in sent
    # The text read from the picture reached the model: in the question (chat), through
    # the search the file agent makes first (file).
    assert "warranty of the pump lasts seven years" in sent


async def test_a_document_attached_to_the_web_search_agent_is_not_read_and_the_user_is_told(
    tmp_path: Path, sqlite_url: str, default_llm: FakeOpenAI
) -> None:
    settings = service_settings(tmp_path, sqlite_url, llm_base_url=default_llm.base_url)
    async with running_service(settings) as client:
        file_id = await upload(client, "notes.txt", b"The launch code is 1234.")
        evts = await turn(
            client, "chat", query="What is in it?", conversationId="c-d", fileId=file_id
        )

    assert "reads attached pictures only: notes.txt was not read" in text_of(evts, "thinking")
    assert "1234" not in orjson.dumps(default_llm.requests).decode()


async def test_a_vision_model_on_dashscopes_native_api_is_given_the_text(
    tmp_path: Path, sqlite_url: str, default_llm: FakeOpenAI
) -> None:
    require_binary("tesseract", "Tesseract (scripts/install-ocr)")
    async with FakeDashScope(lambda body: Reply.text("Seven years.")) as qwen:
        settings = service_settings(
            tmp_path,
            sqlite_url,
            llm_base_url=default_llm.base_url,
            models=catalog("dashscope", qwen),
        )
        async with running_service(settings) as client:
            picture = text_picture(["The warranty of the pump lasts seven years."])
            file_id = await upload(client, "page.png", picture)
            evts = await turn(
                client, "chat", query="How long?", conversationId="q", fileId=file_id, model="eyes"
            )

    # Its endpoint takes no pictures (the fake, like it, refuses a content that is not text).
    assert text_of(evts) == "Seven years."
    assert NO_VISION in text_of(evts, "thinking")
    assert "warranty of the pump lasts seven years" in orjson.dumps(qwen.requests).decode()
