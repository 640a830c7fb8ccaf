"""The shipped templates: complete, described truthfully by their specs, and drawn into decks
that reopen (python-pptx) and convert (LibreOffice) with every named shape filled."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pypdfium2
import pytest
from pptx import Presentation
from pypdf import PdfReader

from app.agents.pptx.render import read_deck, render_deck
from app.agents.pptx.schema import DeckSchema, Outline, check_deck
from app.agents.pptx.templates import PAGE_TYPES, TemplateLibrary
from tests.conftest import require_binary
from tests.support.decks import deck, outline

LIBRARY = TemplateLibrary()


def libreoffice_pdf(data: bytes, folder: Path) -> Path:
    """The PDF LibreOffice draws of the deck `data`, with a profile of its own in `folder`."""
    require_binary("soffice", "LibreOffice (Debian's libreoffice-impress)")
    (folder / "deck.pptx").write_bytes(data)
    subprocess.run(
        ["soffice", f"-env:UserInstallation=file://{folder}/profile", "--headless",
         "--convert-to", "pdf", "--outdir", str(folder), str(folder / "deck.pptx")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return folder / "deck.pdf"


TITLES = [f"Slide number {n}" for n in range(1, 11)]


def test_at_least_three_templates_each_with_every_page_type() -> None:
    assert len(LIBRARY.templates) >= 3
    for spec in LIBRARY.templates.values():
        assert [p.page_type for p in spec.pages] == list(PAGE_TYPES)
    palettes = {tuple(spec.palette) for spec in LIBRARY.templates.values()}
    fonts = {tuple(spec.fonts) for spec in LIBRARY.templates.values()}
    assert len(palettes) == len(fonts) == len(LIBRARY.templates)


@pytest.mark.parametrize("code", sorted(LIBRARY.templates))
def test_every_field_of_the_spec_is_a_named_shape_of_its_template_slide(code: str) -> None:
    spec = LIBRARY.templates[code]
    slides = list(Presentation(str(LIBRARY.path(code))).slides)
    text_versions = [p.text_index for p in spec.pages if p.text_index is not None]
    assert len(slides) == len(spec.pages) + len(text_versions)
    for page in spec.pages:
        for index in (page.index, page.text_index):
            if index is None:
                continue
            names = {shape.name for shape in slides[index].shapes}
            assert {f.name for f in page.fields} <= names
            assert all(n.startswith("deco-") for n in names - {f.name for f in page.fields})


@pytest.mark.parametrize("code", sorted(LIBRARY.templates))
def test_a_deck_reopens_with_its_slides_titles_and_every_field_filled(code: str) -> None:
    spec = LIBRARY.templates[code]
    schema = DeckSchema.model_validate(deck(TITLES))
    assert check_deck(schema, Outline.model_validate(outline(TITLES)), spec) == []

    data = render_deck(LIBRARY.path(code), spec, schema, lambda: False)
    slides = read_deck(data)
    samples = {
        line
        for slide in read_deck(LIBRARY.path(code).read_bytes())
        for text in slide.fields.values()
        for line in text.split("\n")
    }

    assert [s.title for s in slides] == TITLES
    for schema_slide, slide in zip(schema.slides, slides, strict=True):
        page = spec.page(schema_slide.page_type)
        assert page is not None
        # Only the page's named shapes, each filled within its budget, no template text left.
        assert set(slide.fields) == {f.name for f in page.fields}
        for field in page.fields:
            text = slide.fields[field.name]
            assert text.strip()
            assert all(len(line) <= field.budget for line in text.split("\n"))
            assert not set(text.split("\n")) & samples


def test_two_templates_differ_in_structure_not_only_colour() -> None:
    """Ocean titles its content slides across the top, Ember in a column down the left."""

    def title_box(code: str) -> tuple[int, int, int, int]:
        spec = LIBRARY.templates[code]
        page = spec.page("bullets")
        assert page is not None
        slide = Presentation(str(LIBRARY.path(code))).slides[page.index]
        [title] = [s for s in slide.shapes if s.name == "title"]
        return title.left, title.top, title.width, title.height

    width = int(Presentation(str(LIBRARY.path("ocean"))).slide_width or 0)
    ocean, ember = title_box("ocean"), title_box("ember")
    # A wide band on top, and a tall column at the side.
    assert ocean[2] > width * 0.7
    assert ocean[3] < ocean[2] / 5
    assert ember[2] < width * 0.35
    assert ember[3] > ember[2]


@pytest.mark.parametrize("code", sorted(LIBRARY.templates))
def test_slides_fill_the_page_and_a_picture_slide_without_a_picture_has_no_empty_frame(
    code: str,
) -> None:
    spec = LIBRARY.templates[code]
    titles = TITLES[:9]
    data = render_deck(
        LIBRARY.path(code), spec, DeckSchema.model_validate(deck(titles)), lambda: False
    )
    prs = Presentation(io.BytesIO(data))
    height = int(prs.slide_height or 0)
    by_kind = dict(zip([s["pageType"] for s in deck(titles)["slides"]], prs.slides, strict=True))
    [table] = [s for s in by_kind["table"].shapes if s.has_table]
    assert table.top + table.height > height * 0.85  # two rows still fill the page
    [chart] = [s for s in by_kind["chart"].shapes if s.has_chart]
    assert chart.top + chart.height > height * 0.85
    panels = [s for s in by_kind["comparison"].shapes if s.name.endswith("-panel")]
    assert all(p.top + p.height > height * 0.85 for p in panels)
    names = {s.name for s in by_kind["image_text"].shapes}
    assert "deco-visual-inset" not in names  # no frame waiting for a picture
    assert {"title", "caption", "body"} <= names


@pytest.mark.parametrize("code", sorted(LIBRARY.templates))
def test_a_deck_converts_to_pdf_with_libreoffice_page_for_page(code: str, tmp_path: Path) -> None:
    data = render_deck(
        LIBRARY.path(code),
        LIBRARY.templates[code],
        DeckSchema.model_validate(deck(TITLES)),
        lambda: False,
    )
    assert len(PdfReader(libreoffice_pdf(data, tmp_path)).pages) == len(TITLES)


@pytest.mark.parametrize("code", sorted(LIBRARY.templates))
def test_three_short_points_are_set_larger_and_spread_down_the_body(
    code: str, tmp_path: Path
) -> None:
    """Measured on the PDF LibreOffice draws: the points take most of the body's height,
    not its top quarter, in a larger size than the template's."""
    points = ["Silicon cells turn light into current", "Inverters make AC", "Batteries store"]
    spec = LIBRARY.templates[code]
    schema = DeckSchema.model_validate(
        {"slides": [{"pageType": "bullets", "fields": {"title": "Panels", "bullets": points}}]}
    )
    data = render_deck(LIBRARY.path(code), spec, schema, lambda: False)
    [box] = [s for s in Presentation(io.BytesIO(data)).slides[0].shapes if s.name == "bullets"]

    page = pypdfium2.PdfDocument(libreoffice_pdf(data, tmp_path))[0]
    text = page.get_textpage()
    height = page.get_height()

    def span(words: str) -> tuple[float, float]:
        """The top and bottom of `words` on the page, in points from the page's top."""
        search = text.search(words)
        found = search.get_next()
        assert found is not None, words
        start, count = found
        boxes = [text.get_charbox(i) for i in range(start, start + count)]
        return height - max(b[3] for b in boxes), height - min(b[1] for b in boxes)

    top, bottom = span(points[0])[0], span(points[-1])[1]
    body = box.height / 12700
    assert bottom - top > 0.55 * body
    # Not crowded at the top: about as much room above the points as below them.
    above, below = top - box.top / 12700, (box.top + box.height) / 12700 - bottom
    assert abs(above - below) < 0.25 * body
    assert bottom < (box.top + box.height) / 12700  # nothing past the box
    page_spec = spec.page("bullets")
    assert page_spec is not None
    template = Presentation(str(LIBRARY.path(code))).slides[page_spec.index]
    [original] = [s for s in template.shapes if s.name == "bullets"]
    size = original.text_frame.paragraphs[0].runs[0].font.size
    assert box.text_frame.paragraphs[0].runs[0].font.size > size
