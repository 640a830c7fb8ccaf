"""A user's template: which layout each slide kind takes, and what makes one unusable."""

from __future__ import annotations

import pytest

from app.agents.pptx.layouts import Layout, Placeholder, TemplateLayouts, UnusableTemplate, match

WIDTH, HEIGHT = 12_192_000, 6_858_000
TITLE = Placeholder(kind="title", idx=0, box=(600_000, 300_000, 11_000_000, 1_200_000))
BODY = Placeholder(kind="body", idx=1, box=(600_000, 1_700_000, 11_000_000, 4_500_000))
SMALL = Placeholder(kind="body", idx=1, box=(600_000, 4_600_000, 11_000_000, 1_000_000))


def layout(index: int, name: str, *placeholders: Placeholder) -> Layout:
    return Layout(master=0, index=index, name=name, placeholders=list(placeholders))


def template(*layouts: Layout) -> TemplateLayouts:
    return TemplateLayouts(width=WIDTH, height=HEIGHT, layouts=list(layouts))


def test_one_content_layout_takes_every_kind_but_the_comparison() -> None:
    spec, plan = match(template(layout(0, "Inhalt", TITLE, BODY)), "file:x", "Mine")

    assert {p.page_type for p in spec.pages} == {
        "cover", "agenda", "section", "bullets", "image_text", "table", "chart", "closing"
    }  # fmt: skip
    assert {page.name for page in plan.pages.values()} == {"Inhalt"}
    assert plan.text_fallback.name == "Inhalt"
    bullets = spec.page("bullets")
    assert bullets is not None
    assert [f.name for f in bullets.fields] == ["title", "bullets"]


def test_layouts_are_told_apart_by_placeholders_not_names() -> None:
    left = Placeholder(kind="body", idx=1, box=(600_000, 1_700_000, 5_300_000, 4_500_000))
    right = Placeholder(kind="body", idx=2, box=(6_300_000, 1_700_000, 5_300_000, 4_500_000))
    picture = Placeholder(kind="picture", idx=3, box=(600_000, 1_700_000, 5_300_000, 4_500_000))
    subtitle = Placeholder(kind="subtitle", idx=1, box=(600_000, 4_000_000, 11_000_000, 900_000))
    found = template(
        layout(0, "A", TITLE, subtitle),
        layout(1, "B", TITLE, BODY),
        layout(2, "C", TITLE, left, right),
        layout(3, "D", TITLE, picture, right),
        layout(4, "E", TITLE, SMALL),
    )
    _, plan = match(found, "file:x", "Mine")

    chosen = {kind: page.name for kind, page in plan.pages.items()}
    assert chosen == {
        "cover": "A", "closing": "A", "section": "E", "agenda": "B", "bullets": "B",
        "table": "B", "chart": "B", "comparison": "C", "image_text": "D",
    }  # fmt: skip
    assert plan.pages["comparison"].slots == {"title": 0, "left_points": 1, "right_points": 2}
    assert plan.pages["image_text"].slots["picture"] == 3


@pytest.mark.parametrize(
    ("layouts", "missing"),
    [
        ([layout(0, "Blank")], "title placeholder"),
        ([layout(0, "Title Only", TITLE), layout(1, "Section", TITLE, SMALL)], "Title and Content"),
    ],
)
def test_a_template_without_a_title_and_body_layout_says_what_it_lacks(
    layouts: list[Layout], missing: str
) -> None:
    with pytest.raises(UnusableTemplate, match=missing):
        match(template(*layouts), "file:x", "Mine")
