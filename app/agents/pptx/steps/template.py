"""The TEMPLATE step: the model chooses one of the shipped templates (a user's is kept)."""

from __future__ import annotations

from app.agents.pptx import prompts
from app.agents.pptx.builds import requirement_of
from app.agents.pptx.mending import mend_template
from app.agents.pptx.schema import TemplateChoice
from app.agents.pptx.step_schemas import template_schema
from app.agents.pptx.steps.base import UPLOADED, DeckStepsBase, Events, repaired
from app.agents.turn import Turn, TurnState
from app.core.events import ThinkingEvent
from app.core.messages import Msg
from app.store.deck_builds import DeckBuild


class TemplateStep(DeckStepsBase):
    """Chooses the template the deck is drawn on."""

    async def choose_template(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        if build.template_code and build.template_code.startswith(UPLOADED):
            build.status = "OUTLINE"
            yield ThinkingEvent(f"Template: {self.template(build).name} (yours)\n")
            return
        library = self.templates.templates
        listing = "\n".join(spec.summary() for spec in library.values())
        requirement = requirement_of(build)
        request = (
            f"Topic: {requirement.topic}. Audience: {requirement.audience}."
            f" Style: {requirement.style}."
        )
        messages = [
            Msg.text("system", prompts.TEMPLATE.format(templates=listing)),
            Msg.text("user", request),
        ]

        def exists(choice: TemplateChoice) -> list[str]:
            if choice.template_code in library:
                return []
            return [f"there is no template {choice.template_code!r}; use one of {list(library)}."]

        choice, notes = await self._plan(
            turn, state, "TEMPLATE", messages, TemplateChoice,
            schema=template_schema(list(library)),
            mend=lambda found: mend_template(found, library), check=exists,
        )  # fmt: skip
        if notes:
            yield repaired(notes)
        build.template_code, build.status = choice.template_code, "OUTLINE"
        yield ThinkingEvent(f"Template: {library[choice.template_code].name}\n")
