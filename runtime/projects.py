"""What a project changes of an agent for its sessions' turns: its override.

A project (api/service/projects.py, the ``projects`` table) holds ``overrides``::

    {"agents": {"<agent name>": {"instructions": "...", "limits": {"max_model_calls": 5}}}}

Each agent's entry is optional, and so is each of its two parts: ``instructions``
replace the agent's own; each of ``limits`` (the ``Limits`` fields) lowers the agent's
bound, never raises it (``check`` refuses a higher value when the override is written,
and ``apply`` takes the lower of the two again when it runs, so an agent whose own
limit was lowered by a later deploy is never raised by an old override).

At admission the override for the turn's agent is copied into the turn's input as
``input["project"] = pinned(...)`` and covered by its input hash (``project_hash``,
runtime/admission.py): the turn runs with the override it was admitted with, whatever
the project says later.
A turn without a project has no ``project`` key and hashes exactly as before.

Pure: no I/O, nothing of the API or the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.budget import Limits, effective_limits
from turnkeep.runtime.hashing import sha256_hex

#: the longest instructions an override may hold (characters)
MAX_INSTRUCTIONS = 32_768
#: the bounds an override may lower, as ``Limits`` names them (not the cost bound,
#: which a turn's budget sets)
LIMIT_FIELDS = tuple(f.name for f in fields(Limits) if f.name != "max_cost_usd")


def override_for(overrides: Mapping[str, Any] | None, agent_name: str) -> dict[str, Any]:
    """The project's override of ``agent_name`` (``{}``: none)."""
    agents = (overrides or {}).get("agents") or {}
    entry = agents.get(agent_name) if isinstance(agents, Mapping) else None
    return dict(entry) if isinstance(entry, Mapping) else {}


def pinned(project_id: str, override: Mapping[str, Any]) -> dict[str, Any]:
    """What a turn's input holds of its project: the id, the agent's override as it
    was at admission, and that override's hash."""
    return {"id": project_id, "override": dict(override), "override_hash": sha256_hex(override)}


def check(
    overrides: Mapping[str, Any], agents: Mapping[str, AgentDefinition]
) -> list[tuple[str, str]]:
    """What ``overrides`` (already of the right shape: api/service/projects.py's models) asks
    for that it may not, as (location below ``overrides``, message): an agent that is
    not declared, or a limit above the agent's own."""
    problems: list[tuple[str, str]] = []
    for name, entry in (overrides.get("agents") or {}).items():
        agent = agents.get(name)
        if agent is None:
            problems.append((f"agents.{name}", "no agent of that name is declared"))
            continue
        own = agent.limits.to_json()
        for field, value in ((entry or {}).get("limits") or {}).items():
            if field in own and value > own[field]:
                problems.append(
                    (
                        f"agents.{name}.limits.{field}",
                        f"may only lower the agent's limit ({own[field]})",
                    )
                )
    return problems


def _lowering(limits: Any) -> dict[str, int | float]:
    """The well-formed bounds of a pinned override's ``limits``: positive integers of
    the ``Limits`` fields (``max_seconds`` may be a float); anything else is ignored."""
    if not isinstance(limits, Mapping):
        return {}
    lower: dict[str, int | float] = {}
    for name, value in limits.items():
        kinds = (int, float) if name == "max_seconds" else (int,)
        well_formed = isinstance(value, kinds) and not isinstance(value, bool)
        if name in LIMIT_FIELDS and well_formed and value > 0:
            lower[name] = value
    return lower


def apply(agent: AgentDefinition, turn_input: Mapping[str, Any] | None) -> AgentDefinition:
    """``agent`` as a turn pinned to a project runs it: its instructions replaced and its
    limits lowered by the override in ``turn_input["project"]``. The agent itself
    when the turn has no project or the override changes nothing."""
    project = TurnInput.from_json(turn_input).project
    override = project.get("override") if isinstance(project, Mapping) else None
    if not isinstance(override, Mapping) or not override:
        return agent
    changes: dict[str, Any] = {}
    instructions = override.get("instructions")
    if isinstance(instructions, str) and instructions:
        changes["instructions"] = instructions
    lower = _lowering(override.get("limits"))
    if lower:
        changes["limits"] = effective_limits(agent.limits, lower)
    return replace(agent, **changes) if changes else agent
