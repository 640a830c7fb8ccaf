"""The PowerPoint builder agent: a resumable deck build on shipped templates."""

from app.agents.pptx.agent import PptAgent, build

__all__ = ["PptAgent", "build"]
