"""Which version of an agent a new turn gets (runtime/agents/promotion.py
``default_version``, docs/evaluation.md "Promotion"): the one it names; else, for an
agent whose agents module declares a promotion policy, the version the tenant last
promoted (before any promotion: the first declared); else the latest declared. Every
surface's admission asks this, and an experiment that names no version."""

from __future__ import annotations

from api.services import Services
from runtime.agents.definition import AgentDefinition


def agent_for(
    services: Services, tenant: str, name: str, version: str | None = None
) -> AgentDefinition:
    """The definition; ``UnknownAgent`` for an agent or version not declared. One read
    of the tenant's promotions, for a gated agent only."""
    if version is not None:
        return services.registry.get(name, version)
    return services.registry.default(name, lambda: services.store.promoted_versions(tenant, name))
