"""turnkeep, the public face: what an agents module and a client program import.

    from turnkeep import Agent, Effect, Limits, Specialist, tool    # declare agents
    from turnkeep import ModelResponse, ToolCall, demo_script       # script a model
    from turnkeep import AsyncClient, Client                        # call the API

An agents module (``TURNKEEP_AGENTS``) and its tests need nothing else (docs/agents.md):
the authoring API (``Agent``, ``tool``, ``ask_tool``, ``wait_tool``, ``followup_tool``,
the declarations an agent takes: ``Limits``, ``Specialist``, ``MemoryScope``,
``Fallback``, ``PromotionPolicy``, the processors); what a model is asked and answers
(``ModelRequest``, ``ModelResponse``, ``Message``, ``Role``, ``ToolCall``, ``ToolSpec``,
``Usage``); the scripted model for tests and demos (``demo_script``, run by
``DemoProvider``, ``provider="demo"``); and what a custom provider needs
(``register_provider``, ``Provider``, ``DeltaSink``, ``StopCheck``, the model errors it
raises, ``ModelCallCancelled``, a model's ``Price``). tests/unit/test_agents_modules.py
checks that every agents module of the repository imports nothing else of ours.

Two errors, one per side (docs/glossary.md): ``ApiError`` is a problem as a client
receives it (its ``code`` and ``status`` as the API answered); ``TurnkeepError`` is
the root of the server's one error tree (runtime/errors.py), the class a tool or other
code running inside turnkeep catches, so it comes with the authoring names.

The authoring names are the runtime's (the package runtime/ and its agents/), under the
names taught here (``Agent`` is ``AgentDefinition``); the client is
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
        Processor,
        PromotionPolicy,
        Specialist,
        ToolContext,
        UnknownOutcomePolicy,
        ask_tool,
        followup_tool,
        tool,
        wait_tool,
    )
    from turnkeep.runtime.errors import (
        ContextOverflow,
        ModelError,
        PermanentModelError,
        TransientModelError,
        TurnkeepError,
    )
    from turnkeep.runtime.memory import RECALL_HEADER
    from turnkeep.runtime.messages import (
        Message,
        ModelRequest,
        ModelResponse,
        Role,
        ToolCall,
        ToolSpec,
        Usage,
    )
    from turnkeep.runtime.pricing import Price, register_price
    from turnkeep.runtime.processors import (
        injection_signals,
        input_bounds,
        moderation,
        secret_signals,
    )
    from turnkeep.runtime.providers.base import DeltaSink, Provider, StopCheck
    from turnkeep.runtime.providers.demo_model import DemoProvider, demo_script
    from turnkeep.runtime.providers.registry import register_provider
    from turnkeep.runtime.signals import ModelCallCancelled

#: what the client install holds: name -> (module, attribute)
_CLIENT = {
    "Client": ("turnkeep.client", "Client"),
    "AsyncClient": ("turnkeep.client", "AsyncClient"),
    "ApiError": ("turnkeep.client", "ApiError"),
}
_AGENTS = "turnkeep.runtime.agents"
_MESSAGES = "turnkeep.runtime.messages"
_ERRORS = "turnkeep.runtime.errors"
_PROCESSORS = "turnkeep.runtime.processors"
#: the agent-authoring API, which needs the server extra: what an agents module and its
#: tests import
_AUTHORING = {
    # declaring agents and their tools
    "Agent": (_AGENTS, "Agent"),
    "tool": (_AGENTS, "tool"),
    "ask_tool": (_AGENTS, "ask_tool"),
    "wait_tool": (_AGENTS, "wait_tool"),
    "followup_tool": (_AGENTS, "followup_tool"),
    "Effect": (_AGENTS, "Effect"),
    "Limits": (_AGENTS, "Limits"),
    "ToolContext": (_AGENTS, "ToolContext"),
    "ExternalAuthRequired": (_AGENTS, "ExternalAuthRequired"),
    "UnknownOutcomePolicy": (_AGENTS, "UnknownOutcomePolicy"),
    "Specialist": (_AGENTS, "Specialist"),
    "MemoryScope": (_AGENTS, "MemoryScope"),
    "Fallback": (_AGENTS, "Fallback"),
    "PromotionPolicy": (_AGENTS, "PromotionPolicy"),
    "TurnkeepError": (_ERRORS, "TurnkeepError"),
    # the first line of the recall message a model with memory is shown (docs/memory.md)
    "RECALL_HEADER": ("turnkeep.runtime.memory", "RECALL_HEADER"),
    # an agent's processors (docs/models.md "Processors")
    "Processor": (_AGENTS, "Processor"),
    "input_bounds": (_PROCESSORS, "input_bounds"),
    "injection_signals": (_PROCESSORS, "injection_signals"),
    "moderation": (_PROCESSORS, "moderation"),
    "secret_signals": (_PROCESSORS, "secret_signals"),
    # what a model is asked and answers
    "ModelRequest": (_MESSAGES, "ModelRequest"),
    "ModelResponse": (_MESSAGES, "ModelResponse"),
    "Message": (_MESSAGES, "Message"),
    "Role": (_MESSAGES, "Role"),
    "ToolCall": (_MESSAGES, "ToolCall"),
    "ToolSpec": (_MESSAGES, "ToolSpec"),
    "Usage": (_MESSAGES, "Usage"),
    # the scripted model (provider "demo"): a script per model id
    "demo_script": ("turnkeep.runtime.providers.demo_model", "demo_script"),
    "DemoProvider": ("turnkeep.runtime.providers.demo_model", "DemoProvider"),
    # a custom provider: its protocol, its registration, what it raises, its price
    "Provider": ("turnkeep.runtime.providers.base", "Provider"),
    "DeltaSink": ("turnkeep.runtime.providers.base", "DeltaSink"),
    "StopCheck": ("turnkeep.runtime.providers.base", "StopCheck"),
    "register_provider": ("turnkeep.runtime.providers.registry", "register_provider"),
    "ModelCallCancelled": ("turnkeep.runtime.signals", "ModelCallCancelled"),
    "ModelError": (_ERRORS, "ModelError"),
    "TransientModelError": (_ERRORS, "TransientModelError"),
    "PermanentModelError": (_ERRORS, "PermanentModelError"),
    "ContextOverflow": (_ERRORS, "ContextOverflow"),
    "Price": ("turnkeep.runtime.pricing", "Price"),
    "register_price": ("turnkeep.runtime.pricing", "register_price"),
}

__all__ = [
    "RECALL_HEADER",
    "Agent",
    "ApiError",
    "AsyncClient",
    "Client",
    "ContextOverflow",
    "DeltaSink",
    "DemoProvider",
    "Effect",
    "ExternalAuthRequired",
    "Fallback",
    "Limits",
    "MemoryScope",
    "Message",
    "ModelCallCancelled",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "PermanentModelError",
    "Price",
    "Processor",
    "PromotionPolicy",
    "Provider",
    "Role",
    "Specialist",
    "StopCheck",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "TransientModelError",
    "TurnkeepError",
    "UnknownOutcomePolicy",
    "Usage",
    "ask_tool",
    "demo_script",
    "followup_tool",
    "injection_signals",
    "input_bounds",
    "moderation",
    "register_price",
    "register_provider",
    "secret_signals",
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
