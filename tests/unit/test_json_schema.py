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
