"""Skills: folders with a `SKILL.md` (Anthropic's Agent Skills format) the skills agent can follow.

The built-in ones are the folders beside this file, shipped as package data;
`SKILLS_DIR` adds the user's own. `catalog` reads them.
"""

from pathlib import Path

BUILTIN_SKILLS = Path(__file__).parent
