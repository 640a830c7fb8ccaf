"""A JSON Schema as OpenAI's strict structured output takes it, where it can; and the two
shapes the steps build their own schemas from (a closed object, a non-empty text).

Strict mode (`response_format.json_schema.strict: true`) holds the answer to
the schema exactly, but takes only a subset: every object closed
(`additionalProperties: false`) with every property required, and no
`default`, `minLength`, `maxLength` or `prefixItems`. What the subset cannot
say is said as near as it can, and the step's own check holds the answer to
the rest (`app/llm/structured.py`):

- a non-empty string (`minLength` 1 or more) becomes `pattern: "\\S"`, which
  strict mode takes: some character that is not a space;
- a string's `maxLength` goes (the step shortens what is over);
- `prefixItems` (each item's own schema, by place: a deck's cover first and
  its closing slide last) becomes `items` taking any of them (the step puts
  them back in order).

Pydantic writes optional fields as not required, with a default; made
required here, the model writes the empty value itself, which the pydantic
model still reads. An object whose keys are open (a `dict[str, ...]` field)
cannot be closed, and the root must be an object (not a choice of several,
as a slide of any page is), so such a schema gets no strict form, and goes
with `strict: false` as a guide the server may or may not hold the answer
to; pydantic and the step's check hold the answer either way.
"""

from __future__ import annotations

from typing import Any

_DROPPED = frozenset({"default", "minLength", "maxLength", "prefixItems"})
_SCHEMA_MAPS = ("properties", "$defs")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
NOT_BLANK = r"\S"
"""The pattern of a string with some character that is not a space."""


class _OpenObject(Exception):
    """The schema has an object with open keys: it has no strict form."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict form of `schema`, or None when it has none."""
    if schema.get("type") != "object":
        return None
    try:
        return _strict(schema)
    except _OpenObject:
        return None


def _strict(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key in _SCHEMA_MAPS:
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_strict(sub) for sub in value]
        elif key == "items" and isinstance(value, dict):
            out[key] = _strict(value)
        elif key == "additionalProperties" and value is not False:
            raise _OpenObject
        else:
            out[key] = value
    if node.get("minLength", 0) > 0 and "pattern" not in node:
        out["pattern"] = NOT_BLANK
    if "prefixItems" in node:
        out["items"] = _any_of([_strict(sub) for sub in node["prefixItems"]])
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def _any_of(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema taking any of `schemas`, each said once."""
    distinct = [s for n, s in enumerate(schemas) if s not in schemas[:n]]
    return distinct[0] if len(distinct) == 1 else {"anyOf": distinct}


def closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, every one required: what strict mode takes."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def text(budget: int | None = None) -> dict[str, Any]:
    """A string with some character that is not a space, of at most `budget` characters."""
    schema: dict[str, Any] = {"type": "string", "minLength": 1}
    if budget is not None:
        schema["maxLength"] = budget
    return schema
