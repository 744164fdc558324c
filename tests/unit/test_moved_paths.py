"""Every import path the README and docs taught before the reshape (issue 22) still
works: a module that moved warns ``DeprecationWarning`` for one release and hands out
the very objects of its new home; a module that stayed imports silently. Nothing of
ours imports an old path, so a worker or an API started with the default agents
module (``runtime.demo``) warns nothing."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
from types import ModuleType

import pytest

import runtime.agents
from runtime import window
from runtime.obs import faults, logs, redact, tracing
from runtime.providers import demo_model, structured

#: old module -> the module it now is (the old name is an alias of the very module)
MOVED_MODULES: dict[str, ModuleType] = {
    "runtime.logs": logs,
    "runtime.tracing": tracing,
    "runtime.redact": redact,
    "runtime.faults": faults,
    "runtime.demo_model": demo_model,
    "runtime.context": window,
    "runtime.providers.output": structured,
}

#: taught names of modules that did not move: (module, names)
STAYED = [
    ("runtime.delegation", ["Specialist"]),
    ("runtime.memory", ["MemoryScope"]),
    ("runtime.model_policy", ["Fallback"]),
    ("runtime.messages", ["public_message", "public_event_data"]),
    ("runtime.pricing", ["cost", "PRICES"]),
    ("runtime.projects", ["apply"]),
    ("runtime.webhooks", ["verify"]),
    ("runtime.processors", ["Processor", "input_bounds", "moderation"]),
    ("runtime.providers.anthropic", ["with_cache_control"]),
    ("runtime.demo", ["AGENTS"]),
]


def _import_old(name: str) -> ModuleType:
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match=re.escape(name) + " moved to "):
        return importlib.import_module(name)


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_a_moved_module_warns_and_is_the_new_module(old: str) -> None:
    assert _import_old(old) is MOVED_MODULES[old]


def test_runtime_definitions_warns_and_hands_out_the_authoring_api() -> None:
    definitions = _import_old("runtime.definitions")
    for name in definitions.__all__:
        new = getattr(runtime.agents, name, None)
        if new is None:  # not part of the authoring API: its own home's object
            from runtime import inputs
            from runtime.agents import tools

            new = getattr(tools, name, None) or getattr(inputs, name)
        assert getattr(definitions, name) is new, name
    # a definition written against the old path is the same agent, with the same hash
    from runtime.demo import AGENTS

    agent = AGENTS[0]
    again = definitions.AgentDefinition(
        name=agent.name,
        version=agent.version,
        provider=agent.provider,
        model=agent.model,
        instructions=agent.instructions,
        tools=agent.tools,
    )
    assert again.definition_hash == agent.definition_hash


def test_the_taught_modules_that_stayed_import_without_a_warning() -> None:
    # in a fresh interpreter: importing them again here would make second classes
    code = textwrap.dedent(
        f"""
        import importlib, warnings
        warnings.simplefilter("error")
        for module, names in {STAYED!r}:
            imported = importlib.import_module(module)
            missing = [n for n in names if not hasattr(imported, n)]
            assert not missing, (module, missing)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_authoring_api_is_one_set_of_objects() -> None:
    from runtime.delegation import Specialist
    from runtime.memory import MemoryScope
    from runtime.model_policy import Fallback

    assert runtime.agents.Specialist is Specialist
    assert runtime.agents.MemoryScope is MemoryScope and runtime.agents.Fallback is Fallback
    assert runtime.agents.Agent is runtime.agents.AgentDefinition


def test_the_processes_and_the_default_agents_module_import_no_old_path() -> None:
    """The worker's and the API's modules and ``runtime.demo`` (TURNKEEP_AGENTS'
    default), loaded the way a worker loads them, import none of the moved paths, so
    neither warns."""
    old = [*MOVED_MODULES, "runtime.definitions"]
    code = textwrap.dedent(
        f"""
        import sys, warnings
        warnings.simplefilter("error", DeprecationWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="(celery|kombu)")
        from runtime.agents.registry import load_agents
        load_agents("runtime.demo")
        import worker.app, api.app, recovery.scan, turnkeep.cli
        print(sorted(m for m in {old!r} if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
