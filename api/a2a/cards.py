"""A2A agent cards: one per agent (``/a2a/{agent}``) and the root card, where every
agent is a skill (``/a2a``). Both are public; they name the bearer scheme the
JSON-RPC endpoints require.

A card describes the version a new task gets when it names none. A public card knows
no tenant, and a gated agent's default is per tenant (the version it last promoted:
docs/evaluation.md "Promotion"), so a public card describes the version of a tenant
that promoted none (api/service/defaults.py ``public_defaults``: the first declared),
the same for every reader, and says so; the authenticated extended card
(``GetExtendedAgentCard`` on the same endpoint) describes the caller's tenant's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry

_BEARER = {
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="a turnkeep API token: its tenant scopes every task"
        )
    )
}
_MODES = ["text/plain", "application/json"]


@dataclass(frozen=True)
class Described:
    """An agent's version a card describes, and for whom."""

    agent: AgentDefinition
    #: its default changes through promote, per tenant
    gated: bool
    #: the caller's tenant's default (an extended card), else the public one
    tenant: bool

    def version(self) -> str:
        v = self.agent.version
        if not self.gated:
            return f"version {v}"
        if self.tenant:
            return f"version {v}, the version your tenant promoted (or its first)"
        return (
            f"version {v}, the version of a tenant that promoted none: your tenant's "
            "own is on the authenticated extended card"
        )


def _skill(base: str, d: Described) -> AgentSkill:
    name = d.agent.name
    return AgentSkill(
        id=name,
        name=name,
        description=(
            f"The turnkeep agent {name!r}, {d.version()}; its card: "
            f"{base}/a2a/{name}/.well-known/agent-card.json"
        ),
        tags=["turnkeep", *(t.name for t in d.agent.tools)],
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
        # the extended card: the same, for the caller's tenant (its gated agents' own)
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=False, extended_agent_card=True
        ),
        security_schemes=_BEARER,
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        **fields,
    )


def agent_card(base: str, d: Described) -> AgentCard:
    name = d.agent.name
    return _card(
        base,
        f"/a2a/{name}",
        name=name,
        version=d.agent.version,
        description=f"The turnkeep agent {name!r}, {d.version()}: a task is a durable "
        "turn, a context a session; a message on an input-required task answers it.",
        skills=[_skill(base, d)],
    )


def root_card(base: str, agents: list[Described]) -> AgentCard:
    return _card(
        base,
        "/a2a",
        name="turnkeep",
        version="1",
        description="Every turnkeep agent, one skill each. Each is an A2A agent at "
        "/a2a/{skill id} with its own card; here a new conversation names its agent "
        "in the message metadata: {'skill': id}.",
        skills=[_skill(base, d) for d in agents],
    )


def described(
    registry: AgentRegistry, defaults: Mapping[str, AgentDefinition], *, tenant: bool
) -> list[Described]:
    """The agents as a card describes them: each one's default of ``defaults``
    (api/service/defaults.py), by name."""
    return [
        Described(a, gated=registry.policy(name) is not None, tenant=tenant)
        for name, a in sorted(defaults.items())
    ]
