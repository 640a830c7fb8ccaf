"""The AG-UI events we write directly are the bytes the package's encoder writes.

`frame` skips the `ag-ui-protocol` models for the text and reasoning messages'
events (app/api/formats/ag_ui.py says why); an AG-UI client must not be able to
tell, whatever the text holds.
"""

from __future__ import annotations

import pytest
from ag_ui.core import (
    BaseEvent,
    EventType,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from ag_ui.encoder import EventEncoder

from app.api.formats.ag_ui import frame

DELTAS = [
    "hello ",
    "",
    'quote " and \\ backslash',
    "line\nbreak\ttab\x00\x1f",
    "中文 é 🙂",
    "\u2028",
]
ID = "0f3c-12"
PAIRS: list[tuple[BaseEvent, bytes]] = [
    (
        TextMessageStartEvent(message_id=ID, role="assistant"),
        frame(EventType.TEXT_MESSAGE_START, messageId=ID, role="assistant"),
    ),
    (TextMessageEndEvent(message_id=ID), frame(EventType.TEXT_MESSAGE_END, messageId=ID)),
    (ReasoningStartEvent(message_id=ID), frame(EventType.REASONING_START, messageId=ID)),
    (
        ReasoningMessageStartEvent(message_id=ID),
        frame(EventType.REASONING_MESSAGE_START, messageId=ID, role="reasoning"),
    ),
    (
        ReasoningMessageEndEvent(message_id=ID),
        frame(EventType.REASONING_MESSAGE_END, messageId=ID),
    ),
    (ReasoningEndEvent(message_id=ID), frame(EventType.REASONING_END, messageId=ID)),
]


@pytest.mark.parametrize(("event", "written"), PAIRS)
def test_message_bounds_are_encoded_as_the_package_encodes_them(
    event: BaseEvent, written: bytes
) -> None:
    assert written == EventEncoder().encode(event).encode()


@pytest.mark.parametrize("delta", DELTAS)
def test_text_content_is_encoded_as_the_package_encodes_it(delta: str) -> None:
    expected = EventEncoder().encode(TextMessageContentEvent(message_id=ID, delta=delta))

    assert frame(EventType.TEXT_MESSAGE_CONTENT, messageId=ID, delta=delta) == expected.encode()


@pytest.mark.parametrize("delta", DELTAS)
def test_reasoning_content_is_encoded_as_the_package_encodes_it(delta: str) -> None:
    expected = EventEncoder().encode(ReasoningMessageContentEvent(message_id=ID, delta=delta))

    assert (
        frame(EventType.REASONING_MESSAGE_CONTENT, messageId=ID, delta=delta) == expected.encode()
    )
