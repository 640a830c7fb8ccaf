"""Pictures on the image-with-text slides, from an OpenAI-compatible images API when one is set."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from PIL import Image
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.agents import pptx
from tests.integration.service import service_settings
from tests.support.agents import agent_core, run_turn
from tests.support.decks import DeckModel, deck_bytes
from tests.support.scripted_model import ScriptedModel
from tests.support.server import serve

TITLES = ["Solar", "Agenda", "Part one", "Points", "Versus", "On the roof", "Costs", "Thanks"]
PICTURE_SLIDE = 5
"""`image_text`, in the page order tests/support/decks.py gives eight slides."""


def png_bytes() -> bytes:
    png = io.BytesIO()
    Image.new("RGB", (64, 48), "orange").save(png, format="PNG")
    return png.getvalue()


@dataclass
class FakeImages:
    """An OpenAI-compatible `/images/generations`; `status` 200 answers a small PNG.

    With `picture_url` set it answers that URL instead of the bytes, as
    providers that ignore `response_format` do; it serves the picture at
    `/v1/files/picture.png` itself, counting the `downloads`.
    """

    status: int = 200
    picture_url: str = ""
    prompts: list[str] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    downloads: int = 0

    async def generate(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        self.prompts.append(body["prompt"])
        self.auth.append(request.headers.get("authorization", ""))
        if self.status != 200:
            return JSONResponse({"error": {"message": "down"}}, status_code=self.status)
        if self.picture_url:
            return JSONResponse({"data": [{"url": self.picture_url}]})
        return JSONResponse({"data": [{"b64_json": base64.b64encode(png_bytes()).decode()}]})

    async def picture(self, request: Request) -> Response:
        self.downloads += 1
        return Response(png_bytes(), media_type="image/png")


@pytest.fixture
async def images() -> AsyncIterator[tuple[FakeImages, str]]:
    fake = FakeImages()
    routes = [
        Route("/v1/images/generations", fake.generate, methods=["POST"]),
        Route("/v1/files/picture.png", fake.picture),
    ]
    async with serve(Starlette(routes=routes), lifespan="off") as url:
        yield fake, f"{url}/v1"


async def deck_slides(
    tmp_path: Path, sqlite_url: str, base_url: str, **overrides: Any
) -> list[Any]:
    """Build a deck with images configured; its slides as python-pptx reads them."""
    settings = service_settings(
        tmp_path,
        sqlite_url,
        pptx_previews=False,
        pptx_image_base_url=base_url,
        pptx_image_api_key="img-secret",
        **overrides,
    )
    model = DeckModel(TITLES)
    async with agent_core(settings, ScriptedModel(*[model.scripted] * 10)) as core:
        events = await run_turn(pptx.build(core, settings), "8 friendly slides on solar power")
        data = await deck_bytes(core, events)
    return list(Presentation(io.BytesIO(data)).slides)


def pictures_of(slides: list[Any]) -> list[list[str]]:
    """The names of each slide's pictures."""
    return [
        [s.name for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE] for slide in slides
    ]


async def test_an_image_slide_gets_a_picture_from_the_provider(
    tmp_path: Path, sqlite_url: str, images: tuple[FakeImages, str]
) -> None:
    fake, base_url = images
    slides = await deck_slides(tmp_path, sqlite_url, base_url)

    expected = [["picture"] if n == PICTURE_SLIDE else [] for n in range(len(TITLES))]
    assert pictures_of(slides) == expected
    [prompt] = fake.prompts
    assert "On the roof" in prompt
    assert fake.auth == ["Bearer img-secret"]


async def test_without_a_picture_the_slide_is_a_text_statement_never_an_empty_frame(
    tmp_path: Path, sqlite_url: str, images: tuple[FakeImages, str]
) -> None:
    fake, base_url = images
    fake.status = 500
    slides = await deck_slides(tmp_path, sqlite_url, base_url)

    assert len(fake.prompts) == 1
    assert not [
        s for slide in slides for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE
    ]
    names = {s.name for s in slides[PICTURE_SLIDE].shapes}
    assert "deco-visual-inset" not in names
    assert {"deco-statement", "caption", "body"} <= names


async def test_a_picture_named_by_a_local_url_is_not_fetched(
    tmp_path: Path, sqlite_url: str, images: tuple[FakeImages, str]
) -> None:
    fake, base_url = images
    fake.picture_url = f"{base_url}/files/picture.png"
    slides = await deck_slides(tmp_path, sqlite_url, base_url)

    assert len(fake.prompts) == 1
    assert fake.downloads == 0
    assert pictures_of(slides) == [[] for _ in TITLES]


async def test_a_picture_named_by_a_url_the_allowlist_names_is_fetched(
    tmp_path: Path, sqlite_url: str, images: tuple[FakeImages, str]
) -> None:
    fake, base_url = images
    fake.picture_url = f"{base_url}/files/picture.png"
    slides = await deck_slides(tmp_path, sqlite_url, base_url, outbound_allowlist="127.0.0.1")

    assert fake.downloads == 1
    expected = [["picture"] if n == PICTURE_SLIDE else [] for n in range(len(TITLES))]
    assert pictures_of(slides) == expected


async def test_changing_another_slide_keeps_the_picture_without_drawing_it_again(
    tmp_path: Path, sqlite_url: str, images: tuple[FakeImages, str]
) -> None:
    fake, base_url = images
    settings = service_settings(
        tmp_path,
        sqlite_url,
        pptx_previews=False,
        pptx_image_base_url=base_url,
        pptx_image_api_key="img-secret",
    )
    model = DeckModel(TITLES)
    changed = {"pageType": "bullets", "fields": {"title": "New points", "bullets": ["One", "Two"]}}
    model.answers["SLIDE"] = [orjson.dumps(changed).decode()]
    async with agent_core(settings, ScriptedModel(*[model.scripted] * 10)) as core:
        agent = pptx.build(core, settings)
        first = await deck_bytes(core, await run_turn(agent, "8 friendly slides on solar power"))
        edited = await run_turn(agent, "Change slide 4: other points")
        second = await deck_bytes(core, edited)

    assert len(fake.prompts) == 1  # drawn for the first version only
    old, new = (list(Presentation(io.BytesIO(d)).slides) for d in (first, second))
    assert pictures_of(new) == pictures_of(old)
    [old_picture] = [s for s in old[PICTURE_SLIDE].shapes if s.name == "picture"]
    [new_picture] = [s for s in new[PICTURE_SLIDE].shapes if s.name == "picture"]
    assert new_picture.image.blob == old_picture.image.blob
    assert [s.text_frame.text for s in new[3].shapes if s.name == "title"] == ["New points"]
