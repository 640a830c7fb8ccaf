"""The PowerPoint builder (`/agent/pptx/stream`): a deck built in steps the user can come back to.

    REQUIREMENT -> SEARCH -> TEMPLATE -> OUTLINE -> SCHEMA -> RENDER -> SUCCESS
         |                                       MODIFY ------^
         +-> PAUSED (asks what is missing; the next message fills it in)
    any step -> FAILED (with the step and why; "retry" starts there again)

Explicit transitions on a row of `ai_ppt_inst` per version: each step's
result and the next status are stored before the next step starts, so the
row is the truth the user sees, and a stopped or failed build resumes at
the step it had reached, without redoing the ones before. A stop leaves the
row at the step that was running. A change to a finished deck is a new row
(a new version), so every earlier version stays downloadable.

A turn carried on from another instance (its own died, or drained) goes on
with the build it began, at the step stored last: the steps before are not
run again.

Each message is routed by rules first (a paused build takes the answer; an
unfinished one plus a continue word resumes), then by the model's validated
answer, falling back to a new deck. It sees only the builds of its own branch
of the conversation (the turns above it), and a regeneration always makes a
new version beside the one it answers again. Every model answer is JSON checked by
pydantic and against the template; an invalid one is asked for once more
with what was wrong, then the build fails with a clear `error`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

from app.agents.base import BaseAgent
from app.agents.pptx import prompts
from app.agents.pptx.answer import answer_text, deck_event
from app.agents.pptx.builds import (
    CONTINUE_WORDS,
    FAILED,
    PAUSED,
    SUCCESS,
    DeckBuilds,
    last_success,
    new_build,
    of_turns,
    on_path,
    resume_step,
    slide_edit_of,
)
from app.agents.pptx.images import configured_images
from app.agents.pptx.preview import ConversionFailed
from app.agents.pptx.schema import Intent, Outline
from app.agents.pptx.steps import STEP_NAMES, UPLOADED, DeckSettings, DeckSteps
from app.agents.pptx.templates import TemplateLibrary
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.config import Settings
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg
from app.core.run import ConversationKey
from app.llm.errors import ModelError, ModelOutputInvalid, user_message
from app.store.base import GoneTurn, StoreError
from app.store.deck_builds import DeckBuild, SqlDeckBuildStore, TemplateRow

log = logging.getLogger(__name__)


class PptAgent(BaseAgent):
    agent_type = "pptx"
    carries_on = True

    def __init__(self, core: AgentCore, builds: DeckBuilds, steps: DeckSteps) -> None:
        super().__init__(core)
        self._builds = builds
        self._steps = steps
        self._templates_listed = False

    async def forget(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        await self._builds.forget(key.user_id, key.conversation_id)

    async def forget_turns(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        """A deleted branch takes the builds its turns began: no other branch builds on them."""
        versions = await self._builds.versions(key.user_id, key.conversation_id)
        if not versions or not gone:
            return
        remaining = await self.core.store.get_tree(key.user_id, key.conversation_id)
        dropped = of_turns(versions, remaining.turns, gone)
        await self._builds.drop(key.user_id, [b.id for b in dropped if b.id is not None])

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        await self._list_templates()
        versions = await self._builds.versions(turn.user_id, turn.conversation_id)
        own = await self._begun(turn, versions) if turn.carried is not None else None
        if own is not None:
            if own.status == SUCCESS and state.deck is not None and state.deck.stage == "ready":
                return  # the deck was handed over before the turn moved: nothing is left to do
            if own.status == FAILED:
                own.status = resume_step(own)
                own.failed_step = own.error_msg = None
            async for event in self._run(turn, state, own, versions):
                yield event
            return
        seen = await self._on_branch(turn, versions)
        latest = seen[-1] if seen else None
        intent = await self._intent(turn, state, latest)
        again = turn.regenerates is not None
        if intent == "resume" and latest is not None and not again:
            build = latest
            yield ThinkingEvent(f"Resuming the build at {resume_step(build)}\n")
            if build.status == PAUSED:
                build.query = f"{build.query}\n{turn.question}"
            build.status = resume_step(build)
            build.failed_step = build.error_msg = None
        else:
            base = last_success(seen) if intent == "modify" else None
            build = new_build(turn, versions, base, one_slide=_one_slide(turn.question, base))
            if turn.template_file_id:
                build.template_code = f"{UPLOADED}{turn.template_file_id}"
            if intent == "resume" and latest is not None:
                # A regenerated answer to a paused or failed build: its request, built anew.
                paused = latest.status == PAUSED
                build.query = f"{latest.query}\n{turn.question}" if paused else latest.query
            build = await self._builds.add(build)
            if base is not None:
                yield ThinkingEvent(f"Changing version {base.version} into {build.version}\n")
        async for event in self._run(turn, state, build, versions):
            yield event

    async def _on_branch(self, turn: Turn, versions: list[DeckBuild]) -> list[DeckBuild]:
        """The builds of the turns above this one: a paused build of another branch is not
        this message's to answer, nor a deck of another branch its to change. A regeneration
        sits beside the turn it answers again, so it makes a new version of its own."""
        if not versions:
            return []
        tree = await self.core.store.get_tree(turn.user_id, turn.conversation_id)
        above = {t.id for t in tree.path(turn.row_id) if t.id is not None and t.id != turn.row_id}
        return on_path(versions, tree.turns, above)

    async def _begun(self, turn: Turn, versions: list[DeckBuild]) -> DeckBuild | None:
        """The build this turn began, if it got that far (a turn carried on from another
        instance goes on with it)."""
        if not versions:
            return None
        tree = await self.core.store.get_tree(turn.user_id, turn.conversation_id)
        begun = on_path(versions, tree.turns, {turn.row_id})
        return begun[-1] if begun else None

    async def _intent(self, turn: Turn, state: TurnState, latest: DeckBuild | None) -> str:
        """`create`, `modify` or `resume`: rules first, then the model, then `create`."""
        if latest is None:
            return "create"
        if latest.status == PAUSED:
            return "resume"
        words = turn.question.casefold()
        unfinished = latest.status != SUCCESS
        if not unfinished and slide_edit_of(turn.question) is not None:
            return "modify"
        if unfinished and any(word in words for word in CONTINUE_WORDS):
            return "resume"
        messages = [
            Msg.text("system", prompts.INTENT.format(status=latest.status)),
            Msg.text("user", turn.question),
        ]
        try:
            step = STEP_NAMES["INTENT"]
            asked = await self._steps.ask(turn, state, messages, Intent, step=step, attempts=1)
            intent = asked.intent
        except ModelOutputInvalid:
            return "create"
        # Nothing is left to resume of a finished deck: the message changes it. A change
        # with no finished deck to change starts a new one (see `execute`).
        if intent == "resume" and not unfinished:
            return "modify"
        return intent

    async def _run(
        self, turn: Turn, state: TurnState, build: DeckBuild, versions: list[DeckBuild]
    ) -> AsyncIterator[Event]:
        """Run the steps from the build's status until it succeeds, pauses or fails."""
        steps = self._steps
        try:
            await steps.load_template(build)
        except AgentFailure as exc:
            await self._fail(build, build.status, exc)
            raise
        by_status = {
            "REQUIREMENT": steps.requirement,
            "SEARCH": steps.research,
            "TEMPLATE": steps.choose_template,
            "OUTLINE": steps.outline,
            "SCHEMA": steps.write_slides,
            "MODIFY": steps.modify,
            "SLIDE": steps.edit_slide,
            "RENDER": steps.render,
        }
        while build.status in by_status:
            step = build.status
            try:
                async for event in by_status[step](turn, state, build):
                    yield event
                await self._builds.save(build)
            except Exception as exc:
                # Whatever a cancelled call raises on its way out, a stop is not a failure:
                # the build stays at the step it reached.
                if not state.stop.stop_requested:
                    await self._fail(build, step, exc)
                raise
        if build.status == PAUSED:
            state.pause()
        elif build.status == SUCCESS:
            earlier = [v for v in versions if v.id != build.id and v.status == SUCCESS]
            template = steps.template(build)
            ready = deck_event("ready", build, template, [*earlier, build], steps.layouts(build))
            pdf_event, pdf = None, b""
            if steps.settings.pdf or steps.settings.previews:
                yield ThinkingEvent("Making the PDF…\n")
                try:
                    pdf_event, pdf = await steps.pdf(turn, build, store=steps.settings.pdf)
                except ConversionFailed as exc:
                    # The deck is stored and linked: without its PDF the turn still hands it over.
                    if steps.settings.pdf:
                        ready.pdf_error = f"No PDF of the deck: {exc}."
                        pdf_event = await steps.unmade_pdf(turn, build, ready.pdf_error)
            if pdf_event is not None:
                if pdf_event.status != "failed":
                    ready.pdf = pdf_event.url
                yield pdf_event
            if steps.settings.previews and pdf:
                yield ThinkingEvent("Drawing slide previews…\n")
                try:
                    ready.thumbnails = await steps.thumbnails(turn, build, pdf)
                except Exception:
                    # The deck is stored and linked: a preview that fails is only missing.
                    log.warning("no previews for deck build %s", build.id, exc_info=True)
            yield ready
            yield TextEvent(answer_text(build, template, earlier, ready))

    async def _fail(self, build: DeckBuild, step: str, exc: Exception) -> None:
        """Store the build FAILED at `step` with why, in words the user can read."""
        code = exc.code if isinstance(exc, AgentFailure | ModelError) else "INTERNAL_ERROR"
        detail = exc.detail if isinstance(exc, AgentFailure) else ""
        build.status, build.failed_step = FAILED, step
        told = exc.message if isinstance(exc, AgentFailure) else ""
        build.error_msg = told or f"{user_message(code)} {detail}".strip()
        try:
            await self._builds.save(build)
        except StoreError:
            log.warning("could not store the failure of deck build %s", build.id, exc_info=True)

    async def _list_templates(self) -> None:
        """Make `ai_ppt_template` list the templates this package ships, once per process."""
        if self._templates_listed:
            return
        rows = [
            TemplateRow(
                template_code=spec.code,
                template_name=spec.name,
                template_desc=spec.description,
                template_schema=spec.model_dump_json(),
                file_path=self._steps.templates.path(spec.code).name,
                style_tags=",".join(spec.style_tags),
                slide_count=len(spec.pages),
            )
            for spec in self._steps.templates.templates.values()
        ]
        try:
            await self._builds.replace_templates(rows)
        except StoreError:
            # Another instance listing them at the same moment, say: the table is for
            # people browsing the database, so a deck is not refused over it.
            log.warning("could not list the deck templates in ai_ppt_template", exc_info=True)
            return
        self._templates_listed = True


def _one_slide(message: str, base: DeckBuild | None) -> bool:
    """Whether the message changes one slide of `base`: "change slide N: …", N in the deck."""
    number = slide_edit_of(message)
    if base is None or number is None:
        return False
    return number <= len(Outline.model_validate_json(base.outline or "{}").slides)


def build(core: AgentCore, settings: Settings) -> PptAgent:
    """The deck builder; it searches the web when a Tavily key is set."""
    builds = SqlDeckBuildStore(core.database)
    steps = DeckSteps(
        core,
        builds,
        TemplateLibrary(),
        core.search,
        DeckSettings.from_settings(settings),
        configured_images(core.http, settings),
    )
    return PptAgent(core, builds, steps)
