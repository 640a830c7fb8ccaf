"""Split `<think>…</think>` spans out of streamed text, whatever the chunk boundaries.

Some models (DeepSeek-R1 and Qwen served by vLLM or Ollama, for instance)
put their reasoning inline in the answer text. Tags may be cut anywhere
across chunks, so the splitter holds back only a suffix that could still
become a tag, and releases everything else at once.
"""

from __future__ import annotations

from app.core.messages import TextBlock, ThinkingBlock

OPEN = "<think>"
CLOSE = "</think>"


class ThinkTagSplitter:
    def __init__(self) -> None:
        self._inside = False
        self._pending = ""

    def feed(self, text: str) -> list[TextBlock | ThinkingBlock]:
        out: list[TextBlock | ThinkingBlock] = []
        if not self._pending and "<" not in text:
            # Nearly every token: no tag can start or end in it. This runs per token.
            self._emit(out, text)
            return out
        buf = self._pending + text
        self._pending = ""
        while buf:
            tag = CLOSE if self._inside else OPEN
            at = buf.find(tag)
            if at >= 0:
                self._emit(out, buf[:at])
                buf = buf[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_suffix(buf, tag)
            self._emit(out, buf[: len(buf) - keep])
            self._pending = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[TextBlock | ThinkingBlock]:
        """Release a held-back suffix at the end of the stream (it was not a tag after all)."""
        out: list[TextBlock | ThinkingBlock] = []
        self._emit(out, self._pending)
        self._pending = ""
        return out

    def _emit(self, out: list[TextBlock | ThinkingBlock], text: str) -> None:
        if text:
            out.append(ThinkingBlock(text) if self._inside else TextBlock(text))


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0
