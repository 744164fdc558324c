"""runtime/projects.py: a project's override of an agent, pinned in a turn's input
(hashed into it by runtime/admission.py's project_hash) and applied by the worker:
instructions replaced, limits only ever lowered."""

from __future__ import annotations

from typing import Any

import pytest

from turnkeep.runtime import projects
from turnkeep.runtime.admission import project_hash
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.hashing import sha256_hex

AGENT = AgentDefinition(
    name="helper",
    version="1",
    provider="demo",
    model="demo-1",
    instructions="Be brief.",
    limits=Limits(max_model_calls=8, max_tool_calls=10, max_seconds=60.0),
)


def _input(override: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
    if override is not None:
        body["project"] = projects.pinned("p1", override)
    return body


def test_a_turn_without_a_project_runs_the_agent_as_declared():
    assert projects.apply(AGENT, _input(None)) is AGENT
    assert projects.apply(AGENT, None) is AGENT
    assert projects.apply(AGENT, _input({})) is AGENT


def test_the_override_replaces_the_instructions_and_lowers_the_limits():
    override = {
        "instructions": "Answer in French.",
        "limits": {"max_model_calls": 3, "max_seconds": 12.5},
    }
    got = projects.apply(AGENT, _input(override))
    assert got.instructions == "Answer in French."
    assert got.limits == Limits(
        max_model_calls=3, max_tool_calls=10, max_seconds=12.5, max_iterations=20
    )
    # the rest is the agent's, and the declared agent is untouched (a copy)
    assert (got.name, got.version, got.model, got.tools) == (
        AGENT.name,
        AGENT.version,
        AGENT.model,
        AGENT.tools,
    )
    assert AGENT.instructions == "Be brief." and AGENT.limits.max_model_calls == 8


def test_a_limit_above_the_agents_own_is_never_raised():
    # an agent whose limit a later deploy lowered below an old override keeps its own
    got = projects.apply(AGENT, _input({"limits": {"max_model_calls": 50, "max_tool_calls": 2}}))
    assert got.limits.max_model_calls == 8
    assert got.limits.max_tool_calls == 2
    assert got.instructions == AGENT.instructions


@pytest.mark.parametrize(
    "limits",
    [
        {"max_model_calls": 0},
        {"max_model_calls": -1},
        {"max_model_calls": True},
        {"max_model_calls": 2.5},
        {"max_model_calls": "2"},
        {"no_such_limit": 1},
        "not an object",
    ],
)
def test_a_malformed_pinned_limit_is_ignored(limits: Any):
    assert projects.apply(AGENT, _input({"limits": limits})).limits == AGENT.limits


def test_the_pinned_project_is_hashed_into_the_input_hash_only_when_there_is_one():
    base = "b" * 64
    assert project_hash(base, None) == base
    one = projects.pinned("p1", {"instructions": "x"})
    assert one["override_hash"] == sha256_hex({"instructions": "x"})
    assert project_hash(base, one) != base
    # the same project and override: the same hash (a replay); another override: not
    assert project_hash(base, projects.pinned("p1", {"instructions": "x"})) == project_hash(
        base, one
    )
    assert project_hash(base, projects.pinned("p1", {"instructions": "y"})) != project_hash(
        base, one
    )
    assert project_hash(base, projects.pinned("p2", {"instructions": "x"})) != project_hash(
        base, one
    )


def test_override_for_picks_the_agents_entry():
    overrides = {"agents": {"helper": {"instructions": "x"}, "other": {"limits": {}}}}
    assert projects.override_for(overrides, "helper") == {"instructions": "x"}
    assert projects.override_for(overrides, "nobody") == {}
    assert projects.override_for({}, "helper") == {}
    assert projects.override_for(None, "helper") == {}


def test_check_refuses_unknown_agents_and_raised_limits():
    agents = {"helper": AGENT}
    ok = {"agents": {"helper": {"instructions": "x", "limits": {"max_model_calls": 8}}}}
    assert projects.check(ok, agents) == []
    bad = {
        "agents": {
            "helper": {"limits": {"max_model_calls": 9, "max_seconds": 60.5}},
            "ghost": {"instructions": "boo"},
        }
    }
    assert projects.check(bad, agents) == [
        ("agents.helper.limits.max_model_calls", "may only lower the agent's limit (8)"),
        ("agents.helper.limits.max_seconds", "may only lower the agent's limit (60.0)"),
        ("agents.ghost", "no agent of that name is declared"),
    ]
