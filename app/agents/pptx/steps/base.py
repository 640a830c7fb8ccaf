"""What the deck's steps share: the settings, the model asked for a step's answer, the
build's template and files, and how a step fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import PurePath
from typing import Any, TypeVar

from pydantic import BaseModel

from app.agents.pptx.builds import DeckBuilds
from app.agents.pptx.images import ImageMaker
from app.agents.pptx.layouts import LayoutPlan, TemplateLayouts, UnusableTemplate, match
from app.agents.pptx.templates import TemplateLibrary, TemplateSpec
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.config import SettingsPart
from app.core.events import Event, ThinkingEvent
from app.core.messages import Msg
from app.documents.extract import UnreadableFile
from app.llm.structured import Mend, StructuredOutputInvalid, structured
from app.store.deck_builds import DeckBuild
from app.tools.base import Tool

PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
PDF_MIME = "application/pdf"
UPLOADED = "file:"
"""A build's `template_code` for a user's template: this, then the file's id."""
UPLOADED_KEPT = 32
"""Users' templates kept matched in memory; one dropped is read again when next used."""

Answer = TypeVar("Answer", bound=BaseModel)
Events = AsyncIterator[Event]
STEP_NAMES = {
    "INTENT": "Reading what the message asks of the deck",
    "REQUIREMENT": "Reading what the deck should be",
    "TEMPLATE": "Choosing the deck's template",
    "OUTLINE": "Planning the deck's outline",
    "SCHEMA": "Writing the slides",
    "MODIFY": "Changing the deck",
    "SLIDE": "Changing the slide",
}
"""Each model step as the user reads it, in the sentence of its failure."""
RETRY_HINT = "Say “retry” to try it again."


class DeckSettings(SettingsPart, prefix="pptx_"):
    render_timeout_seconds: float
    max_slides: int
    search_queries: int
    previews: bool
    pdf: bool


class InvalidPlan(AgentFailure):
    """A step's answer was still invalid after it was asked again: the build fails at that
    step, with the sentence naming it (the one the turn's `error.message` says too)."""

    def __init__(self, step: str, failed: StructuredOutputInvalid) -> None:
        first = failed.problems[0] if failed.problems else ""
        super().__init__(
            "PPT_INVALID_PLAN", f"{step}: {first}"[:300], f"{failed.sentence} {RETRY_HINT}"
        )


def repaired(notes: list[str]) -> ThinkingEvent:
    """The repairs made to a step's answer without the model, as the turn's thinking says."""
    return ThinkingEvent("".join(f"Mended: {note}\n" for note in notes))


class DeckStepsBase:
    """What each step needs, held once, and what the steps share: asking the model for a
    step's answer, the build's template and its files."""

    def __init__(
        self,
        core: AgentCore,
        builds: DeckBuilds,
        templates: TemplateLibrary,
        search: Tool | None,
        settings: DeckSettings,
        images: ImageMaker | None = None,
    ) -> None:
        self.core = core
        self._builds = builds
        self.templates = templates
        self._search = search
        self._images = images
        self.settings = settings
        self._uploaded: dict[str, tuple[TemplateSpec, LayoutPlan]] = {}
        """Users' templates matched so far, by template code, the oldest dropped first."""

    async def load_template(self, build: DeckBuild) -> None:
        """Read a user's template's layouts (in the isolated reader) and match them to the
        slide kinds, once a process; raises `AgentFailure` naming what the template lacks."""
        code = build.template_code or ""
        if not code.startswith(UPLOADED) or code in self._uploaded:
            return
        documents = self.core.documents
        file = await documents.get(build.user_id, code.removeprefix(UPLOADED))
        if file is None:
            raise AgentFailure("PPT_TEMPLATE_UNUSABLE", "The template file is gone.")
        try:
            found = TemplateLayouts.model_validate(await documents.layouts(file))
            matched = match(found, code, PurePath(file.file_name).stem)
        except (UnreadableFile, UnusableTemplate) as exc:
            raise AgentFailure("PPT_TEMPLATE_UNUSABLE", str(exc)) from exc
        if len(self._uploaded) >= UPLOADED_KEPT:
            self._uploaded.pop(next(iter(self._uploaded)))
        self._uploaded[code] = matched

    def layouts(self, build: DeckBuild) -> LayoutPlan | None:
        """The layout plan of a build on a user's template (None on a shipped one)."""
        matched = self._uploaded.get(build.template_code or "")
        return matched[1] if matched else None

    async def _bytes(self, build: DeckBuild, file_id: str | None = None) -> bytes:
        """A file's bytes: the build's deck, or the file `file_id` of the build's user."""
        documents = self.core.documents
        wanted = file_id or build.file_id or ""
        stored = await documents.get(build.user_id, wanted)
        if stored is None:
            raise AgentFailure("PPT_RENDER_FAILED", "a file the deck needs is gone")
        return b"".join([chunk async for chunk in await documents.download(stored)])

    async def _plan(
        self,
        turn: Turn,
        state: TurnState,
        step: str,
        messages: list[Msg],
        kind: type[Answer],
        *,
        schema: dict[str, Any],
        mend: Mend[Answer] | None = None,
        check: Callable[[Answer], list[str]] | None = None,
        written: Callable[[str], None] | None = None,
        name: str | None = None,
    ) -> tuple[Answer, list[str]]:
        """The model's answer as `kind`, mended and passing `check`, asked once more if it
        does not; with the notes of its repairs. Fails the build at `step` (named `name` to
        the user; the step's own name by default).

        `written` is told each piece of text as it comes, and "" when an answer starts.
        """
        notes: list[str] = []
        try:
            answer = await self.ask(
                turn, state, messages, kind, step=name or STEP_NAMES[step], schema=schema,
                mend=mend, on_mended=notes.extend, check=check, written=written,
            )  # fmt: skip
        except StructuredOutputInvalid as exc:
            raise InvalidPlan(step, exc) from exc
        return answer, notes

    async def ask(
        self,
        turn: Turn,
        state: TurnState,
        messages: list[Msg],
        kind: type[Answer],
        *,
        step: str,
        schema: dict[str, Any] | None = None,
        mend: Mend[Answer] | None = None,
        on_mended: Callable[[list[str]], None] | None = None,
        check: Callable[[Answer], list[str]] | None = None,
        written: Callable[[str], None] | None = None,
        attempts: int = 2,
    ) -> Answer:
        """One structured step of the build, its usage added to the turn's."""
        return await structured(
            self.core.model_for(turn.model_id),
            messages,
            kind,
            step=step,
            schema=schema,
            options=turn.options,
            on_usage=state.add_usage,
            on_text=written,
            mend=mend,
            on_mended=on_mended,
            check=check,
            attempts=attempts,
        )

    def template(self, build: DeckBuild) -> TemplateSpec:
        uploaded = self._uploaded.get(build.template_code or "")
        if uploaded is not None:
            return uploaded[0]
        template = self.templates.get(build.template_code or "")
        if template is None:
            # Only a template removed from the package since the build began gets here.
            raise AgentFailure("PPT_RENDER_FAILED", f"template {build.template_code} is gone")
        return template
