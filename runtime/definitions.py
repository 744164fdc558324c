"""Moved: the agent-authoring API is the package ``runtime.agents`` (tools.py,
definition.py, registry.py), taught as ``from turnkeep import Agent, tool, …``; ``Limits``
is runtime/budget.py's. This module re-exports the names it had for one release."""

from __future__ import annotations

import warnings

from runtime.agents.definition import AgentDefinition, UnknownOutcomePolicy
from runtime.agents.registry import AgentRegistry, load_agents
from runtime.agents.tools import (
    STEP_NAME_MAX,
    ApprovalPolicy,
    Effect,
    StepLog,
    StepNameInvalid,
    StepNameReused,
    StepResultNotJSON,
    ToolContext,
    ToolDefinition,
    ToolFn,
    ToolStepError,
    as_recorded,
    ask_tool,
    tool,
)
from runtime.budget import Limits
from runtime.delegation import Specialist
from runtime.inputs import APPROVAL_SCHEMA, ExternalAuthRequired
from runtime.memory import MemoryScope
from runtime.model_policy import Fallback
from runtime.processors import Processor

__all__ = [
    "APPROVAL_SCHEMA",
    "STEP_NAME_MAX",
    "AgentDefinition",
    "AgentRegistry",
    "ApprovalPolicy",
    "Effect",
    "ExternalAuthRequired",
    "Fallback",
    "Limits",
    "MemoryScope",
    "Processor",
    "Specialist",
    "StepLog",
    "StepNameInvalid",
    "StepNameReused",
    "StepResultNotJSON",
    "ToolContext",
    "ToolDefinition",
    "ToolFn",
    "ToolStepError",
    "UnknownOutcomePolicy",
    "as_recorded",
    "ask_tool",
    "load_agents",
    "tool",
]

warnings.warn(
    "runtime.definitions moved to the package runtime.agents (from turnkeep import Agent, "
    "tool, Effect, Limits, …); this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
