"""Uploaded files (API.md "Files"), always scoped to the caller: another user's file is 404.

Answers use the `{code, message, data}` envelope, except the download, which
is the bytes. An upload is checked, stored, read and searchable before it
answers, so the next request can use it at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import AliasChoices, Field
from starlette.datastructures import UploadFile

from app.api.auth import CallerDep, UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.api.text_guard import text_problem, unstorable
from app.core.wire import WireModel, WireTime
from app.documents.library import EmptyFile, FileError, FileTooLarge, UnsupportedFile
from app.documents.previews import (
    NoPreview,
    NoSuchPage,
    PreviewError,
    PreviewFailed,
    PreviewUnavailable,
)
from app.service.errors import BlobNotFound
from app.service.records import PUBLIC_CONFIG, FileBase, FileUpload

if TYPE_CHECKING:
    from app.store.models import StoredFile

router = APIRouter(prefix="/file", tags=["files"])

FileId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
MULTIPART_OVERHEAD_BYTES = 64 * 1024
"""Room for the multipart boundaries and headers around the file in an upload's body."""

INLINE_TYPES = frozenset(
    {"application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp", "text/plain"}
)
ACTIVE_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "text/javascript"}
)
"""Types a browser renders or runs as part of a page."""

MAX_UPLOAD_FIELDS = 10
"""Plain form fields an upload may carry beside its file (none are read)."""

_STATUS: dict[type[FileError], int] = {UnsupportedFile: 415, FileTooLarge: 413, EmptyFile: 400}
_PREVIEW_STATUS: dict[type[PreviewError], int] = {
    NoPreview: 415,
    NoSuchPage: 404,
    PreviewFailed: 422,
    PreviewUnavailable: 503,
}
PREVIEW_MAX_AGE_SECONDS = 3600
"""A page's picture never changes (a file's bytes never do): browsers may keep it."""


def body_limit(upload_max_bytes: int) -> int:
    """The largest upload request body (see api/body_limit.py): the file and its multipart frame."""
    return upload_max_bytes + MULTIPART_OVERHEAD_BYTES


class UploadedFile(FileUpload):
    """A stored file as the upload answers it; the rest of the record is in `FileInfo`."""

    model_config = PUBLIC_CONFIG
    file_id: str = Field(validation_alias=AliasChoices("id", "file_id"))


class FileInfo(FileBase):
    """A file's metadata: every column of the file's base (store/models.py), and its id."""

    model_config = PUBLIC_CONFIG
    file_id: str = Field(validation_alias=AliasChoices("id", "file_id"))
    create_time: WireTime


class FileDetails(FileInfo):
    """`/file/info`: the metadata, and how many pages its preview has."""

    pages: int | None
    """Pages of `/file/preview` (an image: 1); null for a type with no preview, or a file
    whose pages could not be drawn (its preview says why)."""


class DeletedFile(WireModel):
    file_id: str
    deleted: bool


async def find_file(services: ServicesDep, user: str, file_id: str) -> StoredFile:
    """The caller's file, or 404: another user's file is not found, never forbidden."""
    file = await services.files.get(user, file_id)
    if file is None:
        raise ApiError(404, "File not found")
    return file


UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "pdf, docx, xlsx, txt, md, csv, tsv, png, jpg",
                    }
                },
            }
        }
    },
}
"""The upload's body as OpenAPI tells it: the route reads the form itself (see `upload_file`)."""


@router.post(
    "/upload",
    summary="Upload a document",
    openapi_extra={"requestBody": UPLOAD_BODY},
    responses={
        400: {"description": "No file, an empty one, or a file name that cannot be stored"},
        413: {"description": "Larger than UPLOAD_MAX_BYTES"},
        415: {"description": "Not an accepted type, or not what its name says"},
        429: {"description": "Over the user's uploads a minute; see Retry-After"},
    },
)
async def upload_file(
    request: Request, caller: CallerDep, services: ServicesDep
) -> Envelope[UploadedFile]:
    """Store the file and extract its text before answering.

    A pdf without a text layer, an image, or a damaged file is still stored,
    with status `failed` and the reason in `/file/info`. Over the user's
    uploads a minute: 429 with `Retry-After`, before the body is read.
    """
    # The form is read here, not declared as a parameter: FastAPI reads a declared
    # body before any dependency runs, so a caller with no key or no uploads left
    # would have sent (and we stored in a spool file) megabytes before hearing no.
    await services.limits.take(caller.limit_key, "upload")
    user = caller.user
    async with request.form(max_files=1, max_fields=MAX_UPLOAD_FIELDS) as form:
        file = form.get("file")
        if not isinstance(file, UploadFile) or not file.filename:
            raise ApiError(422, "Invalid request: file: an uploaded file is required")
        problem = text_problem(file.filename)
        if problem is not None:
            raise ApiError(400, unstorable("file name", problem))
        try:
            stored = await services.files.upload(user, file.filename, file.file)
        except FileError as exc:
            raise ApiError(_STATUS[type(exc)], str(exc)) from exc
    return ok(UploadedFile.model_validate(stored))


@router.get("/info/{file_id}", summary="A file's metadata, status and pages")
async def read_file_info(
    file_id: FileId, user: UserDep, services: ServicesDep
) -> Envelope[FileDetails]:
    """`pages` is counted the first time it is asked (an office file is made a PDF for it)."""
    file = await find_file(services, user, file_id)
    try:
        pages = await services.files.previews.page_count(file)
    except BlobNotFound:
        pages = None
    info = FileInfo.model_validate(file)
    return ok(FileDetails(**info.model_dump(), pages=pages))


@router.get("/content/{file_id}", summary="A file's extracted text")
async def read_file_content(file_id: FileId, user: UserDep, services: ServicesDep) -> Envelope[str]:
    """422 when the file has no text (status `failed`, with the reason)."""
    file = await find_file(services, user, file_id)
    content = await services.files.content(user, file_id)
    if content is None:
        raise ApiError(422, f"The file has no extracted text. {file.error or ''}".strip())
    return ok(content)


@router.get("/exists/{file_id}", summary="Whether the caller has this file")
async def file_exists(file_id: FileId, user: UserDep, services: ServicesDep) -> Envelope[bool]:
    return ok(await services.files.get(user, file_id) is not None)


@router.get("/list", summary="The caller's files, newest first")
async def list_files(user: UserDep, services: ServicesDep) -> Envelope[list[FileInfo]]:
    files = await services.files.list_files(user)
    return ok([FileInfo.model_validate(f) for f in files])


@router.get(
    "/download/{file_id}",
    summary="The stored bytes",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The file"}},
)
async def download_file(file_id: FileId, user: UserDep, services: ServicesDep) -> StreamingResponse:
    file = await find_file(services, user, file_id)
    try:
        chunks: AsyncIterator[bytes] = await services.files.download(file)
    except BlobNotFound as exc:
        raise ApiError(404, "The file's content is missing") from exc
    media_type, disposition = download_type(file.mime_type)
    return StreamingResponse(
        chunks,
        media_type=media_type,
        headers={
            "Content-Length": str(file.size),
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(file.file_name)}",
            "X-Content-Type-Options": "nosniff",
        },
    )


def download_type(mime_type: str) -> tuple[str, str]:
    """The type a download is served as, and whether a browser may show it (`inline`).

    Only types a browser shows without running anything are inline: a pdf
    (so a reference's `#page=N` opens there), raster images, and text, sent
    as `text/plain` so markdown or anything else textual is never rendered.
    Everything else, HTML and SVG above all (they run script in our origin),
    is an `attachment`; types that a browser would render even so are sent
    as bytes. With nosniff the browser keeps to the type given.
    """
    base = mime_type.partition(";")[0].strip().lower()
    if base in INLINE_TYPES:
        return base, "inline"
    if not base or base in ACTIVE_TYPES or base.endswith(("+xml", "/xml")):
        return "application/octet-stream", "attachment"
    if base.startswith("text/"):
        return "text/plain", "inline"
    return base, "attachment"


@router.get(
    "/preview/{file_id}",
    summary="A picture of one page",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}, "image/jpeg": {}}, "description": "The page"},
        404: {"description": "No such file, or past its last page"},
        415: {"description": "A type with no preview"},
        422: {"description": "The file could not be drawn (damaged, or over a limit)"},
        503: {"description": "LibreOffice, which office files need, is not installed"},
    },
)
async def preview_file(
    file_id: FileId,
    user: UserDep,
    services: ServicesDep,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> Response:
    """Page `page` (1-based) of a pdf, docx, pptx or xlsx as a PNG, or a png or jpeg itself.

    Office files go through LibreOffice to PDF, then pdfium, in a child process
    with the limits of document reading; each page is drawn once and kept.
    """
    file = await find_file(services, user, file_id)
    try:
        picture = await services.files.previews.page(file, page)
    except PreviewError as exc:
        raise ApiError(_PREVIEW_STATUS[type(exc)], str(exc)) from exc
    except BlobNotFound as exc:
        raise ApiError(404, "The file's content is missing") from exc
    return Response(
        picture.data,
        media_type=picture.media_type,
        headers={
            "Cache-Control": f"private, max-age={PREVIEW_MAX_AGE_SECONDS}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.delete("/{file_id}", summary="Delete a file")
async def delete_file(
    file_id: FileId, user: UserDep, services: ServicesDep
) -> Envelope[DeletedFile]:
    """Removes the bytes, the text, the passages and their vectors; 404 when not found."""
    deleted = await services.files.delete(user, file_id)
    if not deleted:
        raise ApiError(404, "File not found")
    return ok(DeletedFile(file_id=file_id, deleted=True))
