"""The one way a record gets its wire names: snake_case in Python, camelCase by alias.

The contract's field names are camelCase (the original client reads them);
ours are snake_case everywhere else, the database included. A record that
travels (stored as JSON, answered by the API) derives from `WireModel`, so
its camelCase names exist in one place: the alias generator.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

WIRE_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)
"""The wire's naming, also for a public model derived from a table's family (store/models.py)."""


class WireModel(BaseModel):
    model_config = ConfigDict(**WIRE_CONFIG, frozen=True)

    def wire(self) -> dict[str, object]:
        return self.model_dump(by_alias=True)


def iso(moment: datetime) -> str:
    """UTC to the second, with `Z`: what the original service's clients parse."""
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


WireTime = Annotated[datetime, PlainSerializer(iso, return_type=str)]
"""A timestamp that goes on the wire as `iso()` text."""
