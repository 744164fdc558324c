"""What a turn does when the worker holding its lane does not run its definition as
it stands: the rules of a deploy (docs/deploy.md, "Rolling deploys and agent
versions"), decided from the worker's registry and what the live workers serve.

A worker that serves the turn's definition runs it, and moves it to the newest
version of its agent at the next safe point when the turn's policy says ``upgrade``
(or an operator asked). One that does not hands the turn to a live worker that
does; with none left, an ``upgrade`` turn moves to the newest version served here,
a ``pinned`` one is held until a worker serving it comes back (or an operator
upgrades it), and a turn whose agent nobody declares any more fails at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from turnkeep.runtime.agents.definition import AgentDefinition, DeployPolicy
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.states import ErrorCode

__all__ = ["Move", "MoveReason", "Route", "Routing", "move_at_safe_point", "route"]


class MoveReason(StrEnum):
    """Why a turn moved to another definition (``turn.definition_changed``'s reason)."""

    #: its policy is ``upgrade`` and a newer version of its agent is deployed
    NEWER_VERSION = "newer_version"
    #: an operator asked (``POST .../upgrade``)
    REQUESTED = "requested"
    #: no live worker serves its definition any more (a build dropped it, a rollback)
    NOT_SERVED = "not_served"


@dataclass(frozen=True)
class Move:
    """The definition a turn moves to, and why."""

    target: AgentDefinition
    reason: MoveReason


class Route(StrEnum):
    """What the lane does with a head whose definition is not served here."""

    #: hand the session to the queue of the workers that serve the definition
    HAND_ON = "hand_on"
    #: start it here and move it to the newest version of its agent first
    MOVE = "move"
    #: wait, visibly, for a worker that serves the definition
    HOLD = "hold"
    #: fail it at once (``code``): nothing can ever run it
    FAIL = "fail"


@dataclass(frozen=True)
class Routing:
    route: Route
    move: Move | None = None
    code: ErrorCode | None = None
    reason: str = ""


def move_at_safe_point(
    registry: AgentRegistry,
    served: AgentDefinition,
    *,
    on_deploy: str,
    upgrade_requested: bool,
) -> Move | None:
    """For a turn whose definition ``served`` this worker runs: the newer version it
    moves to before its next model call, if any."""
    latest = registry.get(served.name)
    if latest is served:  # (the registry holds one definition per hash)
        return None
    if not latest.accepts_from(served.version):
        return None  # the newest version refuses it: it finishes where it is
    if upgrade_requested:
        return Move(latest, MoveReason.REQUESTED)
    if on_deploy == DeployPolicy.UPGRADE.value and registry.policy(served.name) is None:
        # (a gated agent's turns stay where they are: a newer version becomes its
        # default once promoted, not once declared: runtime/evaluation/gate.py)
        return Move(latest, MoveReason.NEWER_VERSION)
    return None


def route(
    registry: AgentRegistry,
    *,
    agent_name: str,
    agent_hash: str,
    agent_version: str,
    on_deploy: str,
    upgrade_requested: bool,
    live_hashes: set[str],
    live_names: set[str],
) -> Routing:
    """For a runnable turn whose definition this worker does not serve."""
    if agent_hash in live_hashes:
        return Routing(Route.HAND_ON, reason="a live worker serves the turn's definition")
    versions = registry.versions(agent_name)
    if versions and (upgrade_requested or on_deploy == DeployPolicy.UPGRADE.value):
        latest = versions[-1]
        if not latest.accepts_from(agent_version):
            return Routing(
                Route.FAIL,
                code=ErrorCode.AGENT_CHANGED,
                reason=(
                    f"no live worker serves version {agent_version!r} of agent "
                    f"{agent_name!r}, and its version {latest.version!r} does not accept "
                    "its turns (upgrades_from)"
                ),
            )
        reason = MoveReason.REQUESTED if upgrade_requested else MoveReason.NOT_SERVED
        return Routing(Route.MOVE, move=Move(latest, reason))
    if versions or agent_name in live_names:
        return Routing(
            Route.HOLD,
            reason=f"no live worker serves version {agent_version!r} of agent {agent_name!r}",
        )
    return Routing(
        Route.FAIL,
        code=ErrorCode.AGENT_REMOVED,
        reason=f"no live worker declares agent {agent_name!r} any more",
    )
