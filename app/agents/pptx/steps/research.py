"""The SEARCH step: the web searched for the deck's topic, each answer stored as it comes."""

from __future__ import annotations

from app.agents.pptx.builds import Finding, Research, requirement_of
from app.agents.pptx.steps.base import DeckStepsBase, Events
from app.agents.react import act
from app.agents.turn import Turn, TurnState
from app.core.events import ThinkingEvent
from app.core.messages import ToolResultBlock, ToolUseBlock
from app.store.deck_builds import DeckBuild


class ResearchStep(DeckStepsBase):
    """Searches the web for the deck, through the agents' tool loop."""

    async def research(self, turn: Turn, state: TurnState, build: DeckBuild) -> Events:
        """Search the web, storing each answer as it comes: a resume skips those done."""
        requirement = requirement_of(build)
        queries = [f"{requirement.topic}", f"{requirement.topic} key facts and figures"]
        queries = queries[: self.settings.search_queries]
        if self._search is None or not queries:
            yield ThinkingEvent("Web search is off: the slides use the model's knowledge.\n")
            build.search_info, build.status = "[]", "TEMPLATE"
            return
        found = Research.validate_json(build.search_info or "[]")
        done = {item.query for item in found}
        tools = {self._search.schema.name: self._search}
        for number, query in enumerate(queries, 1):
            if query in done:
                continue
            call = ToolUseBlock(f"deck-search-{build.id}-{number}", "web_search", {"query": query})
            results: list[ToolResultBlock] = []
            async for event in act(self.core, turn, state, tools, [call], results):
                yield event
            [output] = results
            found.append(Finding(query=query, result="" if output.is_error else output.output))
            build.search_info = Research.dump_json(found).decode()
            await self._builds.save(build)
        build.status = "TEMPLATE"
