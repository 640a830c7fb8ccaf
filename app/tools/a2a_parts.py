"""A2A message parts as text: what our A2A server and the host agent's client both read.

Apart from the client, so the server (always mounted) does not load it.
"""

from __future__ import annotations

from collections.abc import Iterable

from a2a.types.a2a_pb2 import Part


def text_of(parts: Iterable[Part]) -> str:
    """The text parts of an A2A message, joined (data and file parts left out)."""
    return "".join(part.text for part in parts if part.HasField("text"))
