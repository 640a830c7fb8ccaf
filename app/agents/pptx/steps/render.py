"""The RENDER step and what follows it: the deck drawn (with its pictures) and stored, its
PDF and its thumbnails."""

from __future__ import annotations

import asyncio
import threading
import time
from functools import partial

from app.agents.pptx import preview
from app.agents.pptx.builds import SUCCESS, file_name, requirement_of, slide_edit_of
from app.agents.pptx.images import ImageMaker
from app.agents.pptx.render import RenderError, RenderTimeout, kept_pictures, read_deck, render_deck
from app.agents.pptx.render_layouts import render_on_layouts
from app.agents.pptx.schema import DeckSchema
from app.agents.pptx.steps.base import PDF_MIME, PPTX_MIME, UPLOADED, DeckStepsBase, Events
from app.agents.pptx.templates import TemplateSpec
from app.agents.turn import AgentFailure, Turn, TurnState
from app.core.events import FileEvent, ThinkingEvent
from app.documents.library import generated_event
from app.store.deck_builds import DeckBuild


class RenderSteps(DeckStepsBase):
    """Draws the deck and makes its PDF and previews."""

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
