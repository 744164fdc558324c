"""The module paths the README and docs teach import, silently, with the names they are
taught for; the authoring API is one set of objects; and a worker or an API started
with the default agents module (``turnkeep.runtime.demo``) warns nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import turnkeep.runtime.agents

#: taught names of modules: (module, names)
TAUGHT = [
    ("turnkeep.runtime.delegation", ["Specialist"]),
    ("turnkeep.runtime.memory", ["MemoryScope"]),
    ("turnkeep.runtime.model_policy", ["Fallback"]),
    ("turnkeep.runtime.messages", ["public_message", "public_event_data"]),
    ("turnkeep.runtime.pricing", ["cost", "PRICES"]),
    ("turnkeep.runtime.projects", ["apply"]),
    ("turnkeep.runtime.webhooks", ["verify"]),
    ("turnkeep.runtime.processors", ["Processor", "input_bounds", "moderation"]),
    ("turnkeep.runtime.providers.anthropic", ["with_cache_control"]),
    ("turnkeep.runtime.demo", ["AGENTS"]),
]


def test_the_taught_modules_import_without_a_warning() -> None:
    # in a fresh interpreter: importing them again here would make second classes
    code = textwrap.dedent(
        f"""
        import importlib, warnings
        warnings.simplefilter("error")
        for module, names in {TAUGHT!r}:
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
    from turnkeep.runtime.delegation import Specialist
    from turnkeep.runtime.memory import MemoryScope
    from turnkeep.runtime.model_policy import Fallback

    assert turnkeep.runtime.agents.Specialist is Specialist
    assert (
        turnkeep.runtime.agents.MemoryScope is MemoryScope
        and turnkeep.runtime.agents.Fallback is Fallback
    )
    assert turnkeep.runtime.agents.Agent is turnkeep.runtime.agents.AgentDefinition


def test_the_processes_and_the_default_agents_module_warn_nothing() -> None:
    """The worker's and the API's modules and ``turnkeep.runtime.demo`` (TURNKEEP_AGENTS'
    default), loaded the way a worker loads them, raise no ``DeprecationWarning`` of
    ours."""
    code = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("error", DeprecationWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="(celery|kombu)")
        from turnkeep.runtime.agents.registry import load_agents
        load_agents("turnkeep.runtime.demo")
        import turnkeep.worker.app, turnkeep.api.app, turnkeep.recovery.scan, turnkeep.cli
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
