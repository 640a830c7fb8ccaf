"""The SCHEMA, MODIFY and SLIDE steps: the slides written, changed, or one changed; a slide
still wrong after mending is asked for again alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.agents.pptx import prompts
from app.agents.pptx.builds import outline_of, requirement_of, slide_edit_of
from app.agents.pptx.mending import CONTENT_PAGE, mend_slide, mend_slides
from app.agents.pptx.schema import DeckSchema, Outline, OutlineSlide, SlideSchema, check_slide
from app.agents.pptx.step_schemas import (
    any_slide_schema,
    deck_schema,
    free_deck_schema,
    slide_schema,
)
from app.agents.pptx.steps.base import DeckStepsBase, Events, repaired
from app.agents.turn import Turn, TurnState
from app.core.events import ThinkingEvent
from app.core.messages import Msg
from app.llm.structured import AGAIN
from app.store.deck_builds import DeckBuild


@dataclass(frozen=True, slots=True)
class SlideAsk:
    """One slide asked for again: where it is in the deck, and what was wrong with it."""

    number: int
    count: int
    titles: str
    """The deck's slide titles, one numbered line each."""
    slide: SlideSchema | None
    """The slide as the model wrote it, None when it wrote none."""
    plan: OutlineSlide | None
    """What the outline plans for it; None for a slide of a changed deck."""
    problems: list[str]


class SlideSteps(DeckStepsBase):
    """Writes the slides, or changes them."""

    async def write_slides(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Writing the slides…\n")
        requirement, template = requirement_of(build), self.template(build)
        outline = Outline.model_validate_json(build.outline or "{}")
        system = prompts.SCHEMA.format(
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            outline=build.outline,
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        planned = [s.page_type for s in outline.slides]
        deck, _ = await self._plan(
            turn, state, "SCHEMA", messages, DeckSchema, schema=deck_schema(template, planned)
        )
        slides, notes = mend_slides(deck.slides, outline.slides, template)
        if notes:
            yield repaired(notes)
        async for event in self._slides_again(turn, state, build, slides, outline.slides):
            yield event
        written = DeckSchema(slides=[s for s in slides if s is not None])
        build.ppt_schema, build.status = written.model_dump_json(by_alias=True), "RENDER"

    async def modify(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Changing the slides…\n")
        requirement, template = requirement_of(build), self.template(build)
        system = prompts.MODIFY.format(
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            deck=build.ppt_schema,
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        schema = free_deck_schema(template, self.settings.max_slides)
        deck, _ = await self._plan(turn, state, "MODIFY", messages, DeckSchema, schema=schema)
        slides, notes = mend_slides(deck.slides, [None] * len(deck.slides), template)
        if notes:
            yield repaired(notes)
        async for event in self._slides_again(turn, state, build, slides, [None] * len(slides)):
            yield event
        edited = DeckSchema(slides=[s for s in slides if s is not None])
        title = Outline.model_validate_json(build.outline or "{}").title
        build.outline = outline_of(title, edited).model_dump_json(by_alias=True)
        build.ppt_schema, build.status = edited.model_dump_json(by_alias=True), "RENDER"

    async def edit_slide(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        """Ask the model for the one slide the message names; the others are kept as they are."""
        number = slide_edit_of(build.query) or 0
        yield ThinkingEvent(f"Changing slide {number}…\n")
        requirement, template = requirement_of(build), self.template(build)
        deck = DeckSchema.model_validate_json(build.ppt_schema or "{}")
        system = prompts.SLIDE.format(
            language=requirement.language or "the user's language",
            number=number,
            count=len(deck.slides),
            titles="\n".join(f"{n}. {s.title}" for n, s in enumerate(deck.slides, 1)),
            pages=prompts.describe_pages(template),
            slide=deck.slides[number - 1].model_dump_json(by_alias=True),
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        slide, notes = await self._plan(
            turn, state, "SLIDE", messages, SlideSchema, schema=any_slide_schema(template),
            mend=lambda found: mend_slide(found, template),
            check=lambda found: check_slide(number, found, template),
        )  # fmt: skip
        if notes:
            yield repaired([f"slide {number}: {note}" for note in notes])
        slides = [*deck.slides[: number - 1], slide, *deck.slides[number:]]
        title = Outline.model_validate_json(build.outline or "{}").title
        edited = DeckSchema(slides=slides)
        build.outline = outline_of(title, edited).model_dump_json(by_alias=True)
        build.ppt_schema, build.status = edited.model_dump_json(by_alias=True), "RENDER"

    async def _slides_again(
        self,
        turn: Turn,
        state: TurnState,
        build: DeckBuild,
        slides: list[SlideSchema | None],
        planned: Sequence[OutlineSlide | None],
    ) -> Events:
        """Ask again, each alone, for the slides still missing or wrong after mending (in
        place); the slides that are right are kept as they are."""
        template = self.template(build)
        titles = "\n".join(
            f"{n}. {p.title if p else s.title if s else ''}"
            for n, (s, p) in enumerate(zip(slides, planned, strict=True), 1)
        )
        for number, (slide, plan) in enumerate(zip(slides, planned, strict=True), 1):
            wanted = plan.page_type if plan else None
            problems = (
                [f"Slide {number} is missing."]
                if slide is None
                else check_slide(number, slide, template, wanted)
            )
            if not problems:
                continue
            yield ThinkingEvent(f"Slide {number} again: {problems[0]}\n")
            fixed, notes = await self._one_slide(
                turn, state, build, SlideAsk(number, len(slides), titles, slide, plan, problems)
            )
            if notes:
                yield repaired([f"slide {number}: {note}" for note in notes])
            slides[number - 1] = fixed

    async def _one_slide(
        self, turn: Turn, state: TurnState, build: DeckBuild, ask: SlideAsk
    ) -> tuple[SlideSchema, list[str]]:
        """One slide, asked alone with its own page's schema (any page, for a slide of a
        changed deck that has none), with what was wrong with the one it replaces."""
        requirement, template = requirement_of(build), self.template(build)
        plan, slide = ask.plan, ask.slide
        kind = plan.page_type if plan else slide.page_type if slide else CONTENT_PAGE
        points = "; ".join(plan.points) if plan else ""
        system = prompts.ONE_SLIDE.format(
            language=requirement.language or "the user's language",
            count=ask.count,
            titles=ask.titles,
            number=ask.number,
            title=plan.title if plan else slide.title if slide else "",
            page_type=kind,
            points=f", from the outline's points: {points}" if points else "",
            pages=prompts.describe_pages(template),
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        if slide is not None:
            messages += [
                Msg.text("assistant", slide.model_dump_json(by_alias=True)),
                Msg.text("user", AGAIN.format(problems=" ".join(ask.problems))),
            ]
        page, plan_type = template.page(kind), plan.page_type if plan else None
        return await self._plan(
            turn, state, build.status, messages, SlideSchema,
            schema=slide_schema(page) if page is not None else any_slide_schema(template),
            mend=lambda found: mend_slide(found, template, plan),
            check=lambda found: check_slide(ask.number, found, template, plan_type),
            name=f"Writing slide {ask.number}",
        )  # fmt: skip
