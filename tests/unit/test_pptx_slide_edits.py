"""Which messages change one slide of a finished deck: "change slide N: …" and its kin."""

from __future__ import annotations

import pytest

from app.agents.pptx.builds import slide_edit_of


@pytest.mark.parametrize(
    ("message", "number"),
    [
        ("Change slide 4: explain the cell, not the panel", 4),
        ("please EDIT SLIDE #2 so it is shorter", 2),
        ("rewrite slide no. 10 with a table", 10),
        ("修改第3页：换成图表", 3),
        ("把第 12 张改一下", None),
        ("change the slides to be shorter", None),
        ("make slide 3 bigger", None),
        ("change slide 0: nothing", None),
    ],
)
def test_a_slide_edit_names_its_slide(message: str, number: int | None) -> None:
    assert slide_edit_of(message) == number
