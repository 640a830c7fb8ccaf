"""The strict form of a pydantic schema for OpenAI's structured output, and when there is none."""

from __future__ import annotations

from pydantic import BaseModel

from app.agents.pptx.schema import DeckSchema
from app.llm.json_schema import strict_schema


class Note(BaseModel):
    default: str = ""
    """A field named like a keyword strict mode refuses: a name, kept."""
    tags: list[str] = []
    score: int | None = None


class Notes(BaseModel):
    notes: list[Note]


def test_every_object_is_closed_with_every_property_required() -> None:
    strict = strict_schema(Notes.model_json_schema())

    assert strict is not None
    note = strict["$defs"]["Note"]
    assert note["required"] == ["default", "tags", "score"]
    assert note["additionalProperties"] is False
    assert strict["additionalProperties"] is False
    # The defaults go (strict mode refuses them); the optional one may still be null.
    assert note["properties"]["default"] == {"title": "Default", "type": "string"}
    assert {"type": "null"} in note["properties"]["score"]["anyOf"]
    # What the model then writes in full still reads as the pydantic model.
    assert Notes.model_validate({"notes": [{"default": "", "tags": [], "score": None}]})


def test_a_schema_with_an_object_of_open_keys_has_no_strict_form() -> None:
    assert strict_schema(DeckSchema.model_json_schema(by_alias=True)) is None


def test_what_strict_mode_cannot_say_is_said_as_near_as_it_can() -> None:
    slide = {"type": "object", "properties": {"kind": {"type": "string", "enum": ["cover"]}}}
    closing = {"type": "object", "properties": {"kind": {"type": "string", "enum": ["closing"]}}}
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 60},
            "note": {"type": "string", "maxLength": 10},
            "slides": {
                "type": "array",
                "minItems": 3,
                "maxItems": 3,
                "prefixItems": [slide, closing, closing],
            },
        },
    }

    strict = strict_schema(schema)

    assert strict is not None
    properties = strict["properties"]
    # Non-empty stays said, as a pattern; the budget goes (the step cuts what is over).
    assert properties["title"] == {"type": "string", "pattern": r"\S"}
    assert properties["note"] == {"type": "string"}
    # The slides by place become slides of any of those kinds, each said once.
    slides = properties["slides"]
    assert "prefixItems" not in slides
    assert (slides["minItems"], slides["maxItems"]) == (3, 3)
    assert [option["properties"]["kind"]["enum"] for option in slides["items"]["anyOf"]] == [
        ["cover"],
        ["closing"],
    ]
    assert all(option["additionalProperties"] is False for option in slides["items"]["anyOf"])


def test_a_schema_whose_root_is_a_choice_has_no_strict_form() -> None:
    cover = {"type": "object", "properties": {"kind": {"type": "string", "enum": ["cover"]}}}
    closing = {"type": "object", "properties": {"kind": {"type": "string", "enum": ["closing"]}}}

    assert strict_schema({"anyOf": [cover, closing]}) is None
