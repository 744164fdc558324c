"""An agents module's agents, by name and by definition hash, and the import of the
module itself (``TURNKEEP_AGENTS=package.module``, like a Celery app module): it
exposes ``AGENTS``, a list of ``AgentDefinition``, and may expose ``PROMOTIONS``, a list
of ``PromotionPolicy`` (the agents whose default version changes only through
``promote``: runtime/evaluation/gate.py).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.promotion import PromotionPolicy, default_version
from turnkeep.runtime.errors import DefinitionError, UnknownAgent
from turnkeep.runtime.memory import TOOL_NAME as MEMORY_TOOL

__all__ = ["AgentRegistry", "load_agents"]


class AgentRegistry:
    """The agents of one agents module, by name and version. A name may be declared
    in several versions (``AGENTS = [support_v1, support_v2]``): the last one declared
    is the latest, the default for new turns; the others are served side by side, so
    the turns admitted under them finish or move on (docs/deploy.md)."""

    def __init__(
        self, agents: list[AgentDefinition], policies: Sequence[PromotionPolicy] = ()
    ) -> None:
        #: each name's versions in declared order, oldest first
        self._versions: dict[str, list[AgentDefinition]] = {}
        for agent in agents:
            versions = self._versions.setdefault(agent.name, [])
            if any(v.version == agent.version for v in versions):
                raise DefinitionError(
                    f"agent {agent.name!r} is declared twice (version {agent.version!r})"
                )
            names = [t.name for t in agent.tools]
            if len(names) != len(set(names)):
                raise DefinitionError(f"agent {agent.name!r} declares a tool twice")
            if agent.memory is not None and MEMORY_TOOL in names:
                # (checked here, not in __post_init__: the worker adds the tool by replace)
                raise DefinitionError(f"agent {agent.name!r}: {MEMORY_TOOL} is its memory's tool")
            versions.append(agent)
        #: the latest version of each name
        self._agents = {name: versions[-1] for name, versions in self._versions.items()}
        every = [a for versions in self._versions.values() for a in versions]
        for agent in every:
            for sp in agent.specialists:
                if sp.agent not in self._agents:
                    raise DefinitionError(
                        f"agent {agent.name!r}: specialist {sp.name!r} names no agent {sp.agent!r}"
                    )
        self._by_hash: dict[str, AgentDefinition] = {}
        for agent in every:
            if agent.definition_hash in self._by_hash:
                twin = self._by_hash[agent.definition_hash].version
                raise DefinitionError(
                    f"agent {agent.name!r}: versions {twin!r} and {agent.version!r} "
                    "are the same definition"
                )
            self._by_hash[agent.definition_hash] = agent
        #: the definition hashes served here: a worker starts only turns pinned to one
        self.hashes: list[str] = sorted(self._by_hash)
        #: the max_running of each served definition that declares one, by hash
        self.max_running: dict[str, int] = {
            h: a.max_running for h, a in self._by_hash.items() if a.max_running is not None
        }
        #: the gated agents' promotion policies, by name
        self._policies = self._gates(policies)

    def _gates(self, policies: Sequence[PromotionPolicy]) -> dict[str, PromotionPolicy]:
        found: dict[str, PromotionPolicy] = {}
        for policy in policies:
            if policy.agent not in self._agents:
                raise DefinitionError(f"promotion policy names no agent {policy.agent!r}")
            if policy.agent in found:
                raise DefinitionError(f"agent {policy.agent!r} has two promotion policies")
            found[policy.agent] = policy
        return found

    def default(self, name: str, promoted: Callable[[], Sequence[str]]) -> AgentDefinition:
        """The version of ``name`` a new turn that names none gets (``promoted``: the
        tenant's promoted versions, newest first, asked only for a gated agent:
        runtime/agents/promotion.py)."""
        versions = self._versions.get(name)
        if not versions:
            raise UnknownAgent(f"no agent named {name!r}")
        return default_version(versions, self._policies.get(name), promoted)

    def defaults(
        self, promoted: Callable[[list[str]], Mapping[str, Sequence[str]]]
    ) -> dict[str, AgentDefinition]:
        """Every agent's default version, by name (``promoted``: the tenant's promoted
        versions of the gated agents it is given, each newest first, asked once and
        only when an agent is gated)."""
        gated = [name for name in self.names() if name in self._policies]
        found = promoted(gated) if gated else {}
        return {
            name: default_version(
                self._versions[name], self._policies.get(name), partial(list, found.get(name, ()))
            )
            for name in self.names()
        }

    def policy(self, name: str) -> PromotionPolicy | None:
        """The promotion policy of ``name``; None: not gated (its latest is the default)."""
        return self._policies.get(name)

    def by_hash(self, definition_hash: str) -> AgentDefinition | None:
        """The agent whose definition hashes to ``definition_hash``, if served here."""
        return self._by_hash.get(definition_hash)

    def get(self, name: str, version: str | None = None) -> AgentDefinition:
        """The latest version of ``name``, or the one named."""
        if version is None:
            try:
                return self._agents[name]
            except KeyError:
                raise UnknownAgent(f"no agent named {name!r}") from None
        for agent in self._versions.get(name, ()):
            if agent.version == version:
                return agent
        raise UnknownAgent(f"no agent named {name!r} in version {version!r}")

    def versions(self, name: str) -> list[AgentDefinition]:
        """Every declared version of ``name``, oldest first (empty: not declared)."""
        return list(self._versions.get(name, ()))

    def names(self) -> list[str]:
        return sorted(self._agents)


_lock = threading.Lock()
_loaded: dict[str, AgentRegistry] = {}


def load_agents(module: str) -> AgentRegistry:
    """Import an agents module once and index its ``AGENTS``."""
    with _lock:
        if module not in _loaded:
            try:
                mod = importlib.import_module(module)
            except ImportError as exc:
                raise DefinitionError(f"cannot import agents module {module!r}") from exc
            agents = getattr(mod, "AGENTS", None)
            if not isinstance(agents, list | tuple):
                raise DefinitionError(f"{module!r} has no AGENTS list")
            policies = getattr(mod, "PROMOTIONS", ())
            if not isinstance(policies, list | tuple):
                raise DefinitionError(f"{module!r}: PROMOTIONS is a list")
            _loaded[module] = AgentRegistry(list(agents), list(policies))
        return _loaded[module]
