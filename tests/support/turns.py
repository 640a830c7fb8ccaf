"""Drive one agent turn directly, without the HTTP layer or the run registry.

For tests of an agent's own logic: the turn's question is stored, its
events read to the end, and its conclusion stored, as the runner would.
"""

from __future__ import annotations

from app.agents.base import BaseAgent, Turn
from app.core.events import Event
from app.core.run import NeverStopped


async def drive_turn(agent: BaseAgent, turn: Turn) -> list[Event]:
    """Every event of the turn, `complete` last."""
    await agent.begin(turn)
    program = agent.start(turn)
    events = [event async for event in program.events(NeverStopped())]
    conclusion = await program.conclude(None)
    return [*events, *conclusion.events, conclusion.complete]
