"""The steps of a deck build, each reading the build's row and writing its result and next status.

The model's steps (requirement, template, outline, slides, change) ask for a
JSON answer held to the request's own schema (step_schemas.py), mend what
code can mend (mending.py), check it against the template, and send what is
still wrong back once, for the failing part alone (a slide, not the deck),
then fail with an `error` naming the step; the search step runs the agents'
one tool-call loop; the render step draws the deck with python-pptx and
stores it.

Each step is a module of its own, its method on a part of `DeckSteps`; `base` holds what
they share.
"""

from app.agents.pptx.steps.base import STEP_NAMES, UPLOADED, DeckSettings
from app.agents.pptx.steps.outline import OutlineStep
from app.agents.pptx.steps.render import RenderSteps
from app.agents.pptx.steps.requirement import RequirementStep
from app.agents.pptx.steps.research import ResearchStep
from app.agents.pptx.steps.slides import SlideSteps
from app.agents.pptx.steps.template import TemplateStep


class DeckSteps(RequirementStep, ResearchStep, TemplateStep, OutlineStep, SlideSteps, RenderSteps):
    """What each step needs, held once; `PptAgent` runs them in the order the row says."""


__all__ = ["STEP_NAMES", "UPLOADED", "DeckSettings", "DeckSteps"]
