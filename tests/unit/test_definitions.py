from __future__ import annotations

import pytest

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import Effect, tool
from turnkeep.runtime.errors import DefinitionError, UnknownAgent
from turnkeep.runtime.hashing import canonical_json, input_hash
from turnkeep.store.sql import _parse


def _tool(version: str = "1", props: dict | None = None):
    @tool(
        name="t",
        version=version,
        effect=Effect.IDEMPOTENT,
        parameters={"type": "object", "properties": props or {}},
    )
    def fn(ctx, args):
        return None

    return fn


def _agent(**kw):
    base = dict(
        name="a", version="1", provider="demo", model="m", instructions="i", tools=(_tool(),)
    )
    return AgentDefinition(**{**base, **kw})


def test_agent_hash_pins_everything_that_decides_a_run():
    h = _agent().definition_hash
    assert _agent().definition_hash == h
    assert _agent(instructions="j").definition_hash != h
    assert _agent(tools=(_tool(version="2"),)).definition_hash != h
    assert _agent(tools=(_tool(props={"x": {"type": "string"}}),)).definition_hash != h
    assert _agent(model="n").definition_hash != h


def test_input_hash_covers_input_agent_schema_and_budget():
    base = dict(
        messages=[{"role": "user", "content": "x"}], agent_hash="h", output_schema=None, budget=None
    )
    h = input_hash(**base)
    assert input_hash(**base) == h
    for change in (
        {"messages": [{"role": "user", "content": "y"}]},
        {"agent_hash": "g"},
        {"output_schema": {"type": "object"}},
        {"budget": {"max_model_calls": 1}},
    ):
        assert input_hash(**{**base, **change}) != h


def test_canonical_json_is_order_independent_and_keeps_unicode():
    assert canonical_json({"b": 1, "a": "é"}) == canonical_json({"a": "é", "b": 1})
    assert canonical_json({"a": "é"}) == '{"a":"é"}'


def test_registry_refuses_duplicates_and_unknown_names():
    with pytest.raises(DefinitionError):
        AgentRegistry([_agent(), _agent()])
    with pytest.raises(DefinitionError):
        AgentRegistry([_agent(tools=(_tool(), _tool()))])
    with pytest.raises(UnknownAgent):
        AgentRegistry([_agent()]).get("zzz")


def test_sql_blocks_parse_and_refuse_duplicates():
    blocks = _parse("-- name: a\n-- why\nSELECT 1;\n\n-- name: b\nSELECT 2;\n")
    assert blocks == {"a": "SELECT 1", "b": "SELECT 2"}
    with pytest.raises(ValueError):
        _parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")
