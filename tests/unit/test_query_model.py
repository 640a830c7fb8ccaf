"""A `QueryModel` route reads and documents its query string as FastAPI's own `Query()` model does.

A client generated from `/openapi.json` must see the same parameters, and a
caller the same 422, whichever of the two a route uses.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import httpx
from fastapi import Depends, FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from app.api.query_model import QueryModel, document_query_models


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Params(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    query: str | None = Field(default=None, max_length=5, description="Up to five.")
    colour: Colour | None = Field(default=None, alias="paintColour")


def plain_app() -> FastAPI:
    app = FastAPI()

    @app.get("/x")
    async def read(params: Annotated[Params, Query()]) -> dict[str, Any]:
        return params.model_dump(by_alias=True)

    return app


def query_model_app() -> FastAPI:
    app = FastAPI()

    @app.get("/x")
    async def read(params: Annotated[Params, Depends(QueryModel(Params))]) -> dict[str, Any]:
        return params.model_dump(by_alias=True)

    @app.get("/hidden", include_in_schema=False)
    async def hidden(params: Annotated[Params, Depends(QueryModel(Params))]) -> None:
        """Left out of the document, and no reason for building it to fail."""

    document_query_models(app)
    return app


def test_the_document_lists_the_parameters_fastapi_would() -> None:
    plain, ours = plain_app().openapi(), query_model_app().openapi()

    assert ours["paths"]["/x"]["get"]["parameters"] == plain["paths"]["/x"]["get"]["parameters"]
    assert [p["name"] for p in ours["paths"]["/x"]["get"]["parameters"]] == ["query", "paintColour"]
    assert ours["components"]["schemas"]["Colour"] == plain["components"]["schemas"]["Colour"]
    assert "/hidden" not in ours["paths"]


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
            responses = [await client.get("/x", params=ask) for ask in asks]
        return [(r.status_code, r.json()) for r in responses]

    plain, ours = await answers(plain_app()), await answers(query_model_app())

    assert ours == plain
    assert [status for status, _ in ours] == [200, 200, 422, 422, 200]
