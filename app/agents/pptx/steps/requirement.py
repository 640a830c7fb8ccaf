"""The REQUIREMENT step: what the deck should be, or the question for what is missing."""

from __future__ import annotations

from pydantic import ConfigDict

from app.agents.pptx import prompts
from app.agents.pptx.builds import PAUSED, requirement_of, stated_slide_count
from app.agents.pptx.mending import mend_requirement
from app.agents.pptx.schema import Requirement
from app.agents.pptx.step_schemas import MIN_SLIDES, requirement_schema
from app.agents.pptx.steps.base import DeckStepsBase, Events, repaired
from app.agents.recall import context_prompt
from app.agents.turn import Turn, TurnState
from app.core.events import TextEvent, ThinkingEvent
from app.core.messages import Msg
from app.store.deck_builds import DeckBuild


class RequirementAnswer(Requirement):
    # Every field may be null, so an object of another shape would read as "nothing
    # said" and pause the build with questions: it is refused and asked again instead.
    model_config = ConfigDict(extra="forbid")

    ask: str | None = None
    """The question for the user when something is missing."""


class RequirementStep(DeckStepsBase):
    """Reads the request into the deck's requirement."""

    async def requirement(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Checking the request…\n")
        system = prompts.REQUIREMENT.format(max_slides=self.settings.max_slides)
        system += context_prompt(turn, state, remembers=False)
        stated = stated_slide_count(build.query)
        if stated is not None and not MIN_SLIDES <= stated <= self.settings.max_slides:
            stated = None
        answer, notes = await self._plan(
            turn, state, "REQUIREMENT", [Msg.text("system", system), Msg.text("user", build.query)],
            RequirementAnswer, schema=requirement_schema(stated),
            mend=lambda found: mend_requirement(found, stated),
        )  # fmt: skip
        if notes:
            yield repaired(notes)
        known = requirement_of(build)
        requirement = known.merged(Requirement.model_validate(answer.model_dump(exclude={"ask"})))
        too_many = (requirement.slide_count or 0) > self.settings.max_slides
        if too_many:
            requirement.slide_count = None
        build.requirement = requirement.model_dump_json(by_alias=True)
        missing = requirement.missing()
        if missing:
            build.status = PAUSED
            question = answer.ask or f"To build the deck I still need: {', '.join(missing)}."
            if too_many:
                question = f"A deck has at most {self.settings.max_slides} slides. {question}"
            yield TextEvent(question)
            return
        yield ThinkingEvent(
            f"Requirement: {requirement.topic}, {requirement.slide_count} slides,"
            f" for {requirement.audience}, {requirement.style}\n"
        )
        build.status = "SEARCH"
