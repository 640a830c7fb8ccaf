"""Every fake model provider, by the name of the adapter it serves (`ChatModel.provider`).

The conformance suite and the per-provider integration tests run against
each entry, so a provider added here (its adapter in `app/llm/`, its fake
beside this module) is covered by all of them.
"""

from __future__ import annotations

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.dashscope_server import FakeDashScope
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import ScriptedServer

FAKE_PROVIDERS: dict[str, type[ScriptedServer]] = {
    "anthropic": FakeAnthropic,
    "dashscope": FakeDashScope,
    "gemini": FakeGemini,
    "openai": FakeOpenAI,
}
