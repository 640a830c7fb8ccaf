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

Each message is routed by rules first (a paused build takes the answer; an
unfinished one plus a continue word resumes), then by the model's validated
answer, falling back to a new deck. Every model answer is JSON checked by
pydantic and against the template; an invalid one is asked for once more
with what was wrong, then the build fails with a clear `error`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter

from app.agents.base import AgentCore, AgentFailure, BaseAgent, Turn, TurnState
from app.agents.pptx import preview, prompts
from app.agents.pptx.images import ImageMaker, configured_images
from app.agents.pptx.render import RenderError, RenderTimeout, read_deck, render_deck
from app.agents.pptx.schema import (
    DeckSchema,
    Intent,
    Outline,
    OutlineSlide,
    Requirement,
    TemplateChoice,
    check_deck,
    check_outline,
    fit_deck,
    only_over_budget,
)
from app.agents.pptx.templates import TemplateLibrary, TemplateSpec
from app.config import Settings
from app.core.events import (
    DeckEvent,
    DeckSlide,
    DeckVersion,
    Event,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import Msg
from app.core.run import ConversationKey
from app.documents.library import generated_event
from app.llm.errors import ModelError, ModelOutputInvalid, user_message
from app.llm.structured import StructuredOutputInvalid, structured
from app.store.base import StoreError
from app.store.deck_builds import DeckBuild, SqlDeckBuildStore, TemplateRow
from app.tools.base import Tool, ToolContext

log = logging.getLogger(__name__)

PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
STEPS = ("REQUIREMENT", "SEARCH", "TEMPLATE", "OUTLINE", "SCHEMA", "MODIFY", "RENDER")
PAUSED, SUCCESS, FAILED = "PAUSED", "SUCCESS", "FAILED"
CONTINUE_WORDS = ("继续", "重试", "再试", "resume", "retry", "continue", "go on", "try again")

Answer = TypeVar("Answer", bound=BaseModel)


class DeckBuilds(Protocol):
    """Where builds are kept (`SqlDeckBuildStore`)."""

    async def versions(self, user_id: str, conversation_id: str) -> list[DeckBuild]: ...

    async def add(self, build: DeckBuild) -> DeckBuild: ...

    async def save(self, build: DeckBuild) -> None: ...

    async def forget(self, user_id: str, conversation_id: str) -> None: ...

    async def replace_templates(self, templates: Sequence[TemplateRow]) -> None: ...


@dataclass(frozen=True, slots=True)
class DeckSettings:
    render_timeout_seconds: float = 60.0
    max_slides: int = 20
    search_queries: int = 2
    previews: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> DeckSettings:
        return cls(
            render_timeout_seconds=settings.pptx_render_timeout_seconds,
            max_slides=settings.pptx_max_slides,
            search_queries=settings.pptx_search_queries,
            previews=settings.pptx_previews,
        )


class InvalidPlan(AgentFailure):
    """A step's answer was still invalid after one retry; `value` is the last parsed one."""

    def __init__(self, step: str, problems: list[str], value: BaseModel | None) -> None:
        super().__init__("PPT_INVALID_PLAN", f"{step}: {problems[0]}"[:300])
        self.problems = problems
        self.value = value


class RequirementAnswer(Requirement):
    # Every field may be null, so an object of another shape would read as "nothing
    # said" and pause the build with questions: it is refused and asked again instead.
    model_config = ConfigDict(extra="forbid")

    ask: str | None = None
    """The question for the user when something is missing."""


class PptAgent(BaseAgent):
    agent_type = "pptx"

    def __init__(
        self,
        core: AgentCore,
        builds: DeckBuilds,
        templates: TemplateLibrary,
        search: Tool | None,
        settings: DeckSettings,
        images: ImageMaker | None = None,
    ) -> None:
        super().__init__(core)
        self._builds = builds
        self._templates = templates
        self._search = search
        self._images = images
        self._settings = settings
        self._templates_listed = False

    async def forget(self, key: ConversationKey) -> None:
        await self._builds.forget(key.user_id, key.conversation_id)

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        await self._list_templates()
        versions = await self._builds.versions(turn.user_id, turn.conversation_id)
        latest = versions[-1] if versions else None
        intent = await self._intent(turn, state, latest)
        if intent == "resume" and latest is not None:
            build = latest
            yield ThinkingEvent(f"Resuming the build at {_resume_step(build)}\n")
            if build.status == PAUSED:
                build.query = f"{build.query}\n{turn.question}"
            build.status = _resume_step(build)
            build.failed_step = build.error_msg = None
        else:
            base = _last_success(versions) if intent == "modify" else None
            build = await self._builds.add(_new_build(turn, versions, base))
            if base is not None:
                yield ThinkingEvent(f"Changing version {base.version} into {build.version}\n")
        async for event in self._run(turn, state, build, versions):
            yield event

    async def _intent(self, turn: Turn, state: TurnState, latest: DeckBuild | None) -> str:
        """`create`, `modify` or `resume`: rules first, then the model, then `create`."""
        if latest is None:
            return "create"
        if latest.status == PAUSED:
            return "resume"
        words = turn.question.casefold()
        unfinished = latest.status != SUCCESS
        if unfinished and any(word in words for word in CONTINUE_WORDS):
            return "resume"
        messages = [
            Msg.text("system", prompts.INTENT.format(status=latest.status)),
            Msg.text("user", turn.question),
        ]
        try:
            intent = (await self._ask(turn, state, messages, Intent, attempts=1)).intent
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
        steps = {
            "REQUIREMENT": self._requirement,
            "SEARCH": self._research,
            "TEMPLATE": self._choose_template,
            "OUTLINE": self._outline,
            "SCHEMA": self._write_slides,
            "MODIFY": self._modify,
            "RENDER": self._render,
        }
        while build.status in steps:
            step = build.status
            try:
                async for event in steps[step](turn, state, build):
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
            ready = _deck_event("ready", build, self._template(build), [*earlier, build])
            if self._settings.previews and preview.available():
                yield ThinkingEvent("Drawing slide previews…\n")
                try:
                    ready.thumbnails = await self._thumbnails(turn, build)
                except Exception:
                    # The deck is stored and linked: a preview that fails is only missing.
                    log.warning("no previews for deck build %s", build.id, exc_info=True)
            yield ready
            yield TextEvent(_answer(build, self._template(build), earlier))

    async def _fail(self, build: DeckBuild, step: str, exc: Exception) -> None:
        """Store the build FAILED at `step` with why, in words the user can read."""
        code = exc.code if isinstance(exc, AgentFailure | ModelError) else "INTERNAL_ERROR"
        detail = exc.detail if isinstance(exc, AgentFailure) else ""
        build.status, build.failed_step = FAILED, step
        build.error_msg = f"{user_message(code)} {detail}".strip()
        try:
            await self._builds.save(build)
        except StoreError:
            log.warning("could not store the failure of deck build %s", build.id, exc_info=True)

    async def _requirement(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Checking the request…\n")
        system = prompts.REQUIREMENT.format(max_slides=self._settings.max_slides)
        answer = await self._plan(
            turn, state, "REQUIREMENT", [Msg.text("system", system), Msg.text("user", build.query)],
            RequirementAnswer, lambda _: [],
        )  # fmt: skip
        known = _requirement(build)
        requirement = known.merged(Requirement.model_validate(answer.model_dump(exclude={"ask"})))
        too_many = (requirement.slide_count or 0) > self._settings.max_slides
        if too_many:
            requirement.slide_count = None
        build.requirement = requirement.model_dump_json(by_alias=True)
        missing = requirement.missing()
        if missing:
            build.status = PAUSED
            question = answer.ask or f"To build the deck I still need: {', '.join(missing)}."
            if too_many:
                question = f"A deck has at most {self._settings.max_slides} slides. {question}"
            yield TextEvent(question)
            return
        yield ThinkingEvent(
            f"Requirement: {requirement.topic}, {requirement.slide_count} slides,"
            f" for {requirement.audience}, {requirement.style}\n"
        )
        build.status = "SEARCH"

    async def _research(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        """Search the web, storing each answer as it comes: a resume skips those done."""
        requirement = _requirement(build)
        queries = [f"{requirement.topic}", f"{requirement.topic} key facts and figures"]
        queries = queries[: self._settings.search_queries]
        if self._search is None or not queries:
            yield ThinkingEvent("Web search is off: the slides use the model's knowledge.\n")
            build.search_info, build.status = "[]", "TEMPLATE"
            return
        found = Research.validate_json(build.search_info or "[]")
        done = {item.query for item in found}
        for number, query in enumerate(queries, 1):
            if query in done:
                continue
            notes: list[Event] = []
            context = ToolContext(turn.user_id, turn.conversation_id, notes.append)
            call_id = f"deck-search-{build.id}-{number}"
            arguments = orjson.dumps({"query": query}).decode()
            yield ToolStartEvent("web_search", call_id, arguments)
            with self.core.observer.tool_call("web_search", call_id) as ended:
                output = await self._search({"query": query}, context)
                ended(output.is_error)
            for note in notes:
                yield note
            limit = self.core.limits.tool_result_display_chars
            yield ToolEndEvent("web_search", call_id, output.text[:limit], output.is_error)
            state.add_references(output.references)
            found.append(Finding(query=query, result="" if output.is_error else output.text))
            build.search_info = Research.dump_json(found).decode()
            await self._builds.save(build)
        build.status = "TEMPLATE"

    async def _choose_template(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        library = self._templates.templates
        listing = "\n".join(spec.summary() for spec in library.values())
        requirement = _requirement(build)
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

        choice = await self._plan(turn, state, "TEMPLATE", messages, TemplateChoice, exists)
        build.template_code, build.status = choice.template_code, "OUTLINE"
        yield ThinkingEvent(f"Template: {library[choice.template_code].name}\n")

    async def _outline(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        requirement, template = _requirement(build), self._template(build)
        count = requirement.slide_count or 0
        system = prompts.OUTLINE.format(
            slide_count=count,
            topic=requirement.topic,
            audience=requirement.audience,
            style=requirement.style,
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            research=_research_text(build) or "(no research)",
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        written: asyncio.Queue[str | None] = asyncio.Queue()

        async def plan() -> Outline:
            try:
                return await self._plan(
                    turn, state, "OUTLINE", messages, Outline,
                    lambda o: check_outline(o, count, template), written.put_nowait,
                )  # fmt: skip
            finally:
                written.put_nowait(None)

        planning = asyncio.create_task(plan())
        try:
            # The slides so far, as the model writes them ("" starts an answer, a retry too).
            text, shown = "", 0
            while (piece := await written.get()) is not None:
                text = text + piece if piece else ""
                slides = _partial_slides(text)
                if len(slides) != shown:
                    shown = len(slides)
                    yield DeckEvent("outline", build.version, "", template.name, slides)
            outline = await planning
        finally:
            planning.cancel()
            await asyncio.gather(planning, return_exceptions=True)
        build.outline, build.status = outline.model_dump_json(by_alias=True), "SCHEMA"
        yield _deck_event("outline", build, template, [])
        yield ThinkingEvent(
            f"Outline: {len(outline.slides)} slides\n"
            + "".join(f"{n}. {s.title} ({s.page_type})\n" for n, s in enumerate(outline.slides, 1))
        )

    async def _write_slides(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Writing the slides…\n")
        requirement, template = _requirement(build), self._template(build)
        outline = Outline.model_validate_json(build.outline or "{}")
        system = prompts.SCHEMA.format(
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            outline=build.outline,
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]
        deck = await self._fitted_plan(
            turn, state, "SCHEMA", messages, template, lambda d: check_deck(d, outline, template)
        )
        build.ppt_schema, build.status = deck.model_dump_json(by_alias=True), "RENDER"

    async def _modify(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Changing the slides…\n")
        requirement, template = _requirement(build), self._template(build)
        system = prompts.MODIFY.format(
            language=requirement.language or "the user's language",
            pages=prompts.describe_pages(template),
            deck=build.ppt_schema,
        )
        messages = [Msg.text("system", system), Msg.text("user", build.query)]

        title = Outline.model_validate_json(build.outline or "{}").title

        def fits(deck: DeckSchema) -> list[str]:
            return check_deck(deck, _outline_of(title, deck), template)

        deck = await self._fitted_plan(turn, state, "MODIFY", messages, template, fits)
        build.outline = _outline_of(title, deck).model_dump_json(by_alias=True)
        build.ppt_schema, build.status = deck.model_dump_json(by_alias=True), "RENDER"

    async def _render(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        yield ThinkingEvent("Rendering…\n")
        template = self._template(build)
        deck = DeckSchema.model_validate_json(build.ppt_schema or "{}")
        pictures: dict[int, bytes] = {}
        wanted = _picture_prompts(deck, template, _requirement(build).style)
        if self._images is not None and wanted:
            yield ThinkingEvent(f"Drawing pictures for {len(wanted)} slides…\n")
            pictures = await self._draw(wanted)
        limit = self._settings.render_timeout_seconds
        path = self._templates.path(template.code)
        deadline, given_up = time.monotonic() + limit, threading.Event()

        def expired() -> bool:
            return given_up.is_set() or time.monotonic() > deadline

        try:
            async with asyncio.timeout(limit):
                data = await asyncio.to_thread(render_deck, path, template, deck, expired, pictures)
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
        assert self.core.documents is not None
        stored = await self.core.documents.add_generated(
            turn.user_id, turn.conversation_id, _file_name(build), data, PPTX_MIME
        )
        event = generated_event(stored)
        build.file_id, build.file_url, build.status = stored.id, event.url, SUCCESS
        yield event

    async def _draw(self, prompts_by_slide: dict[int, str]) -> dict[int, bytes]:
        """The pictures the provider could draw, by slide; the others keep their panel."""
        assert self._images is not None
        drawn = await asyncio.gather(*(self._images.draw(p) for p in prompts_by_slide.values()))
        return {i: d for i, d in zip(prompts_by_slide, drawn, strict=True) if d is not None}

    async def _thumbnails(self, turn: Turn, build: DeckBuild) -> list[str]:
        """Store a PNG per slide of the stored deck; their URLs (none when it cannot)."""
        documents = self.core.documents
        assert documents is not None
        assert build.file_id is not None
        stored = await documents.get(turn.user_id, build.file_id)
        if stored is None:
            return []
        deck = b"".join([chunk async for chunk in await documents.download(stored)])
        pages = await preview.thumbnails(deck, self._settings.render_timeout_seconds)
        urls = []
        for number, png in enumerate(pages, 1):
            name = f"{_file_name(build).removesuffix('.pptx')} slide {number}.png"
            image = await documents.add_generated(
                turn.user_id, turn.conversation_id, name, png, "image/png"
            )
            urls.append(generated_event(image).url)
        return urls

    async def _fitted_plan(
        self,
        turn: Turn,
        state: TurnState,
        step: str,
        messages: list[Msg],
        template: TemplateSpec,
        check: Callable[[DeckSchema], list[str]],
    ) -> DeckSchema:
        """A deck that passes `check`; text still too long after the retry is shortened."""
        try:
            return await self._plan(turn, state, step, messages, DeckSchema, check)
        except InvalidPlan as exc:
            if isinstance(exc.value, DeckSchema) and only_over_budget(exc.problems):
                return fit_deck(exc.value, template)
            raise

    async def _plan(
        self,
        turn: Turn,
        state: TurnState,
        step: str,
        messages: list[Msg],
        kind: type[Answer],
        check: Callable[[Answer], list[str]],
        written: Callable[[str], None] | None = None,
    ) -> Answer:
        """The model's answer as `kind`, passing `check`; asked once more if it does not.

        `written` is told each piece of text as it comes, and "" when an answer starts.
        """
        try:
            return await self._ask(turn, state, messages, kind, check=check, written=written)
        except StructuredOutputInvalid as exc:
            raise InvalidPlan(step, exc.problems, exc.value) from exc

    async def _ask(
        self,
        turn: Turn,
        state: TurnState,
        messages: list[Msg],
        kind: type[Answer],
        *,
        check: Callable[[Answer], list[str]] | None = None,
        written: Callable[[str], None] | None = None,
        attempts: int = 2,
    ) -> Answer:
        """One structured step of the build, its usage added to the turn's."""
        return await structured(
            self.core.model,
            messages,
            kind,
            options=turn.options,
            on_usage=state.add_usage,
            on_text=written,
            check=check,
            attempts=attempts,
        )

    def _template(self, build: DeckBuild) -> TemplateSpec:
        template = self._templates.get(build.template_code or "")
        if template is None:
            # Only a template removed from the package since the build began gets here.
            raise AgentFailure("PPT_RENDER_FAILED", f"template {build.template_code} is gone")
        return template

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
                file_path=self._templates.path(spec.code).name,
                style_tags=",".join(spec.style_tags),
                slide_count=len(spec.pages),
            )
            for spec in self._templates.templates.values()
        ]
        try:
            await self._builds.replace_templates(rows)
        except StoreError:
            # Another instance listing them at the same moment, say: the table is for
            # people browsing the database, so a deck is not refused over it.
            log.warning("could not list the deck templates in ai_ppt_template", exc_info=True)
            return
        self._templates_listed = True


Events = AsyncIterator[Event]


_SLIDE_SO_FAR = re.compile(r'\{\s*"title"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"pageType"\s*:\s*"(\w+)"')


def _partial_slides(text: str) -> list[DeckSlide]:
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


class Finding(BaseModel):
    """One web search of a build and what it found (empty when it failed)."""

    query: str
    result: str


Research = TypeAdapter(list[Finding])
"""`ai_ppt_inst.search_info`: the searches done so far, as JSON."""


def _research_text(build: DeckBuild) -> str:
    return "\n\n".join(f.result for f in Research.validate_json(build.search_info or "[]"))


def _requirement(build: DeckBuild) -> Requirement:
    return Requirement.model_validate_json(build.requirement or "{}")


def _outline_of(title: str, deck: DeckSchema) -> Outline:
    """The outline an edited deck now has: its slides' titles and page types."""
    slides = [OutlineSlide(title=s.title or "-", page_type=s.page_type) for s in deck.slides]
    return Outline(title=title, slides=slides)


def _resume_step(build: DeckBuild) -> str:
    if build.status == PAUSED:
        return "REQUIREMENT"
    if build.status == FAILED:
        return build.failed_step or "REQUIREMENT"
    return build.status


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


def _last_success(versions: list[DeckBuild]) -> DeckBuild | None:
    return next((v for v in reversed(versions) if v.status == SUCCESS), None)


def _new_build(turn: Turn, versions: list[DeckBuild], base: DeckBuild | None) -> DeckBuild:
    """A new version: from scratch, or (`base`) a change of a finished deck."""
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
    return build


def _file_name(build: DeckBuild) -> str:
    return f"{Outline.model_validate_json(build.outline or '{}').title} v{build.version}.pptx"


def _deck_event(
    stage: Literal["outline", "ready"],
    build: DeckBuild,
    template: TemplateSpec,
    downloadable: list[DeckBuild],
) -> DeckEvent:
    outline = Outline.model_validate_json(build.outline or "{}")
    return DeckEvent(
        stage=stage,
        version=build.version,
        title=outline.title,
        template=template.name,
        slides=[DeckSlide(s.title, s.page_type) for s in outline.slides],
        versions=[DeckVersion(b.version, _file_name(b), b.file_url or "") for b in downloadable],
    )


def _answer(build: DeckBuild, template: TemplateSpec, earlier: list[DeckBuild]) -> str:
    """The answer text: the download link (the original client shows only links in text)."""
    outline = Outline.model_validate_json(build.outline or "{}")
    lines = [
        f"Your deck is ready: [{_file_name(build)}]({build.file_url})",
        "",
        f"Version {build.version}, template {template.name}, {len(outline.slides)} slides:",
        "",
        *(f"{n}. {s.title} ({s.page_type})" for n, s in enumerate(outline.slides, 1)),
    ]
    if earlier:
        lines += ["", "Earlier versions:"]
        lines += [f"- [version {v.version}]({v.file_url})" for v in earlier]
    return "\n".join(lines)


def build(core: AgentCore, settings: Settings) -> PptAgent:
    """The deck builder; it searches the web when a Tavily key is set."""
    if core.database is None:
        raise RuntimeError("the PowerPoint agent keeps its builds in the database")
    return PptAgent(
        core,
        SqlDeckBuildStore(core.database),
        TemplateLibrary(),
        core.search,
        DeckSettings.from_settings(settings),
        configured_images(core.http, settings),
    )
