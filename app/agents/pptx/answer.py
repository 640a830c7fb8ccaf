"""What the user sees of a deck: its slide list as it is written and when ready, and the answer.

The answer text carries the download links, since the original client shows
only links written in the text; the `deck` event is for a page that previews it.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from app.agents.pptx.builds import file_name
from app.agents.pptx.layouts import LayoutPlan
from app.agents.pptx.schema import Outline
from app.agents.pptx.templates import TemplateSpec
from app.core.events import DeckEvent, DeckLayout, DeckSlide, DeckVersion
from app.store.deck_builds import DeckBuild

_SLIDE_SO_FAR = re.compile(r'\{\s*"title"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"pageType"\s*:\s*"(\w+)"')


def partial_slides(text: str) -> list[DeckSlide]:
    """The outline's slides already complete in a partly written answer (title, page type)."""
    start = text.find('"slides"')
    if start < 0:
        return []
    found = []
    for match in _SLIDE_SO_FAR.finditer(text, start):
        try:
            title = json.loads(f'"{match.group(1)}"', strict=False)
        except ValueError:
            continue
        found.append(DeckSlide(title, match.group(2)))
    return found


def deck_event(
    stage: Literal["outline", "ready"],
    build: DeckBuild,
    template: TemplateSpec,
    downloadable: list[DeckBuild],
    layouts: LayoutPlan | None = None,
) -> DeckEvent:
    outline = Outline.model_validate_json(build.outline or "{}")
    return DeckEvent(
        stage=stage,
        version=build.version,
        title=outline.title,
        template=template.name,
        slides=[DeckSlide(s.title, s.page_type) for s in outline.slides],
        versions=[DeckVersion(b.version, file_name(b), b.file_url or "") for b in downloadable],
        layouts=None if layouts is None else [
            DeckLayout(p.page_type, p.name, [f for f in p.slots if f != "picture"])
            for p in layouts.pages.values()
        ],
    )  # fmt: skip


def answer_text(
    build: DeckBuild, template: TemplateSpec, earlier: list[DeckBuild], ready: DeckEvent
) -> str:
    """The answer text: the download links (the original client shows only links in text)."""
    outline = Outline.model_validate_json(build.outline or "{}")
    links = f"[{file_name(build)}]({build.file_url})"
    if ready.pdf:
        links += f" · [{file_name(build).removesuffix('.pptx')}.pdf]({ready.pdf})"
    lines = [f"Your deck is ready: {links}", ""]
    if ready.pdf_error:
        lines += [ready.pdf_error, ""]
    lines += [
        f"Version {build.version}, template {template.name}, {len(outline.slides)} slides:",
        "",
        *(f"{n}. {s.title} ({s.page_type})" for n, s in enumerate(outline.slides, 1)),
    ]
    if earlier:
        lines += ["", "Earlier versions:"]
        lines += [f"- [version {v.version}]({v.file_url})" for v in earlier]
    return "\n".join(lines)
