"""An agent as an agents module declares it: ``AgentDefinition`` (taught as
``turnkeep.Agent``), everything that decides how its turns run.

Its canonical-JSON SHA-256 (``definition_hash``) is pinned on every turn at admission,
so a worker never runs a turn under a definition it was not admitted with: a field
added here enters ``describe`` only when it differs from its default, so that the
agents declared before it keep their hashes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from turnkeep.runtime.agents.tools import ToolDefinition, check_answered_by
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.delegation import Specialist
from turnkeep.runtime.errors import DefinitionError
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.inputs import STARTER
from turnkeep.runtime.memory import VERSION as MEMORY_VERSION
from turnkeep.runtime.memory import MemoryScope
from turnkeep.runtime.model_policy import Fallback
from turnkeep.runtime.processors import Processor

__all__ = ["AgentDefinition", "DeployPolicy", "UnknownOutcomePolicy"]


class DeployPolicy(StrEnum):
    """What a turn admitted under one version does once a newer version of its agent
    is deployed (docs/deploy.md, "Rolling deploys and agent versions")."""

    #: at the next safe point (before a model call) move to the newest version
    UPGRADE = "upgrade"
    #: finish on the definition the turn was admitted with, on a worker serving it
    PINNED = "pinned"


class UnknownOutcomePolicy(StrEnum):
    """What resume does with an effectful tool call that has no committed result."""

    #: commit a synthetic error result saying the outcome is unknown; the model decides
    INTERRUPT = "interrupt"
    #: park the turn in needs_reconciliation until someone says what happened
    RECONCILE = "reconcile"


@dataclass(frozen=True)
class AgentDefinition:
    """Everything that decides how a turn runs; hashed and pinned at admission."""

    name: str
    version: str
    provider: str
    model: str
    instructions: str
    tools: tuple[ToolDefinition, ...] = ()
    limits: Limits = Limits()  # noqa: RUF009 (frozen, so one shared default is safe)
    output_schema: dict[str, Any] | None = None
    unknown_outcome: UnknownOutcomePolicy = UnknownOutcomePolicy.INTERRUPT
    model_options: dict[str, Any] = field(default_factory=dict)
    #: a turn that reaches a bound asks for a ``budget_extension`` instead of failing
    budget_extension: bool = False
    #: who answers the agent's own requests (reconciliation, budget extension)
    answered_by: str = STARTER
    #: how long a reconciliation or budget-extension request stays open
    requests_expire_in: float = 7 * 86400.0
    #: the model's context ceiling in tokens, and what of it a reply may need: the
    #: request is compacted before it is sent when its estimate passes the difference
    context_window: int = 128_000
    reserve_output: int = 4_096
    #: agents this one may hand tasks to, each offered as a ``delegate_<name>`` tool
    #: (runtime/delegation.py)
    specialists: tuple[Specialist, ...] = ()
    #: answers that fail the output schema the model is told about and may correct
    #: before the turn fails ``output_invalid``
    output_retries: int = 1
    #: models a call may fall back to, in order, and when (runtime/model_policy.py)
    fallbacks: tuple[Fallback, ...] = ()
    #: further model names a provider may report as having answered
    allowed_models: tuple[str, ...] = ()
    #: ordered checks of the input, requests, outputs and errors (runtime/processors.py)
    processors: tuple[Processor, ...] = ()
    #: durable memory (runtime/memory.py, docs/memory.md): whose facts the agent keeps
    #: through its ``remember`` tool and is shown in later turns; None: no memory
    memory: MemoryScope | None = None
    #: what this version's in-flight turns do when a newer version is deployed
    on_deploy: DeployPolicy = DeployPolicy.UPGRADE
    #: the versions whose turns may move to this one (None: any older version)
    upgrades_from: tuple[str, ...] | None = None
    #: how many read or idempotent calls of one model answer run side by side
    max_parallel_tools: int = 8
    #: at most this many of the agent's turns run at once in a tenant; the rest wait
    #: queued (docs/flow-control.md). Not in the definition's hash: how many run at
    #: once is the deployment's say, not what a turn does
    max_running: int | None = None

    def __post_init__(self) -> None:
        check_answered_by(self.answered_by)
        names = [t.name for t in self.tools]
        for sp in self.specialists:
            if sp.tool_name in names:
                raise DefinitionError(f"agent {self.name!r}: {sp.tool_name} is also a tool")
            names.append(sp.tool_name)
        if self.memory is not None:
            try:
                object.__setattr__(self, "memory", MemoryScope(self.memory))
            except ValueError:
                raise DefinitionError(
                    f"agent {self.name!r}: memory is 'subject', 'project' or None, "
                    f"not {self.memory!r}"
                ) from None
        try:
            object.__setattr__(self, "on_deploy", DeployPolicy(self.on_deploy))
        except ValueError:
            raise DefinitionError(
                f"agent {self.name!r}: on_deploy is 'upgrade' or 'pinned', not {self.on_deploy!r}"
            ) from None
        if self.upgrades_from is not None:
            object.__setattr__(self, "upgrades_from", tuple(str(v) for v in self.upgrades_from))
        if self.max_parallel_tools < 1:
            raise DefinitionError(f"agent {self.name!r}: max_parallel_tools >= 1 is required")
        if self.max_running is not None and self.max_running < 1:
            raise DefinitionError(f"agent {self.name!r}: max_running >= 1 (or None) is required")
        if self.output_retries < 0:
            raise DefinitionError(f"agent {self.name!r}: output_retries >= 0 is required")
        if not 0 < self.reserve_output < self.context_window:
            raise DefinitionError(
                f"agent {self.name!r}: 0 < reserve_output < context_window is required"
            )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "model": {"provider": self.provider, "id": self.model},
            "instructions": self.instructions,
            "tools": [t.describe() for t in self.tools],
            "limits": self.limits.to_json(),
            "output_schema": self.output_schema,
            "unknown_outcome": self.unknown_outcome.value,
            "model_options": self.model_options,
            "budget_extension": self.budget_extension,
            "answered_by": self.answered_by,
            "requests_expire_in": self.requests_expire_in,
            "context": {"window": self.context_window, "reserve_output": self.reserve_output},
            # only when there are some: the hashes of agents without stay as they were
            **(
                {"specialists": [s.describe() for s in self.specialists]}
                if self.specialists
                else {}
            ),
            # only when not the default, for the same reason
            **({"output_retries": self.output_retries} if self.output_retries != 1 else {}),
            **({"fallbacks": [f.describe() for f in self.fallbacks]} if self.fallbacks else {}),
            **({"allowed_models": sorted(self.allowed_models)} if self.allowed_models else {}),
            **({"processors": [p.describe() for p in self.processors]} if self.processors else {}),
            **(
                {"memory": {"scope": self.memory.value, "version": MEMORY_VERSION}}
                if self.memory is not None
                else {}
            ),
            # only when not the default, for the same reason
            **(
                {"on_deploy": self.on_deploy.value}
                if self.on_deploy != DeployPolicy.UPGRADE
                else {}
            ),
            **(
                {"upgrades_from": list(self.upgrades_from)}
                if self.upgrades_from is not None
                else {}
            ),
            **(
                {"max_parallel_tools": self.max_parallel_tools}
                if self.max_parallel_tools != 8
                else {}
            ),
        }

    @property
    def definition_hash(self) -> str:
        return sha256_hex(self.describe())

    def accepts_from(self, version: str) -> bool:
        """Whether a turn admitted under ``version`` may move to this definition."""
        return self.upgrades_from is None or version in self.upgrades_from

    def tool(self, name: str) -> ToolDefinition | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def specialist(self, tool_name: str) -> Specialist | None:
        """The specialist a ``delegate_<name>`` tool name stands for."""
        for sp in self.specialists:
            if sp.tool_name == tool_name:
                return sp
        return None
