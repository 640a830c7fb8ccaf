"""Sections of the agents' own settings, and of the documents they read."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from app.config.base import SettingsSection

ShellMode = Literal["sandboxed", "unsandboxed"]


class DeepResearchSection(SettingsSection):
    """Deep research

    The plan, parallel tasks, critique and report of `/agent/deep/stream`
    (docs/use/deep-research.md).
    """

    deep_max_parallel: int = Field(default=3, ge=1)
    """Tasks of a plan that run at the same time."""
    deep_max_rounds: int = Field(default=3, ge=1)
    """Plan -> tasks -> critique rounds before the report is written anyway."""
    deep_task_max_rounds: int = Field(default=5, ge=1)
    """Search-and-reason rounds of one task before it must answer."""
    deep_fetch_per_task: int = Field(default=3, ge=0)
    """Search results one task reads whole (the best passage of each is what it cites); 0:
    tasks read snippets only (they may still call `fetch_page`)."""
    deep_fetch_parallel: int = Field(default=4, ge=1)
    """Pages one research turn reads at the same time, all its tasks together."""
    deep_report_formats: str = Field(
        default="docx,pdf", pattern=r"^\s*(none|((docx|pdf)\s*(,\s*|$))*)\s*$"
    )
    """Files each finished report is also given as: `docx`, `pdf` (made by LibreOffice from
    the docx) or both, comma-separated; `none` (an empty value keeps the default): none.
    Without LibreOffice the PDF's `file` event is `failed` with the reason, and the docx
    still comes."""


class DocumentsSection(SettingsSection):
    """Documents

    Uploads: how they are read, cut into passages and searched (the file agent, and every
    agent a file is attached to). Beyond any reading budget a document is kept as `failed`
    with the reason.
    """

    embedding_base_url: str = ""
    """An OpenAI-compatible `/embeddings` endpoint for hybrid (BM25 + vector) document search
    (`https://api.openai.com/v1`, `http://localhost:11434/v1`); empty: BM25 alone."""
    embedding_api_key: SecretStr = SecretStr("")
    """The embeddings endpoint's key."""
    embedding_model: str = "text-embedding-3-small"
    """The embeddings model."""
    embedding_batch_size: int = Field(default=64, ge=1)
    """Passages sent to the embeddings endpoint per request."""
    file_chunk_chars: int = Field(default=1000, ge=100)
    """Length of the passages a document is cut into for search, in characters."""
    file_chunk_overlap_chars: int = Field(default=200, ge=0)
    """Characters two neighbouring passages share."""
    file_whole_text_chars: int = Field(default=8000, ge=0)
    """A document whose text is at most this long is handed to the model whole."""
    file_search_top_k: int = Field(default=5, ge=1)
    """Passages returned per search."""
    file_max_inflated_bytes: int = Field(default=128 * 1024 * 1024, ge=1)
    """Bytes a docx, xlsx or pptx may unpack to, or one pdf page's content streams together:
    stops zip bombs before anything is unpacked."""
    file_max_pages: int = Field(default=2000, ge=1)
    """Pages of a pdf."""
    file_max_chars: int = Field(default=5_000_000, ge=1)
    """Characters of text one document may yield."""
    file_parse_memory_mb: int = Field(default=1024, ge=256)
    """Address space (MiB) of the child process that reads one document (and of the one
    that draws a page preview or a PDF)."""
    file_parse_seconds: float = Field(default=60.0, gt=0)
    """Wall time a document may take to read (or a page to draw), in its child process."""
    file_parse_workers: int = Field(default=2, ge=1)
    """Documents read at once; more uploads wait their turn."""
    preview_workers: int = Field(default=2, ge=1)
    """Pages drawn at once (`/file/preview`, report and deck PDFs, deck thumbnails), each in
    a child process with the `FILE_PARSE_MEMORY_MB` and `FILE_PARSE_SECONDS` limits
    (LibreOffice for office files; a deck's time: `PPTX_RENDER_TIMEOUT_SECONDS`); more wait
    their turn."""
    ocr_enabled: bool = True
    """Read scanned PDF pages and PNG/JPEG uploads by text recognition (Tesseract, Debian's
    `tesseract-ocr`), in the same child process and caps; `false`: such files are
    `failed`."""
    ocr_langs: str = Field(default="eng+chi_sim", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    """Tesseract's languages, `+`-joined (each needs its `tesseract-ocr-<lang>` package)."""
    ocr_max_pages: int = Field(default=50, ge=1)
    """Scanned pages of one document read by OCR; a document with more is `failed`."""


class SkillsSection(SettingsSection):
    """Skills agent

    `/agent/skills/stream`: skills, a workspace and a sandboxed shell (docs/use/skills.md).
    """

    skills_dir: Path | None = None
    """A folder of your own skills (each a folder with a `SKILL.md`), beside the built-in
    ones; a skill of yours with a built-in skill's name replaces it. Empty: the built-in
    ones only."""
    skills_max_rounds: int = Field(default=20, ge=1)
    """Tool rounds of the skills agent before a last answer without tools."""
    skills_shell: ShellMode = "sandboxed"
    """`sandboxed`: the shell runs inside bubblewrap (no network, only the workspace
    writable, no secrets); without `bwrap` installed the shell refuses to run.
    `unsandboxed` runs it without the sandbox (warned at start-up): only where bubblewrap
    cannot work at all."""
    skills_shell_timeout_seconds: float = Field(default=120.0, gt=0)
    """Seconds a shell command may run before it is killed with all its processes; a call
    may ask for more, up to `SKILLS_SHELL_MAX_TIMEOUT_SECONDS`."""
    skills_shell_max_timeout_seconds: float = Field(default=600.0, gt=0)
    """The longest time limit a call may ask for; the CPU-time limit too."""
    skills_shell_output_bytes: int = Field(default=30000, ge=1000)
    """Output of a command kept for the model (its head and tail)."""
    skills_shell_memory_bytes: int = Field(default=2 * 1024**3, ge=64 * 1024**2)
    """Address space a command may use."""
    skills_shell_processes: int = Field(default=256, ge=8)
    """Processes a command may run."""
    skills_max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    """Largest file the shell may write and the file tools may read or write."""
    skills_keep_tool_results: int = Field(default=4, ge=0)
    """Tool outputs kept whole in the skills agent's context; older ones become short
    stubs."""
    skills_context_tokens: int = Field(default=60000, ge=1000)
    """Above this many tokens (tiktoken), the skills agent's older work is replaced by a
    summary."""


class PptxSection(SettingsSection):
    """PowerPoint agent

    `/agent/pptx/stream`: decks on shipped or uploaded templates (docs/use/powerpoint.md).
    """

    pptx_render_timeout_seconds: float = Field(default=60.0, gt=0)
    """Longest a deck may take to draw (and its PDF to be made); past it the build is stored
    `FAILED` at `RENDER`."""
    pptx_max_slides: int = Field(default=20, ge=3, le=30)
    """Most slides in one deck (3 to 30); a longer request is asked to choose again."""
    pptx_search_queries: int = Field(default=2, ge=0, le=5)
    """Web searches a deck build makes for its facts (0: none; needs `TAVILY_API_KEY`)."""
    pptx_previews: bool = True
    """Slide thumbnails of each deck (PNG) for the chat page, where LibreOffice's `soffice`
    is installed."""
    pptx_pdf: bool = True
    """A PDF of each deck version, made by LibreOffice (the thumbnails are drawn from it);
    without `soffice` the deck comes with the reason it has none."""
    pptx_image_base_url: str = ""
    """An OpenAI-compatible images API (`POST {base}/images/generations`) for pictures on
    the image-with-text slides; empty: no pictures, those slides are drawn as a text
    statement."""
    pptx_image_api_key: SecretStr = SecretStr("")
    """The images API's key, sent only as a Bearer header."""
    pptx_image_model: str = "gpt-image-1"
    """The images model."""
