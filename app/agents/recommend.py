"""Three follow-up questions after an answer: one short extra model call.

It is a nicety, so it is bounded in time and any failure yields no
suggestions rather than a failed turn. A stop still cancels it.
"""

from __future__ import annotations

import asyncio
import logging

import orjson

from app.core.messages import Msg
from app.core.responses import ChatResponse
from app.llm.base import ChatModel, UsageSink
from app.llm.errors import ModelError

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 20.0
ANSWER_EXCERPT_CHARS = 4000
PROMPT = (
    "You suggest follow-up questions. Given a question and its answer, write exactly three "
    "short follow-up questions the user is likely to ask next, in the language of the "
    "question. Reply with a JSON array of three strings and nothing else."
)


async def suggest_follow_ups(
    model: ChatModel, question: str, answer: str, on_usage: UsageSink
) -> list[str]:
    """Up to three questions; the call's tokens go to `on_usage`, as the turn's do."""
    if not answer.strip():
        return []
    messages = [
        Msg.text("system", PROMPT),
        Msg.text("user", f"Question: {question}\n\nAnswer: {answer[:ANSWER_EXCERPT_CHARS]}"),
    ]
    parts: list[str] = []
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            async for item in model.stream(messages, (), {"max_tokens": 300}, on_usage):
                if isinstance(item, ChatResponse):
                    parts.extend(b.text for b in item.content if b.type == "text")
    except (ModelError, TimeoutError) as exc:
        log.info("no follow-up questions: %s", type(exc).__name__)
        return []
    return parse_questions("".join(parts))


def parse_questions(text: str) -> list[str]:
    """The first JSON array of strings in `text` (models wrap it in prose or fences)."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return []
    try:
        items = orjson.loads(text[start : end + 1])
    except orjson.JSONDecodeError:
        return []
    if not isinstance(items, list):
        return []
    return [s.strip() for s in items if isinstance(s, str) and s.strip()][:3]
