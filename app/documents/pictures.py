"""A PNG or JPEG upload made fit to send to a vision model: turned upright, resized, re-encoded.

Each provider takes pictures up to a size of its own (the adapters' `image_max_side`):
a larger one is refused, or scaled down on their side after it cost the upload.
So the picture is scaled here to fit a `max_side` x `max_side` box, and
re-encoded by Pillow, which also drops its metadata (a phone's GPS position).

Pillow decodes in the server's process here, not in the isolated reader: so
the size is read from the header first and a picture over the OCR's pixel
cap (`ocr.MAX_PIXELS`) is never decoded; a JPEG is decoded at a reduced
scale straight away (`draft`); and at most `_AT_ONCE` pictures are decoded
at a time, whatever the number of turns. Call it off the event loop.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.documents.ocr import MAX_PIXELS

if TYPE_CHECKING:
    from PIL import Image

PICTURE_TYPES = ("image/png", "image/jpeg")
"""The uploads sent as pictures: those the service accepts (documents/extract.py)."""
MAX_PNG_BYTES = 3_500_000
"""A PNG larger than this once fit is sent as a JPEG (Anthropic takes 5 MB of base64 a picture)."""
JPEG_QUALITY = 85
_AT_ONCE = threading.BoundedSemaphore(2)


class PictureUnreadable(Exception):
    """The picture cannot be sent; `str()` says why, fit for the user."""


@dataclass(frozen=True, slots=True)
class Picture:
    data: bytes
    media_type: str
    width: int
    height: int


def fit_picture(data: bytes, max_side: int) -> Picture:
    """`data` (a PNG or JPEG) upright, within `max_side` on its longest side, re-encoded.

    Raises `PictureUnreadable` for a damaged picture or one over `MAX_PIXELS`.
    Blocking: run it in a thread.
    """
    from PIL import Image, ImageOps  # here: only a turn with a picture for a vision model needs it

    with _AT_ONCE:
        try:
            with Image.open(io.BytesIO(data)) as opened:
                width, height = opened.size
                if width * height > MAX_PIXELS:
                    raise PictureUnreadable(
                        f"The picture is {width}x{height} pixels, more than can be sent "
                        f"({MAX_PIXELS // 1_000_000} million pixels)."
                    )
                kind = opened.format
                opened.draft("RGB", (max_side, max_side))
                image = ImageOps.exif_transpose(opened)
                image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            # Pillow's own checks, at several times our cap: a warning raised where warnings
            # are errors (the tests), else only logged before our cap refuses it.
            raise PictureUnreadable("The picture is too large to be sent.") from exc
        except (OSError, SyntaxError, ValueError) as exc:
            raise PictureUnreadable("The picture could not be read: it may be damaged.") from exc
        return _encode(image, kind == "PNG")


def _encode(image: Image.Image, png: bool) -> Picture:
    """PNG stays PNG (text stays crisp) unless too large; the rest is a JPEG."""
    if png:
        if image.mode not in ("RGB", "RGBA", "L", "LA"):
            image = image.convert("RGBA")
        out = io.BytesIO()
        image.save(out, "PNG", optimize=False)
        if out.tell() <= MAX_PNG_BYTES:
            return Picture(out.getvalue(), "image/png", image.width, image.height)
    if image.mode != "RGB":
        image = image.convert("RGB")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=JPEG_QUALITY)
    return Picture(out.getvalue(), "image/jpeg", image.width, image.height)
