"""Deep research: clarify, brief, plan, research in parallel, critique, report; on LangGraph.

Split by role: `state` (structured answers and the graph's state), `prompts`,
`structured` (model calls with validation), `graph` (nodes and wiring),
`checkpoints` (LangGraph's savers on our databases), `agent` (the agent).
"""

from app.agents.deep.agent import DeepResearchAgent, build

__all__ = ["DeepResearchAgent", "build"]
