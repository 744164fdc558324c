"""A2A agent cards: one per agent (``/a2a/{agent}``) and the root card, where every
agent is a skill (``/a2a``). Both are public; they name the bearer scheme the
JSON-RPC endpoints require.
"""

from __future__ import annotations

from typing import Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from runtime.agents.definition import AgentDefinition

_BEARER = {
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="a turnkeep API token: its tenant scopes every task"
        )
    )
}
_MODES = ["text/plain", "application/json"]


def _skill(base: str, agent: AgentDefinition) -> AgentSkill:
    return AgentSkill(
        id=agent.name,
        name=agent.name,
        description=(
            f"The turnkeep agent {agent.name!r}, version {agent.version}; its card: "
            f"{base}/a2a/{agent.name}/.well-known/agent-card.json"
        ),
        tags=["turnkeep", *(t.name for t in agent.tools)],
    )


def _card(base: str, path: str, **fields: Any) -> AgentCard:
    return AgentCard(
        supported_interfaces=[
            AgentInterface(
                url=f"{base}{path}",
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes=_BEARER,
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        **fields,
    )


def agent_card(base: str, agent: AgentDefinition) -> AgentCard:
    return _card(
        base,
        f"/a2a/{agent.name}",
        name=agent.name,
        version=agent.version,
        description=f"The turnkeep agent {agent.name!r}: a task is a durable turn, "
        "a context a session; a message on an input-required task answers it.",
        skills=[_skill(base, agent)],
    )


def root_card(base: str, agents: list[AgentDefinition]) -> AgentCard:
    return _card(
        base,
        "/a2a",
        name="turnkeep",
        version="1",
        description="Every turnkeep agent, one skill each. Each is an A2A agent at "
        "/a2a/{skill id} with its own card; here a new conversation names its agent "
        "in the message metadata: {'skill': id}.",
        skills=[_skill(base, a) for a in agents],
    )
