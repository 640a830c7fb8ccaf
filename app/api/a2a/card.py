"""Our agent card: who we are to other agents, built per request from what this instance runs.

One skill per agent kind this instance runs (a kind without an agent is
left out, as `/agent/kinds` marks it unavailable); with `API_KEYS` set, the
card names the bearer scheme every call needs. The card itself is public,
as A2A clients read it before they hold a key. The interfaces' URLs come
from `A2A_PUBLIC_URL`, or else from the address the card was asked on.
"""

from __future__ import annotations

from collections.abc import Iterable

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

from app.agents.registry import AgentEntry
from app.api.a2a import JSONRPC_PATH, REST_PATH

BEARER = "bearer"


def agent_card(
    entries: Iterable[AgentEntry],
    running: frozenset[str],
    base_url: str,
    *,
    secured: bool,
    push: bool,
) -> AgentCard:
    """`push`: push notifications are on (`WEBHOOK_SECRET`: app/api/a2a/push.py)."""
    base = base_url.rstrip("/")
    card = AgentCard(
        name="dodo-agent",
        description=(
            "Agent chat service: web-search, file Q&A, deep research, PowerPoint and skills"
            " agents. Send a message with metadata `skill` naming one (default `chat`);"
            " a contextId is a conversation."
        ),
        version="0.1.0",
        supported_interfaces=[
            AgentInterface(
                url=base + JSONRPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=base + REST_PATH,
                protocol_binding=TransportProtocol.HTTP_JSON,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=base + JSONRPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=PROTOCOL_VERSION_0_3,
            ),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[_skill(entry) for entry in entries if entry.kind in running],
    )
    if secured:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="An API key of the service (API_KEYS)"
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def _skill(entry: AgentEntry) -> AgentSkill:
    return AgentSkill(
        id=entry.kind,
        name=entry.name,
        description=entry.description or entry.summary,
        tags=[entry.kind],
        examples=list(entry.examples),
        input_modes=["text/plain"],
        output_modes=["text/plain", "application/json"],
    )
