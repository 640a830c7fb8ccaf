"""The steps of a deck build, each reading the build's row and writing its result and next status.

The model's steps (requirement, template, outline, slides, change) ask for a
JSON answer held to the request's own schema (step_schemas.py), mend what
code can mend (mending.py), check it against the template, and send what is
still wrong back once, for the failing part alone (a slide, not the deck),
then fail with an `error` naming the step; the search step runs the agents'
one tool-call loop; the render step draws the deck with python-pptx and
stores it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import PurePath
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from app.agents.pptx import preview, prompts
from app.agents.pptx.answer import deck_event, partial_slides
from app.agents.pptx.builds import (
    PAUSED,
    SUCCESS,
    DeckBuilds,
    Finding,
    Research,
    file_name,
    outline_of,
    requirement_of,
    research_text,
    slide_edit_of,
    stated_slide_count,
)
from app.agents.pptx.images import ImageMaker
from app.agents.pptx.layouts import LayoutPlan, TemplateLayouts, UnusableTemplate, match
from app.agents.pptx.mending import (
    CONTENT_PAGE,
    mend_outline,
    mend_requirement,
    mend_slide,
    mend_slides,
    mend_template,
)
from app.agents.pptx.render import (
    RenderError,
    RenderTimeout,
    kept_pictures,
    read_deck,
    render_deck,
)
from app.agents.pptx.render_layouts import render_on_layouts
from app.agents.pptx.schema import (
    DeckSchema,
    Outline,
    OutlineSlide,
    Requirement,
    SlideSchema,
    TemplateChoice,
    check_outline,
    check_slide,
)
from app.agents.pptx.step_schemas import (
    MIN_SLIDES,
    any_slide_schema,
    deck_schema,
    free_deck_schema,
    outline_schema,
    requirement_schema,
    slide_schema,
    template_schema,
)
from app.agents.pptx.templates import TemplateLibrary, TemplateSpec
from app.agents.react import act
from app.agents.recall import context_prompt
from app.agents.turn import AgentCore, AgentFailure, Turn, TurnState
from app.config import SettingsPart
from app.core.events import DeckEvent, Event, FileEvent, TextEvent, ThinkingEvent
from app.core.messages import Msg, ToolResultBlock, ToolUseBlock
from app.documents.extract import UnreadableFile
from app.documents.library import generated_event
from app.llm.structured import AGAIN, Mend, StructuredOutputInvalid, structured
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


class RequirementAnswer(Requirement):
    # Every field may be null, so an object of another shape would read as "nothing
    # said" and pause the build with questions: it is refused and asked again instead.
    model_config = ConfigDict(extra="forbid")

    ask: str | None = None
    """The question for the user when something is missing."""


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


class DeckSteps:
    """What each step needs, held once; `PptAgent` runs them in the order the row says."""

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

    async def research(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        """Search the web, storing each answer as it comes: a resume skips those done."""
        requirement = requirement_of(build)
        queries = [f"{requirement.topic}", f"{requirement.topic} key facts and figures"]
        queries = queries[: self.settings.search_queries]
        if self._search is None or not queries:
            yield ThinkingEvent("Web search is off: the slides use the model's knowledge.\n")
            build.search_info, build.status = "[]", "TEMPLATE"
            return
        found = Research.validate_json(build.search_info or "[]")
        done = {item.query for item in found}
        tools = {self._search.schema.name: self._search}
        for number, query in enumerate(queries, 1):
            if query in done:
                continue
            call = ToolUseBlock(f"deck-search-{build.id}-{number}", "web_search", {"query": query})
            results: list[ToolResultBlock] = []
            async for event in act(self.core, turn, state, tools, [call], results):
                yield event
            [output] = results
            found.append(Finding(query=query, result="" if output.is_error else output.output))
            build.search_info = Research.dump_json(found).decode()
            await self._builds.save(build)
        build.status = "TEMPLATE"

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

    async def render(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Rendering…\n")
        template = self.template(build)
        deck = DeckSchema.model_validate_json(build.ppt_schema or "{}")
        edited = slide_edit_of(build.query)
        pictures: dict[int, bytes] = {}
        if edited is not None and build.file_id:
            # One slide changed: the others keep the pictures they had, none drawn again.
            pictures = await asyncio.to_thread(kept_pictures, await self._bytes(build), edited - 1)
        wanted = _picture_prompts(deck, template, requirement_of(build).style)
        wanted = {i: p for i, p in wanted.items() if edited is None or i == edited - 1}
        if self._images is not None and wanted:
            yield ThinkingEvent(f"Drawing pictures for {len(wanted)} slides…\n")
            pictures |= await _draw(self._images, wanted)
        limit = self.settings.render_timeout_seconds
        deadline, given_up = time.monotonic() + limit, threading.Event()

        def expired() -> bool:
            return given_up.is_set() or time.monotonic() > deadline

        layouts = self.layouts(build)
        if layouts is None:
            path = self.templates.path(template.code)
            draw = partial(render_deck, path, template, deck, expired, pictures)
        else:
            source = await self._bytes(build, (build.template_code or "").removeprefix(UPLOADED))
            draw = partial(render_on_layouts, source, layouts, deck, expired, pictures)
        try:
            async with asyncio.timeout(limit):
                data = await asyncio.to_thread(draw)
                slides = await asyncio.to_thread(read_deck, data)
        except (TimeoutError, RenderTimeout) as exc:
            raise AgentFailure("PPT_RENDER_TIMEOUT", f"over {limit:g}s") from exc
        except RenderError as exc:
            raise AgentFailure("PPT_RENDER_FAILED", str(exc)) from exc
        finally:
            # Stopped or timed out, the thread goes on until it looks: tell it to give up.
            given_up.set()
        if len(slides) != len(deck.slides):
            raise AgentFailure("PPT_RENDER_FAILED", "the deck does not read back whole")
        stored = await self.core.documents.add_generated(
            turn.user_id, turn.conversation_id, file_name(build), data, PPTX_MIME
        )
        event = generated_event(stored)
        build.file_id, build.file_url, build.status = stored.id, event.url, SUCCESS
        yield event

    async def pdf(
        self, turn: Turn, build: DeckBuild, *, store: bool
    ) -> tuple[FileEvent | None, bytes]:
        """The stored deck as PDF (LibreOffice): its `file` event once stored (`store`), and
        its bytes, which the thumbnails are drawn from. Raises `ConversionFailed` with the
        reason there is none."""
        documents = self.core.documents
        limit = self.settings.render_timeout_seconds
        made = await preview.to_pdf(documents.previews, await self._bytes(build), limit)
        if not store:
            return None, made
        name = file_name(build).removesuffix(".pptx") + ".pdf"
        stored = await documents.add_generated(
            turn.user_id, turn.conversation_id, name, made, PDF_MIME
        )
        return generated_event(stored), made

    async def unmade_pdf(self, turn: Turn, build: DeckBuild, reason: str) -> FileEvent:
        """The PDF that could not be made, as a `failed` file: listed, with why, where the
        version's files are (as a report's is, agents/deep/files.py)."""
        name = file_name(build).removesuffix(".pptx") + ".pdf"
        unmade = await self.core.documents.add_unmade(
            turn.user_id, turn.conversation_id, name, PDF_MIME, reason
        )
        return generated_event(unmade)

    async def thumbnails(self, turn: Turn, build: DeckBuild, pdf: bytes) -> list[str]:
        """Store a PNG per page of the deck's PDF; their URLs."""
        documents = self.core.documents
        urls = []
        limit = self.settings.render_timeout_seconds
        for number, png in enumerate(await preview.pages(documents.previews, pdf, limit), 1):
            name = f"{file_name(build).removesuffix('.pptx')} slide {number}.png"
            image = await documents.add_generated(
                turn.user_id, turn.conversation_id, name, png, "image/png"
            )
            urls.append(generated_event(image).url)
        return urls

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


def _picture_prompts(deck: DeckSchema, template: TemplateSpec, style: str | None) -> dict[int, str]:
    """A prompt for each slide whose page can take a picture, by slide index."""
    prompts_by_slide = {}
    for index, slide in enumerate(deck.slides):
        page = template.page(slide.page_type)
        if page is None or page.picture is None:
            continue
        caption = slide.fields.get("caption")
        prompts_by_slide[index] = (
            f"An illustration for a presentation slide titled {slide.title!r}"
            f"{f', showing: {caption}' if isinstance(caption, str) else ''}."
            f" Style: {style or 'clean'}. No text or letters in the picture."
        )
    return prompts_by_slide


async def _draw(images: ImageMaker, prompts_by_slide: dict[int, str]) -> dict[int, bytes]:
    """The pictures the provider could draw, by slide; the others keep their panel."""
    drawn = await asyncio.gather(*(images.draw(p) for p in prompts_by_slide.values()))
    return {i: d for i, d in zip(prompts_by_slide, drawn, strict=True) if d is not None}
