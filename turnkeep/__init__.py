"""turnkeep, the public face: what an agents module and a client program import.

    from turnkeep import Agent, Effect, Limits, Specialist, tool    # declare agents
    from turnkeep import AsyncClient, Client                        # call the API

Two errors, one per side (docs/glossary.md): ``ApiError`` is a problem as a client
receives it (its ``code`` and ``status`` as the API answered); ``TurnkeepError`` is
the root of the server's one error tree (runtime/errors.py), the class a tool or other
code running inside turnkeep catches, so it comes with the authoring names.

The authoring names are the runtime's (the package runtime/agents/), under the names
taught here (``Agent`` is ``AgentDefinition``); the client is
turnkeep/client/. Each name is imported on first use, so ``import turnkeep`` and the
client's names need only the client install (``pip install turnkeep``); the authoring
names need the server extra (the runtime reads its settings with pydantic-settings):
without it, importing one says so. The package also holds the ``turnkeep`` command
(turnkeep/cli/), the ACP agent (turnkeep/acp.py) and the dev and embedded servers;
it imports nothing of api/, worker/ or store/: it starts their processes or talks to
the API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnkeep.client import ApiError, AsyncClient, Client
    from turnkeep.runtime.agents import (
        Agent,
        Effect,
        ExternalAuthRequired,
        Fallback,
        Limits,
        MemoryScope,
        PromotionPolicy,
        Specialist,
        ToolContext,
        UnknownOutcomePolicy,
        ask_tool,
        followup_tool,
        tool,
        wait_tool,
    )
    from turnkeep.runtime.errors import TurnkeepError

#: what the client install holds: name -> (module, attribute)
_CLIENT = {
    "Client": ("turnkeep.client", "Client"),
    "AsyncClient": ("turnkeep.client", "AsyncClient"),
    "ApiError": ("turnkeep.client", "ApiError"),
}
#: the agent-authoring API, which needs the server extra
_AUTHORING = {
    "Agent": ("turnkeep.runtime.agents", "Agent"),
    "tool": ("turnkeep.runtime.agents", "tool"),
    "ask_tool": ("turnkeep.runtime.agents", "ask_tool"),
    "wait_tool": ("turnkeep.runtime.agents", "wait_tool"),
    "followup_tool": ("turnkeep.runtime.agents", "followup_tool"),
    "Effect": ("turnkeep.runtime.agents", "Effect"),
    "Limits": ("turnkeep.runtime.agents", "Limits"),
    "ToolContext": ("turnkeep.runtime.agents", "ToolContext"),
    "ExternalAuthRequired": ("turnkeep.runtime.agents", "ExternalAuthRequired"),
    "UnknownOutcomePolicy": ("turnkeep.runtime.agents", "UnknownOutcomePolicy"),
    "Specialist": ("turnkeep.runtime.agents", "Specialist"),
    "MemoryScope": ("turnkeep.runtime.agents", "MemoryScope"),
    "Fallback": ("turnkeep.runtime.agents", "Fallback"),
    "PromotionPolicy": ("turnkeep.runtime.agents", "PromotionPolicy"),
    "TurnkeepError": ("turnkeep.runtime.errors", "TurnkeepError"),
}

__all__ = [
    "Agent",
    "ApiError",
    "AsyncClient",
    "Client",
    "Effect",
    "ExternalAuthRequired",
    "Fallback",
    "Limits",
    "MemoryScope",
    "PromotionPolicy",
    "Specialist",
    "ToolContext",
    "TurnkeepError",
    "UnknownOutcomePolicy",
    "ask_tool",
    "followup_tool",
    "tool",
    "wait_tool",
]


def __getattr__(name: str) -> Any:
    where = _CLIENT.get(name) or _AUTHORING.get(name)
    if where is None:
        raise AttributeError(f"module 'turnkeep' has no attribute {name!r}")
    module_name, attribute = where
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if name not in _AUTHORING or missing in ("", "runtime", "turnkeep"):
            raise
        raise ImportError(
            f"turnkeep.{name} (the agent-authoring API) needs the server ({missing} "
            "not installed): pip install turnkeep-server",
            name=exc.name,
        ) from exc
    value = getattr(module, attribute)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
