"""``PromotionPolicy``: what an agents module declares for an agent whose default
version changes only through ``promote`` (runtime/evaluation/gate.py checks it,
docs/evaluation.md). Declared beside ``AGENTS`` as ``PROMOTIONS = [...]``, per agent
name, not per version: a candidate cannot bring a weaker gate with it. Not part of any
definition's hash.

``default_version`` is the one rule of which version a new turn that names none gets.
A gated agent's is the version the tenant last promoted (of those still declared),
and before any promotion the first version declared: declaring a newer version
changes nothing until it is promoted. An agent with no policy keeps the rule of
docs/deploy.md: its last declared version. A turn naming ``agent_version`` gets that
version either way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnkeep.runtime.errors import DefinitionError

if TYPE_CHECKING:
    from turnkeep.runtime.agents.definition import AgentDefinition

__all__ = ["PromotionPolicy", "default_version"]


@dataclass(frozen=True)
class PromotionPolicy:
    """What a version of ``agent`` must show before it becomes the default."""

    agent: str
    #: datasets (by name) whose newest version the candidate must have run
    datasets: tuple[str, ...] = ()
    #: the lowest pass rate allowed on each, 0 to 1
    min_pass_rate: float = 1.0
    #: how far the candidate's pass rate may trail the current default's, 0 to 1
    max_regression: float = 0.0
    #: every none-of assertion (security, isolation) must pass
    none_of_clean: bool = True
    #: a recovery drill must give the same assertion results
    recovery: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "datasets", tuple(self.datasets))
        for name in ("min_pass_rate", "max_regression"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise DefinitionError(f"promotion policy of {self.agent!r}: {name} is 0 to 1")

    def describe(self) -> dict[str, Any]:
        return {
            "datasets": list(self.datasets),
            "min_pass_rate": self.min_pass_rate,
            "max_regression": self.max_regression,
            "none_of_clean": self.none_of_clean,
            "recovery": self.recovery,
        }


def default_version(
    versions: Sequence[AgentDefinition],
    policy: PromotionPolicy | None,
    promoted: Callable[[], Sequence[str]],
) -> AgentDefinition:
    """The version a new turn that names none gets. ``versions``: the agent's declared
    versions, oldest first (not empty); ``promoted``: the tenant's accepted promotions'
    versions, newest first (read only for a gated agent)."""
    if policy is None:
        return versions[-1]
    declared = {v.version: v for v in versions}
    for version in promoted():
        if version in declared:
            return declared[version]
    return versions[0]
