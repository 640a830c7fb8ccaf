"""A query-string model read in one validation, and documented as FastAPI documents one.

FastAPI reads `Annotated[Model, Query()]` field by field on every request,
working out each field's aliases and whether its type is a sequence anew: for
the stream's thirteen fields about 135 µs a request, where validating the
query string as one mapping takes 2 µs. That was more than the rest of a
turn's start in-process (bench/README.md, "The first burst"), so the stream
routes take their query through `QueryModel`, which validates the mapping at
once and reports errors with the same `("query", field)` locations.

A dependency that takes the `Request` adds nothing to the OpenAPI document,
so `document_query_models` puts back the parameters FastAPI itself writes for
the model, built the first time the document is asked for (never at start-up).
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError

from app.api.openapi_errors import amend_openapi

Model = TypeVar("Model", bound=BaseModel)


class QueryModel(Generic[Model]):
    """`Depends(QueryModel(M))`: an `M` from the query string (the last value of a repeated key)."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model

    async def __call__(self, request: Request) -> Model:
        """`async` though it never awaits: FastAPI runs a plain `def` in a worker thread."""
        try:
            return self.model.model_validate(dict(request.query_params))
        except ValidationError as exc:
            raise RequestValidationError(
                [
                    {**error, "loc": ("query", *error["loc"])}
                    for error in exc.errors(include_url=False)
                ]
            ) from None


def document_query_models(app: FastAPI) -> None:
    """Make `app.openapi()` list each `QueryModel`'s fields as its routes' query parameters."""
    amend_openapi(app, lambda document: _with_query_models(app, document))


def _with_query_models(app: FastAPI, document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for route in app.routes:
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        for dependency in route.dependant.dependencies:
            if not isinstance(dependency.call, QueryModel):
                continue
            parameters, components = _as_fastapi_documents(dependency.call.model)
            for name, schema in components.items():
                schemas.setdefault(name, schema)
            for method in route.methods or ():
                operation = document["paths"][route.path_format][method.lower()]
                operation["parameters"] = parameters + operation.get("parameters", [])
    return document


def _as_fastapi_documents(model: type[BaseModel]) -> tuple[list[Any], dict[str, Any]]:
    """The query parameters, and the schemas they refer to, FastAPI writes for `model`."""
    probe = FastAPI()

    async def endpoint(params: BaseModel) -> None:
        """Never called: only documented."""

    # The module's annotations are strings, and `model` is not a name FastAPI could look up.
    endpoint.__annotations__ = {"params": Annotated[model, Query()], "return": None}
    probe.add_api_route("/", endpoint, methods=["GET"])
    document = probe.openapi()
    parameters: list[Any] = document["paths"]["/"]["get"]["parameters"]
    components: dict[str, Any] = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return parameters, components
