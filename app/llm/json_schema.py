"""A pydantic JSON Schema as OpenAI's strict structured output takes it, where it can.

Strict mode (`response_format.json_schema.strict: true`) holds the answer to
the schema exactly, but takes only a subset: every object closed
(`additionalProperties: false`) with every property required, and no
`default`, `minLength` or `maxLength`. Pydantic writes optional fields as
not required, with a default; made required here, the model writes the
empty value itself, which the pydantic model still reads. An object whose
keys are open (a `dict[str, ...]` field) cannot be closed, so such a schema
gets no strict form, and goes with `strict: false` as a guide the server may
or may not hold the answer to; pydantic checks the answer either way.
"""

from __future__ import annotations

from typing import Any

_DROPPED = frozenset({"default", "minLength", "maxLength"})
_SCHEMA_MAPS = ("properties", "$defs")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


class _OpenObject(Exception):
    """The schema has an object with open keys: it has no strict form."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The strict form of `schema`, or None when it has none."""
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
    if out.get("type") == "object":
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out
