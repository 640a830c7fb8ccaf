"""Text recognition (OCR) for scanned pages and pictures of text, by Tesseract.

Tesseract is Debian's `tesseract-ocr` with its language packages
(scripts/install-ocr): a kept engine that works offline. It runs as a
program, from the document reader's child process (documents/isolated.py),
so it inherits the child's memory cap, and it dies with the child (a
parent-death signal) when the child is killed at its wall-time limit.

A page is rendered by pdfium at `DPI` (Tesseract reads best at about 300);
a picture is given to Tesseract as it is, once its size is checked.
Tesseract puts spaces between Chinese characters: they are taken out.

Tesseract's first language leads: with `eng` first (as in `OCR_LANGS`'
default) it read some lines of a Chinese page as Latin letters, or as
nothing, where `chi_sim` first read them right; with `chi_sim` first it ran
some English words together. So a picture whose text comes out mostly
Chinese, Japanese or Korean is read again with that language first, and
the rest of its document is read that way from the start (`led_by`).
A page is not one language, though: on a mostly English page, a Chinese
heading "量子计算 测试" came out "量子计算 Mist", whichever language led the
page. So each word box is judged too (`_settle_words`): a Latin word
Tesseract is unsure of, on a line with CJK words, is read again alone by
the CJK language alone, and that reading is kept when it is CJK and surer.
"""

from __future__ import annotations

import ctypes
import io
import logging
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image


log = logging.getLogger(__name__)

DPI = 300
MAX_PIXELS = 40_000_000
"""Of a picture read by OCR: an A4 page at 600 DPI is 35 M; more is a bomb or a poster."""
_PR_SET_PDEATHSIG = 1
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}]) +(?=[{_CJK}])")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_CJK_LANGS = frozenset(
    f"{lang}{vertical}"
    for lang in ("chi_sim", "chi_tra", "jpn", "kor")
    for vertical in ("", "_vert")
)
_CJK_SHARE = 0.3
"""Of a text's characters (but spaces), the share in CJK scripts past which it is theirs."""
_UNSURE = 85.0
"""Tesseract's confidence (0-100) under which a Latin word on a CJK line is read again:
its misreadings of Chinese words as Latin ones came at 40-75, English words it read
right beside Chinese ones at 90-97."""
_MAX_REREADS = 20
"""Word boxes read again in one picture at most (the least sure first): each is a
Tesseract run, about 0.15 s."""


class OcrFailed(Exception):
    """Tesseract could not read the picture; `str()` says why."""


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """What the reading child needs to run OCR; given by `LibrarySettings.parsing`."""

    engine: str
    """The path of the `tesseract` program; empty when it is not installed."""
    langs: str
    """Tesseract's `-l`: `eng+chi_sim`, the installed ones of `OCR_LANGS`; "" for none."""
    max_pages: int
    """Pages of one document read by OCR at most."""


@cache
def tesseract_path() -> str:
    """Where `tesseract` is, or "" when it is not installed (looked up once)."""
    return shutil.which("tesseract") or ""


@cache
def usable_languages(engine: str, langs: str) -> str:
    """Of `langs` (`eng+chi_sim`), those installed, `+`-joined; "" for none.

    Tesseract given a language it lacks beside one it has reads with the one
    it has and says nothing: so the missing ones are named here, once, in the log.
    """
    try:
        listed = subprocess.run(
            [engine, "--list-langs"], capture_output=True, check=False, timeout=30
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    installed = set(listed.split()[1:])  # after "List of available languages in ...:"
    wanted = langs.split("+")
    missing = [lang for lang in wanted if lang not in installed]
    if missing:
        log.warning(
            "OCR_LANGS names languages Tesseract does not have: %s (install tesseract-ocr-<lang>)",
            ", ".join(missing),
        )
    return "+".join(lang for lang in wanted if lang in installed)


def recognise_file(settings: OcrSettings, path: Path) -> str:
    """The text of a PNG or JPEG picture; raises `OcrFailed`."""
    from PIL import Image  # here: only the isolated reader's process recognises text

    try:
        with Image.open(path) as image:
            width, height = image.size
    except (OSError, Image.DecompressionBombError) as exc:
        raise OcrFailed("The picture could not be read: it may be damaged.") from exc
    if width * height > MAX_PIXELS:
        raise OcrFailed(
            f"The picture is {width}x{height} pixels, more than text recognition reads "
            f"({MAX_PIXELS // 1_000_000} million pixels)."
        )
    return _read(settings, path.read_bytes())


def recognise_image(settings: OcrSettings, image: Image.Image) -> str:
    """The text of a rendered page; raises `OcrFailed`."""
    out = io.BytesIO()
    image.save(out, "PNG")
    return _read(settings, out.getvalue())


def led_by(settings: OcrSettings, text: str) -> OcrSettings:
    """`settings` with their first CJK language leading, when `text` (read with them) is
    mostly in CJK scripts and a Latin one leads; else `settings` themselves."""
    langs = settings.langs.split("+")
    lead = next((lang for lang in langs if lang in _CJK_LANGS), None)
    if lead is None or langs[0] in _CJK_LANGS:
        return settings
    written = "".join(text.split())
    if not written or len(_CJK_CHAR.findall(written)) < _CJK_SHARE * len(written):
        return settings
    return replace(settings, langs="+".join([lead, *(lang for lang in langs if lang != lead)]))


@dataclass(frozen=True, slots=True)
class _Word:
    """One word box of Tesseract's TSV output."""

    line: tuple[int, int, int]
    """Its block, paragraph and line numbers."""
    box: tuple[int, int, int, int]
    """Left, top, right, bottom, in the picture's pixels."""
    text: str
    confidence: float


def _read(settings: OcrSettings, picture: bytes) -> str:
    words = _tesseract(settings, picture)
    led = led_by(settings, _text(words))
    if led is not settings:
        words = _tesseract(led, picture)
    return _text(_settle_words(settings, picture, words))


def _settle_words(settings: OcrSettings, picture: bytes, words: list[_Word]) -> list[_Word]:
    """`words` with each unsure Latin word on a line with CJK words read again alone by the
    first CJK language alone (alone, it read "测试" where beside English it read "Mist"),
    and replaced when that reading is CJK and surer."""
    lang = next((lang for lang in settings.langs.split("+") if lang in _CJK_LANGS), None)
    unsure = _unsure_words(words)
    if lang is None or not unsure:
        return words
    from PIL import Image  # here: only the isolated reader's process recognises text

    alone = replace(settings, langs=lang)
    settled = list(words)
    with Image.open(io.BytesIO(picture)) as image:
        for n in unsure:
            again = _tesseract(alone, _word_picture(image, words[n].box), "--psm", "8")
            text = "".join(word.text for word in again)
            surest = min((word.confidence for word in again), default=0.0)
            if _CJK_CHAR.search(text) and surest > words[n].confidence:
                settled[n] = replace(words[n], text=text, confidence=surest)
    return settled


def _unsure_words(words: list[_Word]) -> list[int]:
    """The indexes of the Latin words Tesseract is unsure of on lines with CJK words, the
    least sure first, `_MAX_REREADS` at most."""
    cjk_lines = {word.line for word in words if _CJK_CHAR.search(word.text)}
    unsure = [
        n
        for n, word in enumerate(words)
        if word.line in cjk_lines and not _CJK_CHAR.search(word.text) and word.confidence < _UNSURE
    ]
    return sorted(unsure, key=lambda n: words[n].confidence)[:_MAX_REREADS]


def _word_picture(image: Image.Image, box: tuple[int, int, int, int]) -> bytes:
    """The word in `box`, with white around it: cropped to its box, Tesseract read "测试"
    as ">;咱|]陈"; with a quarter of its height around, right."""
    left, top, right, bottom = box
    margin = (bottom - top) // 4
    crop = image.crop(
        (
            max(left - margin, 0),
            max(top - margin, 0),
            min(right + margin, image.width),
            min(bottom + margin, image.height),
        )
    )
    out = io.BytesIO()
    crop.convert("L").save(out, "PNG")  # PNG has no CMYK, which a JPEG may be
    return out.getvalue()


def _text(words: list[_Word]) -> str:
    """The words as Tesseract writes text: a line a line, a blank line between paragraphs,
    no spaces between CJK characters."""
    paragraphs: list[list[list[str]]] = []
    last: tuple[int, int, int] | None = None
    for word in words:
        if last is None or word.line[:2] != last[:2]:
            paragraphs.append([[]])
        elif word.line != last:
            paragraphs[-1].append([])
        paragraphs[-1][-1].append(word.text)
        last = word.line
    text = "\n\n".join("\n".join(" ".join(line) for line in lines) for lines in paragraphs)
    return _CJK_GAP.sub("", text).strip()


def _words(tsv: str) -> list[_Word]:
    """The word boxes (level 5) of Tesseract's TSV output, in reading order."""
    words = []
    for row in tsv.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) != 12 or fields[0] != "5" or not fields[11].strip():
            continue
        left, top, width, height = map(int, fields[6:10])
        words.append(
            _Word(
                (int(fields[2]), int(fields[3]), int(fields[4])),
                (left, top, left + width, top + height),
                fields[11].strip(),
                float(fields[10]),
            )
        )
    return words


def _tesseract(settings: OcrSettings, picture: bytes, *options: str) -> list[_Word]:
    try:
        done = subprocess.run(
            [
                *(settings.engine, "stdin", "stdout", "-l", settings.langs, "--dpi", str(DPI)),
                *options,
                "tsv",
            ],
            input=picture,
            capture_output=True,
            check=False,
            # One thread: the machine's cores are the other documents' and the server's.
            env={"OMP_THREAD_LIMIT": "1"},
            # Safe here: the reading child has one thread.
            preexec_fn=_die_with_parent,
        )
    except OSError as exc:
        raise OcrFailed("Text recognition (OCR) could not be started.") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no reason"]
        raise OcrFailed(f"Text recognition (OCR) failed: {reason[0][:200]}")
    return _words(done.stdout.decode("utf-8", "replace"))


def _die_with_parent() -> None:
    """In Tesseract's process, before it starts: be killed when the reading child dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
