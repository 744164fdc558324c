"""Which version of an agent a new turn gets (runtime/agents/promotion.py
``default_version``, docs/evaluation.md "Promotion"): the one it names; else, for an
agent whose agents module declares a promotion policy, the version the tenant last
promoted (before any promotion: the first declared); else the latest declared. Every
surface's admission asks this, and an experiment that names no version; and every
surface that describes an agent describes this version: ``GET /v1/agents``, MCP's
tools, A2A's cards (docs/evaluation.md "Promotion")."""

from __future__ import annotations

from turnkeep.api.resources import ApiResources
from turnkeep.runtime.agents.definition import AgentDefinition


def agent_for(
    services: ApiResources, tenant: str, name: str, version: str | None = None
) -> AgentDefinition:
    """The definition; ``UnknownAgent`` for an agent or version not declared. One read
    of the tenant's promotions, for a gated agent only."""
    if version is not None:
        return services.registry.get(name, version)
    return services.registry.default(
        name, lambda: services.store.promotions.promoted_versions(tenant, name)
    )


def defaults_for(services: ApiResources, tenant: str) -> dict[str, AgentDefinition]:
    """Every declared agent's default for the tenant's new turns, by name: one read of
    the tenant's promotions for all gated agents together (none when none is gated)."""
    return services.registry.defaults(
        lambda names: services.store.promotions.promoted_versions_of(tenant, names)
    )


def public_defaults(services: ApiResources) -> dict[str, AgentDefinition]:
    """What a surface with no tenant describes (a public agent card): the version a new
    turn gets in a tenant that promoted none, so the same for everyone who reads it: a
    gated agent's first declared version, any other's latest. A tenant's own is on the
    surfaces that know the tenant (``defaults_for``)."""
    return services.registry.defaults(lambda names: {})
