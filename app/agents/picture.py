"""A picture attached to a turn: seen by a vision model, read as text by any other.

With a model the catalog marks `vision` (and whose adapter sends pictures:
`image_max_side`), a PNG or JPEG upload named by the turn's `fileId` goes to
the model as an image beside the question, fit in a thread to the provider's
limits (documents/pictures.py). Any other model is given the text OCR read
from the picture instead, and the user is told so in a `thinking` line.

The picture goes with this turn's question only. Memory keeps each earlier
question as its text (with the fileId it named, not the bytes): a later turn
does not send the picture again, and the answer the model gave about it is
what the conversation remembers. Asking about it again with its `fileId`
sends it again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from app.agents.turn import AgentCore, Turn
from app.core.messages import ImageBlock, Msg, TextBlock
from app.documents.pictures import PICTURE_TYPES, PictureUnreadable, fit_picture
from app.store.blobs import BlobNotFound
from app.store.models import StoredFile
from app.tools.untrusted import untrusted

log = logging.getLogger(__name__)

NO_VISION = "This model cannot see images: it was given the text read from the picture.\n"
NO_VISION_NO_TEXT = "This model cannot see images, and no text could be read from the picture.\n"
NOT_SENT = "The picture could not be sent to the model ({reason}): it was given its text instead.\n"
NOT_READ = (
    "This agent reads attached pictures only: {name} was not read (the file agent answers "
    "from documents).\n"
)


@dataclass(frozen=True, slots=True)
class AttachedPicture:
    """The turn's picture as its model takes it: an image, or the text read from it."""

    file: StoredFile
    image: ImageBlock | None
    """For a vision model; None: the model is given `text` instead."""
    text: str = ""
    """What OCR read from it; "" when nothing was (or the model sees the image)."""
    notice: str | None = None
    """The `thinking` line telling the user the model was not shown the picture."""

    def question(self, question: str, *, with_text: bool = True) -> Msg:
        """The user's message: the image before the question (as the providers advise), or
        the question with the picture's text when `with_text` (the file agent's model reads
        that text with its search tool instead)."""
        if self.image is not None:
            return Msg("user", [self.image, TextBlock(question)])
        if with_text and self.text:
            name = self.file.file_name
            question += (
                f"\n\nThe user attached the picture {name}; text recognition read this in it:\n"
                + untrusted(self.text, name)
            )
        return Msg.text("user", question)


async def attached_picture(
    core: AgentCore, turn: Turn, *, pictures_only: bool = False
) -> AttachedPicture | None:
    """The turn's attached picture, or None when it names no PNG or JPEG upload.

    `pictures_only`: the agent reads no other file, so one that is not a picture
    comes back as nothing to send, with a notice saying it was not read.
    """
    if not turn.file_id:
        return None
    file = await core.documents.get(turn.user_id, turn.file_id)
    if file is None:
        return None
    if file.mime_type not in PICTURE_TYPES:
        not_read = NOT_READ.format(name=file.file_name)
        return AttachedPicture(file, None, notice=not_read) if pictures_only else None
    side = core.image_side(turn.model_id)
    notice: str | None = None
    if side:
        try:
            return AttachedPicture(file, await _image(core, file, side))
        except PictureUnreadable as exc:
            notice = NOT_SENT.format(reason=str(exc).rstrip("."))
        except BlobNotFound:
            log.warning("the bytes of picture %s are gone: its text is sent instead", file.id)
            notice = NOT_SENT.format(reason="its file is missing")
    text = ""
    if file.status == "ready":
        text = await core.documents.content(turn.user_id, file.id) or ""
    if notice is None:
        notice = NO_VISION if text else NO_VISION_NO_TEXT
    return AttachedPicture(file, None, text, notice)


async def _image(core: AgentCore, file: StoredFile, side: int) -> ImageBlock:
    data = b"".join([chunk async for chunk in await core.documents.download(file)])
    picture = await asyncio.to_thread(fit_picture, data, side)
    return ImageBlock(
        picture.data, picture.media_type, picture.width, picture.height, file.file_name
    )
