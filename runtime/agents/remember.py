"""The ``remember`` tool an agent with memory is given (runtime/memory.py says what
memory is; docs/memory.md).

Declared here, beside the other tools, and not in runtime/memory.py: the agent's
definition names its memory's scope and version (runtime/memory.py), so that module
cannot hold a tool's definition without a circle. Its function cleans the fact and
hands it to the writer it is given (worker/memory.py ``write``): the runtime imports
nothing of the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnkeep.runtime.agents.tools import Effect, ToolContext, ToolDefinition
from turnkeep.runtime.memory import MAX_FACT_CHARS, TOOL_NAME, VERSION, MemoryScope, clean_fact

__all__ = ["PARAMETERS", "MemoryWriter", "memory_tools"]

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "fact": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_FACT_CHARS,
            "description": "One self-contained fact, in plain words.",
        }
    },
    "required": ["fact"],
    "additionalProperties": False,
}

_DESCRIPTION = {
    MemoryScope.SUBJECT: (
        "Remember a fact about the user for later conversations with them. "
        "Only facts worth keeping; never secrets."
    ),
    MemoryScope.PROJECT: (
        "Remember a fact about this project for later conversations in it. "
        "Only facts worth keeping; never secrets."
    ),
}


#: writes a cleaned fact for the call ``ctx`` under the scope; returns the tool's
#: result (worker/memory.py ``write``)
MemoryWriter = Callable[[MemoryScope, ToolContext, str], Any]


def memory_tools(scope: MemoryScope | str, write: MemoryWriter) -> tuple[ToolDefinition, ...]:
    """The tools of an agent with memory under ``scope``: ``remember`` (idempotent,
    never approved), whose function cleans the fact and hands it to ``write``."""
    scope = MemoryScope(scope)

    def remember(ctx: ToolContext, args: dict[str, Any]) -> Any:
        return write(scope, ctx, clean_fact(str(args["fact"])))

    return (
        ToolDefinition(
            name=TOOL_NAME,
            version=VERSION,
            description=_DESCRIPTION[scope],
            parameters=PARAMETERS,
            effect=Effect.IDEMPOTENT,
            fn=remember,
            approval="never",
            timeout=30.0,
        ),
    )
