"""The page of model behaviours shows the table the conformance test holds the agents to."""

from __future__ import annotations

from tests.fakes.model_behaviours import BEHAVIOURS
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.support.behaviour_table import EXPECTED, KINDS, NOTES, PAGE, VENDORS, with_tables


def test_every_behaviour_has_its_row_and_its_note_and_every_vendor_its_schema_only_row() -> None:
    assert list(NOTES) == list(BEHAVIOURS)
    assert set(EXPECTED["openai"]) == set(BEHAVIOURS)
    assert set(VENDORS) == set(EXPECTED) == set(FAKE_PROVIDERS)
    assert all("schema-only" in rows for rows in EXPECTED.values())
    assert all(list(row) == list(KINDS) for rows in EXPECTED.values() for row in rows.values())


def test_the_page_shows_the_table_as_the_test_has_it() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page == with_tables(page), (
        f"{PAGE} differs from tests/support/behaviour_table.py: write it again with "
        "`.venv/bin/python -m tests.support.behaviour_table`"
    )
