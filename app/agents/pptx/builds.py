"""A deck build's record (`ai_ppt_inst`): its steps, its versions, and what its columns hold.

Every step's result and the next status are stored on the row before the
next step starts, so the row is the truth the user sees: a stopped or
failed build resumes at the step it had reached.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, TypeAdapter

from app.agents.pptx.schema import DeckSchema, Outline, OutlineSlide, Requirement
from app.agents.turn import Turn
from app.store.base import GoneTurn
from app.store.deck_builds import DeckBuild, TemplateRow
from app.store.models import StoredTurn

STEPS = ("REQUIREMENT", "SEARCH", "TEMPLATE", "OUTLINE", "SCHEMA", "MODIFY", "SLIDE", "RENDER")
PAUSED, SUCCESS, FAILED = "PAUSED", "SUCCESS", "FAILED"
_SLIDE_EDIT = re.compile(
    r"\b(?:change|edit|modify|update|rewrite|redo|fix|improve)\s+slide\s+(?:no\.?\s*|#)?(\d{1,2})\b"
    r"|(?:修改|更改|改|重写|调整)\s*第\s*(\d{1,2})\s*[页张]",
    re.IGNORECASE,
)
_STATED_SLIDES = re.compile(
    r"\b(\d{1,2})[\s-]*(?:slides?|pages?)\b|(?<![第\d])(\d{1,2})\s*(?:[页张]|个?幻灯片)",
    re.IGNORECASE,
)
CONTINUE_WORDS = ("继续", "重试", "再试", "resume", "retry", "continue", "go on", "try again")


class DeckBuilds(Protocol):
    """Where builds are kept (`SqlDeckBuildStore`)."""

    async def versions(self, user_id: str, conversation_id: str) -> list[DeckBuild]: ...

    async def add(self, build: DeckBuild) -> DeckBuild: ...

    async def save(self, build: DeckBuild) -> None: ...

    async def forget(self, user_id: str, conversation_id: str) -> None: ...

    async def drop(self, user_id: str, build_ids: Sequence[int]) -> None: ...

    async def replace_templates(self, templates: Sequence[TemplateRow]) -> None: ...


class Finding(BaseModel):
    """One web search of a build and what it found (empty when it failed)."""

    query: str
    result: str


Research = TypeAdapter(list[Finding])
"""`ai_ppt_inst.search_info`: the searches done so far, as JSON."""


def research_text(build: DeckBuild) -> str:
    return "\n\n".join(f.result for f in Research.validate_json(build.search_info or "[]"))


def requirement_of(build: DeckBuild) -> Requirement:
    return Requirement.model_validate_json(build.requirement or "{}")


def outline_of(title: str, deck: DeckSchema) -> Outline:
    """The outline an edited deck now has: its slides' titles and page types."""
    slides = [OutlineSlide(title=s.title or "-", page_type=s.page_type) for s in deck.slides]
    return Outline(title=title, slides=slides)


def begun_by(versions: list[DeckBuild], asked: Iterable[tuple[datetime, int]]) -> list[int | None]:
    """The turn that began each build, from when the turns were asked (`asked`: their times
    and ids); None for a build older than every turn given.

    A build is the turn's that was asked last before it began (a conversation
    runs one turn at a time), so no build column needs to name its turn.
    """
    ordered = sorted(asked)
    times = [time for time, _ in ordered]
    turns: list[int | None] = []
    for build in versions:
        index = bisect_right(times, build.create_time) - 1
        turns.append(ordered[index][1] if index >= 0 else None)
    return turns


def on_path(
    versions: list[DeckBuild], turns: Sequence[StoredTurn], path: Collection[int]
) -> list[DeckBuild]:
    """The builds begun by the turns of `path`: what a turn on that branch builds on."""
    asked = [(t.create_time, t.id) for t in turns if t.id is not None]
    return [b for b, turn in zip(versions, begun_by(versions, asked), strict=True) if turn in path]


def of_turns(
    versions: list[DeckBuild], turns: Sequence[StoredTurn], gone: Sequence[GoneTurn]
) -> list[DeckBuild]:
    """The builds begun by the deleted turns `gone`; `turns` are the turns that remain."""
    asked = [(t.create_time, t.id) for t in turns if t.id is not None]
    asked += [(t.asked, t.id) for t in gone]
    ids = {t.id for t in gone}
    return [b for b, turn in zip(versions, begun_by(versions, asked), strict=True) if turn in ids]


def slide_edit_of(message: str) -> int | None:
    """The slide number (from 1) a "change slide N: …" message asks to change, else None."""
    found = _SLIDE_EDIT.search(message)
    if found is None:
        return None
    return int(found.group(1) or found.group(2)) or None


def stated_slide_count(query: str) -> int | None:
    """The number of slides the user's messages ask for in so many words ("8 slides",
    "8页"), the latest when they changed it; None when they did not say."""
    found = list(_STATED_SLIDES.finditer(query))
    if not found:
        return None
    return int(found[-1].group(1) or found[-1].group(2))


def resume_step(build: DeckBuild) -> str:
    if build.status == PAUSED:
        return "REQUIREMENT"
    if build.status == FAILED:
        return build.failed_step or "REQUIREMENT"
    return build.status


def last_success(versions: list[DeckBuild]) -> DeckBuild | None:
    return next((v for v in reversed(versions) if v.status == SUCCESS), None)


def new_build(
    turn: Turn, versions: list[DeckBuild], base: DeckBuild | None, *, one_slide: bool = False
) -> DeckBuild:
    """A new version: from scratch, or (`base`) a change of a finished deck, of the slide
    the message names when `one_slide` (until rendered, `file_id` is then the base's deck,
    whose other slides' pictures it keeps)."""
    version = (versions[-1].version if versions else 0) + 1
    build = DeckBuild(
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        version=version,
        status="REQUIREMENT",
        query=turn.question,
    )
    if base is not None:
        build.status = "MODIFY"
        build.template_code, build.requirement = base.template_code, base.requirement
        build.search_info, build.outline = base.search_info, base.outline
        build.ppt_schema = base.ppt_schema
        if one_slide:
            build.status, build.file_id = "SLIDE", base.file_id
    return build


def file_name(build: DeckBuild) -> str:
    return f"{Outline.model_validate_json(build.outline or '{}').title} v{build.version}.pptx"
