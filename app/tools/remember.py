"""The `remember` tool: an agent keeps the user's memory (app/documents/user_memory.py).

Bound to one turn: what it saves belongs to the turn's user and project and records
the conversation and turn that saved it (`source: agent`); it updates or forgets only
the user's general items and the turn's project's, never another project's. The model
sees the ids of the items shown to it (the memory block, app/agents/context_blocks.py),
so a fact that changed updates its item instead of adding one that contradicts it.

Its result is a JSON object, read by the model and by the page (which shows "Saved to
memory" with an Undo under the answer): `{action, id, content, projectId}` for a save,
`{action, id, content, previous, projectId}` for an update, `{action, id, previous,
projectId}` for a forget.
A refusal (memory full, no such item, bad text) is an error result the model can pass on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from app.core.tools import ToolSchema
from app.documents.user_memory import MemoryRefused, UserMemory
from app.store.user_memory import Scope
from app.tools.base import ToolContext, ToolOutput

REMEMBER = "remember"
SCHEMA = ToolSchema(
    name=REMEMBER,
    description=(
        "Keep the user's memory, which you see in later conversations: `save` a lasting fact "
        "or preference the user states about themselves, or asks you to remember, in their "
        "words, one short fact per item; `update` the item (by the id the memory block shows) "
        "when such a fact changed, rather than saving one that contradicts it; `forget` an "
        "item the user asks you to forget or that no longer holds. Not for passing details "
        "of the task at hand."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["save", "update", "forget"]},
            "id": {"type": "string", "description": "The item to update or forget."},
            "content": {
                "type": "string",
                "description": "The fact or preference (save, update), at most 1,000 characters.",
            },
        },
        "required": ["action"],
    },
)


class Remember:
    schema = SCHEMA
    read_only = True
    """It writes only the user's own memory, which they see and undo from the answer: so
    `toolApproval: ask` does not stop for it (`TOOL_APPROVAL` naming it, or `*`, still does)."""

    def __init__(
        self,
        memory: UserMemory,
        user_id: str,
        project_id: str | None,
        conversation_id: str,
        turn_id: Callable[[], int],
    ) -> None:
        """`turn_id` gives the turn's row once it is stored: a turn's answer may start before
        its question's row is written (agents/base.py), never its tool calls."""
        self._memory = memory
        self._user_id = user_id
        self._project_id = project_id
        self._conversation_id = conversation_id
        self._turn_id = turn_id

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        action = args.get("action")
        item_id = str(args.get("id") or "")
        content = str(args.get("content") or "")
        scope = Scope(self._project_id)
        try:
            if action == "save":
                item = await self._memory.add(
                    self._user_id,
                    content,
                    "agent",
                    self._project_id,
                    self._conversation_id,
                    self._turn_id(),
                )
                return _result(
                    action="save", id=item.id, content=item.content, projectId=item.project_id
                )
            if action not in ("update", "forget"):
                return ToolOutput("`action` must be save, update or forget.", is_error=True)
            if not item_id:
                return ToolOutput(f"`{action}` needs the `id` of an item.", is_error=True)
            if action == "update":
                changed = await self._memory.change(self._user_id, item_id, content, scope)
                if changed is None:
                    return _unknown(item_id)
                before, after = changed
                return _result(
                    action="update",
                    id=item_id,
                    content=after.content,
                    previous=before.content,
                    projectId=after.project_id,
                )
            gone = await self._memory.forget(self._user_id, item_id, scope)
            if gone is None:
                return _unknown(item_id)
            return _result(
                action="forget", id=item_id, previous=gone.content, projectId=gone.project_id
            )
        except MemoryRefused as exc:
            return ToolOutput(str(exc), is_error=True)


def _result(**fields: Any) -> ToolOutput:
    return ToolOutput(orjson.dumps(fields).decode())


def _unknown(item_id: str) -> ToolOutput:
    return ToolOutput(f"No memory item {item_id!r}: use an id the memory block shows.", True)
