"""Three follow-up questions after an answer: one short extra model call.

It is a nicety, so it is bounded in time, asked once (no second try), and
any failure yields no suggestions rather than a failed turn (the failure is
logged, once). A stop still cancels it. The answer is a JSON step like the
deep research's (`app/llm/structured.py`): native structured output where
the provider has it, its schema asking for exactly three questions, since
the original web client shows three; fewer are none.
"""

from __future__ import annotations

import asyncio
import logging

from pydantic import BaseModel

from app.core.messages import Msg
from app.llm.base import ChatModel, UsageSink
from app.llm.errors import ModelError
from app.llm.json_schema import closed_object, text
from app.llm.structured import StructuredOutputInvalid, structured

log = logging.getLogger(__name__)

TIMEOUT_SECONDS = 20.0
ANSWER_EXCERPT_CHARS = 4000
QUESTIONS = 3
QUESTION_CHARS = 200
STEP = "Suggesting follow-up questions"
PROMPT = (
    "You suggest follow-up questions. Given a question and its answer, write exactly three "
    "short follow-up questions the user is likely to ask next, in the language of the "
    'question. Answer with one JSON object and nothing else: {"questions": ["...", "...", '
    '"..."]}'
)


class FollowUps(BaseModel):
    questions: list[str]


SCHEMA = closed_object(
    {
        "questions": {
            "type": "array",
            "items": text(QUESTION_CHARS),
            "minItems": QUESTIONS,
            "maxItems": QUESTIONS,
        }
    }
)


def _mend(found: FollowUps) -> tuple[FollowUps, list[str]]:
    """Blank questions dropped, the first three kept."""
    kept = [q.strip() for q in found.questions if q.strip()][:QUESTIONS]
    return FollowUps(questions=kept), []


def _three(found: FollowUps) -> list[str]:
    count = len(found.questions)
    return [] if count == QUESTIONS else [f"Write exactly {QUESTIONS} questions, not {count}."]


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
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            found = await structured(
                model,
                messages,
                FollowUps,
                step=STEP,
                schema=SCHEMA,
                options={"max_tokens": 300},
                on_usage=on_usage,
                mend=_mend,
                check=_three,
                attempts=1,
            )
    except StructuredOutputInvalid:
        return []
    except (ModelError, TimeoutError) as exc:
        log.info("no follow-up questions: %s", type(exc).__name__)
        return []
    return found.questions
