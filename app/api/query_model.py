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
the model, built the first time the document is asked for (never at start-up),
into each operation whose route passed `QueryModel.openapi_extra`: the
document, not FastAPI's routing (whose included routers are its own affair),
says which operations those are.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from app.api.openapi_errors import amend_openapi

Model = TypeVar("Model", bound=BaseModel)
_MARK = "x-dodo-query-model"
"""An operation's key naming its model (FastAPI serialises the document before it is amended),
taken out again once the model's parameters are written in."""
_MODELS: dict[str, type[BaseModel]] = {}
"""Each `QueryModel`'s model by the name its routes' operations carry."""


class QueryModel(Generic[Model]):
    """`Depends(QueryModel(M))`: an `M` from the query string (the last value of a repeated key)."""

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        name = f"{model.__module__}.{model.__qualname__}"
        _MODELS[name] = model
        self.openapi_extra: dict[str, Any] = {_MARK: name}
        """The route's `openapi_extra`: where `document_query_models` puts the parameters."""

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
    """Make `app.openapi()` list each marked operation's model fields as its query parameters."""
    amend_openapi(app, _with_query_models)


def _with_query_models(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    documented: dict[type[BaseModel], tuple[list[Any], dict[str, Any], dict[str, Any]]] = {}
    for path in document.get("paths", {}).values():
        for operation in path.values():
            name = operation.pop(_MARK, None)
            if name is None:
                continue
            model = _MODELS[name]
            if model not in documented:
                documented[model] = _as_fastapi_documents(model)
            parameters, refused, components = documented[model]
            for schema_name, schema in components.items():
                schemas.setdefault(schema_name, schema)
            operation["parameters"] = parameters + operation.get("parameters", [])
            operation.setdefault("responses", {}).setdefault("422", refused)
    return document


def _as_fastapi_documents(
    model: type[BaseModel],
) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """What FastAPI writes for a route taking `model` from the query string: its parameters,
    its 422 answer, and the schemas they refer to."""
    probe = FastAPI()

    async def endpoint(params: BaseModel) -> None:
        """Never called: only documented."""

    # The module's annotations are strings, and `model` is not a name FastAPI could look up.
    endpoint.__annotations__ = {"params": Annotated[model, Query()], "return": None}
    probe.add_api_route("/", endpoint, methods=["GET"])
    document = probe.openapi()
    operation = document["paths"]["/"]["get"]
    components: dict[str, Any] = document.get("components", {}).get("schemas", {})
    return operation["parameters"], operation["responses"]["422"], components
