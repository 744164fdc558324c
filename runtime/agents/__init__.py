"""The agent-authoring API: what an agents module declares (``TURNKEEP_AGENTS``).

    from turnkeep import Agent, Effect, Limits, Specialist, tool   # as the README teaches
    from turnkeep.runtime.agents import AgentDefinition, Effect, tool       # the same objects

Modules: tools.py (``@tool``, ``ask_tool``, ``Effect``, the ``ToolContext`` a tool
receives), definition.py (``AgentDefinition``, hashed and pinned at admission),
registry.py (an agents module's agents, ``load_agents``), promotion.py (a gated
agent's ``PromotionPolicy``) and remember.py (the tool an
agent with memory is given). The declarations they take come from the runtime's own
modules: ``Limits`` (runtime/budget.py), ``Specialist`` (runtime/delegation.py),
``MemoryScope`` (runtime/memory.py), ``Fallback`` (runtime/model_policy.py),
``Processor`` (runtime/processors.py), ``ExternalAuthRequired`` (runtime/inputs.py).
"""

from __future__ import annotations

from turnkeep.runtime.agents.definition import AgentDefinition, UnknownOutcomePolicy
from turnkeep.runtime.agents.promotion import PromotionPolicy
from turnkeep.runtime.agents.registry import AgentRegistry, load_agents
from turnkeep.runtime.agents.tools import (
    ApprovalPolicy,
    Effect,
    StepLog,
    StepNameInvalid,
    StepNameReused,
    StepResultNotJSON,
    ToolContext,
    ToolDefinition,
    ToolStepError,
    as_recorded,
    ask_tool,
    followup_tool,
    tool,
    wait_tool,
)
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.delegation import Specialist
from turnkeep.runtime.inputs import ExternalAuthRequired
from turnkeep.runtime.memory import MemoryScope
from turnkeep.runtime.model_policy import Fallback
from turnkeep.runtime.processors import Processor

#: the name the README teaches (``from turnkeep import Agent``)
Agent = AgentDefinition

__all__ = [
    "Agent",
    "AgentDefinition",
    "AgentRegistry",
    "ApprovalPolicy",
    "Effect",
    "ExternalAuthRequired",
    "Fallback",
    "Limits",
    "MemoryScope",
    "Processor",
    "PromotionPolicy",
    "Specialist",
    "StepLog",
    "StepNameInvalid",
    "StepNameReused",
    "StepResultNotJSON",
    "ToolContext",
    "ToolDefinition",
    "ToolStepError",
    "UnknownOutcomePolicy",
    "as_recorded",
    "ask_tool",
    "followup_tool",
    "load_agents",
    "tool",
    "wait_tool",
]
