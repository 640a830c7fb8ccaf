"""Our agent card: who we are to other agents, built per request from what this instance runs.

One skill per agent kind this instance runs (a kind without an agent is
left out, as `/agent/kinds` marks it unavailable); with authentication on,
the card names the schemes a call may use (any one of them): a bearer key
(`API_KEYS` or a key made at `/auth/keys`), the OIDC issuer's access tokens
(`openIdConnectUrl`), and, behind a sign-in proxy, nothing A2A can express
beyond the bearer key. The card itself is public,
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
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

from app.agents.registry import AgentEntry
from app.api.a2a import JSONRPC_PATH, REST_PATH

BEARER = "bearer"
OIDC = "oidc"


def agent_card(
    entries: Iterable[AgentEntry],
    running: frozenset[str],
    base_url: str,
    *,
    schemes: Iterable[str],
    push: bool,
    issuer: str = "",
) -> AgentCard:
    """`schemes` are the authenticator's (`apiKey`, `oidc`, `proxy`); none: an open card.

    `push`: push notifications are on (`WEBHOOK_SECRET`: app/api/a2a/push.py).
    """
    on = set(schemes)
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
    if on:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="An API key of the service (API_KEYS, or made at /auth/keys)",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    if "oidc" in on and issuer:
        card.security_schemes[OIDC].CopyFrom(
            SecurityScheme(
                open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                    open_id_connect_url=f"{issuer}/.well-known/openid-configuration",
                    description="An access token of the service's identity provider",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={OIDC: StringList()}))
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
