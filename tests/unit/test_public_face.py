"""``from turnkeep import …``: the names the README and docs teach are the runtime's and
the client's own objects, imported on first use, so a client-only install imports the
package and its client, and is told what to install for the authoring names."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import turnkeep
from turnkeep.client import ApiError, AsyncClient, Client
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import Effect, ToolContext, ask_tool, tool
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.delegation import Specialist
from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.memory import MemoryScope
from turnkeep.runtime.model_policy import Fallback


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
        print("turnkeep.runtime.agents" in sys.modules)
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
