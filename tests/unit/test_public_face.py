"""``from turnkeep import …``: the names the README and docs teach are the runtime's and
the client's own objects, imported on first use, so a client-only install imports the
package and its client, and is told what to install for the authoring names. The face
holds all an agents module and its tests use (issue 38; tests/unit/test_agents_modules.py
checks they use nothing else): the authoring API, what a scripted or custom model is
asked and answers, the scripted model, a provider's registration, errors and price."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

import turnkeep
from turnkeep.client import ApiError, AsyncClient, Client
from turnkeep.runtime import errors, messages, pricing, processors, signals
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.promotion import PromotionPolicy
from turnkeep.runtime.agents.tools import Effect, ToolContext, ask_tool, tool
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.delegation import Specialist
from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.memory import RECALL_HEADER, MemoryScope
from turnkeep.runtime.model_policy import Fallback
from turnkeep.runtime.providers import base, demo_model, registry


def test_the_taught_names_are_the_runtime_and_client_objects():
    from turnkeep import Agent
    from turnkeep import AsyncClient as TkAsyncClient
    from turnkeep import Client as TkClient
    from turnkeep import Effect as TkEffect
    from turnkeep import Limits as TkLimits
    from turnkeep import Specialist as TkSpecialist
    from turnkeep import tool as tk_tool

    assert Agent is AgentDefinition
    assert (TkEffect, TkLimits, TkSpecialist, tk_tool) == (Effect, Limits, Specialist, tool)
    assert (TkClient, TkAsyncClient) == (Client, AsyncClient)
    assert turnkeep.ToolContext is ToolContext and turnkeep.ask_tool is ask_tool
    assert turnkeep.MemoryScope is MemoryScope and turnkeep.Fallback is Fallback
    # the client's error and the server's root are two classes, one name each
    assert turnkeep.ApiError is ApiError and turnkeep.TurnkeepError is TurnkeepError
    assert not issubclass(ApiError, TurnkeepError)
    assert set(turnkeep.__all__) <= set(dir(turnkeep))


def test_what_a_model_is_asked_and_answers_and_the_scripted_model_are_the_runtime_objects():
    from turnkeep import (
        DemoProvider,
        Message,
        ModelRequest,
        ModelResponse,
        Role,
        ToolCall,
        ToolSpec,
        Usage,
        demo_script,
    )

    assert (ModelRequest, ModelResponse, Message) == (
        messages.ModelRequest,
        messages.ModelResponse,
        messages.Message,
    )
    assert (Role, ToolCall, ToolSpec, Usage) == (
        messages.Role,
        messages.ToolCall,
        messages.ToolSpec,
        messages.Usage,
    )
    assert demo_script is demo_model.demo_script and DemoProvider is demo_model.DemoProvider


def test_a_custom_model_and_the_helpers_an_agent_uses_are_the_runtime_objects():
    assert turnkeep.register_provider is registry.register_provider
    assert (turnkeep.Provider, turnkeep.DeltaSink, turnkeep.StopCheck) == (
        base.Provider,
        base.DeltaSink,
        base.StopCheck,
    )
    assert turnkeep.ModelCallCancelled is signals.ModelCallCancelled
    for name in ("ModelError", "TransientModelError", "PermanentModelError", "ContextOverflow"):
        assert getattr(turnkeep, name) is getattr(errors, name), name
    assert (turnkeep.Price, turnkeep.register_price) == (pricing.Price, pricing.register_price)
    # memory, promotion and an agent's processors
    assert turnkeep.RECALL_HEADER is RECALL_HEADER and turnkeep.PromotionPolicy is PromotionPolicy
    for name in ("Processor", "input_bounds", "injection_signals", "moderation", "secret_signals"):
        assert getattr(turnkeep, name) is getattr(processors, name), name


def test_every_name_is_exported_once_and_resolves():
    names = [*turnkeep._CLIENT, *turnkeep._AUTHORING]
    assert len(names) == len(set(names)) and set(turnkeep.__all__) == set(names)
    for name in names:
        module, attribute = {**turnkeep._CLIENT, **turnkeep._AUTHORING}[name]
        assert getattr(turnkeep, name) is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = turnkeep.Nope


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )


def test_import_turnkeep_imports_neither_the_runtime_nor_the_client():
    out = _run(
        """
        import sys, turnkeep
        print(sorted(m for m in sys.modules if m.startswith(("runtime", "turnkeep."))))
        from turnkeep import Client
        print(any(m.startswith("turnkeep.runtime") for m in sys.modules))
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "False"]


def test_without_the_server_extra_the_client_imports_and_an_authoring_name_says_why():
    out = _run(
        """
        import sys

        class ClientInstall:  # as if the server extra's modules were not installed
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in ("pydantic_settings", "celery", "psycopg"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        sys.meta_path.insert(0, ClientInstall())
        from turnkeep import AsyncClient, Client
        import turnkeep.cli
        try:
            from turnkeep import Agent
        except ImportError as exc:
            print(exc)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "turnkeep.Agent (the agent-authoring API) needs the server "
        "(pydantic_settings not installed): pip install turnkeep-server"
    )


def test_without_the_server_extra_every_authoring_name_imports_or_says_why():
    """What a scripted model is asked and answers needs no server library; each name
    that does says so, as ``Agent`` does."""
    out = _run(
        """
        import sys

        class ClientInstall:  # as if the server extra's modules were not installed
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in ("pydantic_settings", "celery", "psycopg"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        sys.meta_path.insert(0, ClientInstall())
        import turnkeep
        for name in sorted(turnkeep._AUTHORING):
            try:
                getattr(turnkeep, name)
            except ImportError as exc:
                said = f"turnkeep.{name} (the agent-authoring API) needs the server"
                assert str(exc).startswith(said), (name, exc)
        print("each imports or says why")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "each imports or says why"
