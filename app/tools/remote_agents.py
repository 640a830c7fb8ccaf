"""A remote A2A agent as a tool: described from its card, called with one message.

The model writes the whole request for the remote agent (it sees none of
our conversation) and may name one of its skills. What the remote agent is
doing shows as thinking notes while it works; its answer is the tool's
result (so `tool_end` carries it), its references join the turn's, and its
files become `file` events with the remote agent's URLs. A remote agent that
asks a question back (input-required) is answered by the model in a new
call, or the question is put to the user.
"""

from __future__ import annotations

from typing import Any

from app.core.events import FileEvent, ThinkingEvent
from app.core.tools import ToolSchema
from app.tools.a2a_client import RemoteAgent, RemoteAgents
from app.tools.base import ToolContext, ToolOutput

DESCRIPTION_CHARS = 1500
"""Most of a card's description and skills shown to the model, per agent."""


class RemoteAgentTool:
    def __init__(self, agent: RemoteAgent, agents: RemoteAgents) -> None:
        self._agent = agent
        self._agents = agents
        self.schema = _schema(agent)

    def notice(self, args: dict[str, Any]) -> str | None:
        return f"Asking {self._agent.card.name}\n"

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        text = str(args.get("message") or "").strip()
        if not text:
            return ToolOutput("Give the remote agent a `message`.", is_error=True)
        skill = args.get("skill")
        name = self._agent.card.name
        reply = await self._agents.ask(
            self.schema.name,
            text,
            str(skill) if skill else None,
            lambda note: ctx.emit(ThinkingEvent(f"{name}: {note}\n")),
        )
        for file in reply.files:
            ctx.emit(FileEvent(file.url, file.name, file.url, 0, file.mime_type))
        answer = "".join(reply.text)
        references = reply.references
        if reply.state == "completed":
            return ToolOutput(answer or "(no text)", references=references)
        if reply.state == "input_required":
            return ToolOutput(f"{name} asks: {reply.status or answer}", references=references)
        return ToolOutput(
            f"{name} ended {reply.state}: {reply.status or answer or 'no reason given'}",
            is_error=True,
            references=references,
        )


def remote_tools(agents: RemoteAgents) -> list[RemoteAgentTool]:
    return [RemoteAgentTool(agent, agents) for agent in agents.available()]


def _schema(agent: RemoteAgent) -> ToolSchema:
    card = agent.card
    lines = [f"Delegate to the remote agent {card.name!r}: {card.description}"]
    lines += [f"- skill {s.id!r} ({s.name}): {s.description}" for s in card.skills]
    properties: dict[str, Any] = {
        "message": {
            "type": "string",
            "description": "The whole request; the agent sees nothing else of this conversation.",
        }
    }
    if card.skills:
        properties["skill"] = {
            "type": "string",
            "enum": [s.id for s in card.skills],
            "description": "The skill to use (the agent picks when left out).",
        }
    return ToolSchema(
        name=agent.tool_name,
        description="\n".join(lines)[:DESCRIPTION_CHARS],
        parameters={"type": "object", "properties": properties, "required": ["message"]},
    )
