"""A `QueryModel` route reads and documents its query string as FastAPI's own `Query()` model does.

A client generated from `/openapi.json` must see the same parameters, and a
caller the same 422, whichever of the two a route uses.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from app.api.query_model import QueryModel, document_query_models


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Params(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    query: str | None = Field(default=None, max_length=5, description="Up to five.")
    colour: Colour | None = Field(default=None, alias="paintColour")


QUERY = QueryModel(Params)


def plain_app() -> FastAPI:
    routes = APIRouter(prefix="/a")

    @routes.get("/x")
    async def read(params: Annotated[Params, Query()]) -> dict[str, Any]:
        return params.model_dump(by_alias=True)

    app = FastAPI()
    app.include_router(routes)
    return app


def query_model_app() -> FastAPI:
    """As the service's routes are: on a router of their own, included in the app."""
    routes = APIRouter(prefix="/a")

    @routes.get("/x", openapi_extra=QUERY.openapi_extra)
    async def read(params: Annotated[Params, Depends(QUERY)]) -> dict[str, Any]:
        return params.model_dump(by_alias=True)

    @routes.get("/hidden", include_in_schema=False, openapi_extra=QUERY.openapi_extra)
    async def hidden(params: Annotated[Params, Depends(QUERY)]) -> None:
        """Left out of the document, and no reason for building it to fail."""

    app = FastAPI()
    app.include_router(routes)
    document_query_models(app)
    return app


def test_the_document_is_the_one_fastapi_writes() -> None:
    plain, ours = plain_app().openapi(), query_model_app().openapi()

    assert ours == plain
    parameters = ours["paths"]["/a/x"]["get"]["parameters"]
    assert [p["name"] for p in parameters] == ["query", "paintColour"]


async def test_values_and_refusals_read_the_same() -> None:
    asks = [
        {"query": "hi", "paintColour": "red"},
        {"query": "hi", "colour": "blue"},
        {"query": "too long"},
        {"paintColour": "green"},
        {},
    ]

    async def answers(app: FastAPI) -> list[tuple[int, Any]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            responses = [await client.get("/a/x", params=ask) for ask in asks]
        return [(r.status_code, r.json()) for r in responses]

    plain, ours = await answers(plain_app()), await answers(query_model_app())

    assert ours == plain
    assert [status for status, _ in ours] == [200, 200, 422, 422, 200]
