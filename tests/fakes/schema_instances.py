"""The least instance of a JSON Schema: what a model holding to the schema and nothing else writes.

A server that holds a model to a schema guarantees the schema, not the
prompt: the model may answer any instance of it. This writes one that
satisfies the schema and says nothing the schema does not ask for, so a
rule the step checks but its schema leaves out shows up as a failure:

- an object: its required properties only (a strict schema requires all);
- a string: the shortest the schema allows ("" unless `minLength` or a
  `pattern` asks for more: then "x"s), an `enum`'s value by turns;
- a number: its `minimum`, else 0; a boolean: false;
- an array: `minItems` items, each place's `prefixItems` schema first;
- `anyOf`: an option that is not null, by turns (null only when it is all).

"By turns": the n-th choice of an answer takes value `pick + n` (modulo the
number of values), so a deck's slides take different page types, and a
test can steer the first choice (a template code) with `pick`.
"""

from __future__ import annotations

import re
from typing import Any

Schema = dict[str, Any]
CANDIDATES = ("", "x", "a", "0", "x x")
"""Strings tried in turn against a `pattern`, after the shortest plain one."""


class SchemaInstance:
    def __init__(self, root: Schema, pick: int = 0) -> None:
        self.root = root
        self.pick = pick
        self.choices = 0

    def of(self, node: Schema) -> Any:
        if "$ref" in node:
            return self.of(self._resolve(node["$ref"]))
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return self._choose(node["enum"])
        options = node.get("anyOf") or node.get("oneOf")
        if options:
            real = [o for o in options if o.get("type") != "null"]
            return self.of(self._choose(real) if real else options[0])
        if "allOf" in node:
            merged: Schema = {}
            for part in node["allOf"]:
                merged |= part
            return self.of(merged)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in node:
            required = set(node.get("required", []))
            return {k: self.of(v) for k, v in node.get("properties", {}).items() if k in required}
        if kind == "array":
            return self._array(node)
        if kind == "string":
            return self._string(node)
        if kind in ("integer", "number"):
            low = node.get("minimum", node.get("exclusiveMinimum", -1) + 1)
            return max(low, 0) if "maximum" not in node else min(max(low, 0), node["maximum"])
        if kind == "boolean":
            return False
        return None

    def _choose(self, values: list[Any]) -> Any:
        chosen = values[(self.pick + self.choices) % len(values)]
        self.choices += 1
        return chosen

    def _resolve(self, ref: str) -> Schema:
        node: Any = self.root
        for part in ref.removeprefix("#").strip("/").split("/"):
            if part:
                node = node[part]
        return dict(node)

    def _array(self, node: Schema) -> list[Any]:
        prefix = node.get("prefixItems", [])
        rest = node.get("items")
        count = node.get("minItems", 0)
        return [
            self.of(prefix[n] if n < len(prefix) else rest if isinstance(rest, dict) else {})
            for n in range(count)
        ]

    def _string(self, node: Schema) -> str:
        least: int = node.get("minLength", 0)
        most: int | None = node.get("maxLength")
        pattern: str | None = node.get("pattern")
        tried = ["x" * least, *CANDIDATES]
        for text in tried:
            if len(text) < least or (most is not None and len(text) > most):
                continue
            if pattern is None or re.search(pattern, text):
                return text
        raise ValueError(f"no short string fits {node}")


def schema_instance(schema: Schema, pick: int = 0) -> Any:
    """The least instance of `schema`; see the module docstring."""
    return SchemaInstance(schema, pick).of(schema)
