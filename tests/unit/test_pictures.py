"""Pictures made fit for a vision model: scaled, turned upright, stripped, never a bomb decoded."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from app.documents.ocr import MAX_PIXELS
from app.documents.pictures import PictureUnreadable, fit_picture

ORIENTATION = 0x0112
ROTATED_90 = 6
"""EXIF: the camera was turned; the picture is shown rotated 90° clockwise."""
GPS_INFO = 0x8825


def encoded(image: Image.Image, kind: str, exif: Image.Exif | None = None) -> bytes:
    out = io.BytesIO()
    image.save(out, kind, **({"exif": exif} if exif is not None else {}))
    return out.getvalue()


def test_a_large_png_is_scaled_to_the_box_and_stays_a_png() -> None:
    picture = fit_picture(encoded(Image.new("RGBA", (3000, 1000), "white"), "PNG"), 1568)

    assert (picture.media_type, picture.width, picture.height) == ("image/png", 1568, 523)
    with Image.open(io.BytesIO(picture.data)) as sent:
        assert (sent.format, sent.size) == ("PNG", (1568, 523))


def test_a_small_jpeg_keeps_its_size_and_loses_its_metadata_and_is_turned_upright() -> None:
    exif = Image.Exif()
    exif[ORIENTATION] = ROTATED_90
    exif[GPS_INFO] = {1: "N"}
    picture = fit_picture(encoded(Image.new("RGB", (400, 300), "red"), "JPEG", exif), 2048)

    with Image.open(io.BytesIO(picture.data)) as sent:
        assert (sent.format, sent.size) == ("JPEG", (300, 400))
        assert ORIENTATION not in sent.getexif()
        assert GPS_INFO not in sent.getexif()


def test_a_picture_over_the_pixel_cap_is_refused_from_its_header() -> None:
    # One bit a pixel: small to make, 50 million pixels to decode.
    wide = Image.new("1", (10_000, MAX_PIXELS // 10_000 + 1))

    with pytest.raises(PictureUnreadable, match="more than can be sent"):
        fit_picture(encoded(wide, "PNG"), 2048)


def test_a_damaged_picture_is_refused_with_a_reason() -> None:
    with pytest.raises(PictureUnreadable, match="damaged"):
        fit_picture(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, 2048)
