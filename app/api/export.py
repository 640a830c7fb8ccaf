"""A conversation as a file to keep (API.md §4): `GET /session/{conversationId}/export`.

Markdown to read (each question and answer, the answer's sources as numbered
links, the files it made as links to download them), or JSON to process:
the history's own answer, every turn with every field, so nothing is lost
that `/session/{conversationId}` shows. Links to our downloads are made whole
(`API_PUBLIC_URL`, else the URL the request came to): a saved file is read
away from the service. The file is named after the conversation's title.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.sessions import ConversationDetail, ConversationId, conversation_detail
from app.core.urls import absolute
from app.documents.library import clean_file_name

router = APIRouter(prefix="/session", tags=["sessions"])

NAME_CHARS = 100
"""Of the title, what names the file."""
FALLBACK_NAME = "conversation"
"""The name of a file whose title has no character a file name may hold (in ASCII, for one)."""
_NOT_PLAIN = re.compile(r"[^A-Za-z0-9 ._,()'&!+-]+")
"""What the ASCII name leaves out, beside the letters it cannot hold (their accents go)."""

ExportFormat = Literal["markdown", "json"]
_MEDIA_TYPES: dict[ExportFormat, tuple[str, str]] = {
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "json": ("application/json", "json"),
}


@router.get(
    "/{conversation_id}/export",
    summary="Download a conversation as Markdown or JSON",
    response_class=Response,
    responses={
        200: {
            "description": "The conversation, as an attachment",
            "content": {"text/markdown": {}, "application/json": {}},
        }
    },
)
async def export_conversation(
    conversation_id: ConversationId,
    request: Request,
    user: UserDep,
    services: ServicesDep,
    export_format: Annotated[ExportFormat, Query(alias="format")] = "markdown",
) -> Response:
    """404 when the conversation does not exist or is someone else's; 422 for another format."""
    # JSON keeps the whole tree; Markdown reads as the conversation now stands.
    detail = await conversation_detail(
        services, user, conversation_id, whole=export_format == "json"
    )
    if export_format == "json":
        body = detail.model_dump_json(by_alias=True, indent=2)
    else:
        base_url = services.http.public_url.rstrip("/") or str(request.base_url).rstrip("/")
        body = markdown(detail, base_url)
    media_type, extension = _MEDIA_TYPES[export_format]
    return Response(
        body,
        media_type=media_type,
        headers={
            "Content-Disposition": attachment(detail.title, extension),
            "X-Content-Type-Options": "nosniff",
        },
    )


def attachment(title: str, extension: str) -> str:
    """A download named after the conversation's title (RFC 6266): `filename*` keeps it
    whole in UTF-8, `filename` is its ASCII letters for a client that reads no other."""
    # Path separators and line breaks part words, as the spaces they stand for.
    stem = _line(clean_file_name(re.sub(r"[\s/\\]+", " ", title)))
    stem = stem[:NAME_CHARS].rstrip(" .") or FALLBACK_NAME
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    ascii_stem = _line(_NOT_PLAIN.sub(" ", ascii_stem)).strip(" .") or FALLBACK_NAME
    name = f"{stem}.{extension}"
    return (
        f'attachment; filename="{ascii_stem}.{extension}"; '
        f"filename*=UTF-8''{quote(name, safe='')}"
    )


def markdown(detail: ConversationDetail, base_url: str) -> str:
    lines = [f"# {_line(detail.title)}", ""]
    for turn in detail.messages:
        lines += ["## Question", "", turn.question, "", "## Answer", ""]
        lines += [turn.answer or "_No answer._", ""]
        if turn.status != "completed":
            said = turn.error_message or turn.error
            ended = f"{turn.status}: {said}" if said else turn.status
            lines += [f"_({_line(ended)})_", ""]
        if turn.reference:
            lines += ["Sources:", ""]
            lines += [
                f"{n}. {_link(ref.get('title') or ref.get('url', ''), ref.get('url', ''))}"
                for n, ref in enumerate(turn.reference, 1)
            ]
            lines.append("")
        if turn.files:
            lines += ["Files:", ""]
            lines += [
                f"- {_line(f.name)}: {_line(f.error or 'not made')}"
                if f.status == "failed"
                else f"- {_link(f.name, absolute(f.url, base_url))}"
                for f in turn.files
            ]
            lines.append("")
        lines += ["---", ""]
    return "\n".join(lines)


def _line(text: str) -> str:
    """A title on one line: a newline in it would end the heading."""
    return " ".join(text.split())


def _link(text: str, url: str) -> str:
    """A Markdown link whatever the text holds (brackets) or the URL (spaces, parentheses)."""
    label = _line(text).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    target = url.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")
    return f"[{label}](<{target}>)"
