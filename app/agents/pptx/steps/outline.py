"""The OUTLINE step: the deck's slides planned, shown as the model writes them."""

from __future__ import annotations

import asyncio

from app.agents.pptx import prompts
from app.agents.pptx.answer import deck_event, partial_slides
from app.agents.pptx.builds import requirement_of, research_text
from app.agents.pptx.mending import mend_outline
from app.agents.pptx.schema import Outline, check_outline
from app.agents.pptx.step_schemas import outline_schema
from app.agents.pptx.steps.base import DeckStepsBase, Events, repaired
from app.agents.recall import context_prompt
from app.agents.turn import Turn, TurnState
from app.core.events import DeckEvent, ThinkingEvent
from app.core.messages import Msg
from app.store.deck_builds import DeckBuild


class OutlineStep(DeckStepsBase):
    """Plans the slides."""

    async def outline(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        requirement, template = requirement_of(build), self.template(build)
        count = requirement.slide_count or 0
        system = prompts.OUTLINE.format(
            slide_count=count,
            topic=requirement.topic,
            audience=requirement.audience,
            style=requirement.style,
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            research=research_text(build) or "(no research)",
        ) + context_prompt(turn, state, remembers=False)
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        written: asyncio.Queue[str | None] = asyncio.Queue()

        async def plan() -> tuple[Outline, list[str]]:
            try:
                return await self._plan(
                    turn, state, "OUTLINE", messages, Outline,
                    schema=outline_schema(template, count),
                    mend=lambda found: mend_outline(found, count, template),
                    check=lambda found: check_outline(found, count, template),
                    written=written.put_nowait,
                )  # fmt: skip
            finally:
                written.put_nowait(None)

        planning = asyncio.create_task(plan())
        try:
            # The slides so far, as the model writes them ("" starts an answer, a retry too).
            text, shown = "", 0
            while (piece := await written.get()) is not None:
                text = text + piece if piece else ""
                slides = partial_slides(text)
                if len(slides) != shown:
                    shown = len(slides)
                    yield DeckEvent("outline", build.version, "", template.name, slides)
            outline, notes = await planning
        finally:
            planning.cancel()
            await asyncio.gather(planning, return_exceptions=True)
        if notes:
            yield repaired(notes)
        build.outline, build.status = outline.model_dump_json(by_alias=True), "SCHEMA"
        yield deck_event("outline", build, template, [], self.layouts(build))
        yield ThinkingEvent(
            f"Outline: {len(outline.slides)} slides\n"
            + "".join(f"{n}. {s.title} ({s.page_type})\n" for n, s in enumerate(outline.slides, 1))
        )
