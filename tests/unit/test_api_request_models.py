"""Admission bodies: strict, bounded, and a budget that hashes the same when unset."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from turnkeep.api.service.requests import TurnRequest


def body(**extra: Any) -> dict[str, Any]:
    return {"agent": "demo", "input": [{"role": "user", "content": "hi"}], **extra}


def test_minimal_body() -> None:
    req = TurnRequest.model_validate(body())
    assert req.messages() == [{"role": "user", "content": "hi"}]
    assert req.budget_json() is None and req.output_schema is None


def test_budget_drops_unset_fields() -> None:
    req = TurnRequest.model_validate(body(budget={"max_tokens": 5, "max_seconds": None}))
    assert req.budget_json() == {"max_tokens": 5}
    assert TurnRequest.model_validate(body(budget={})).budget_json() is None


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"budget": {"max_tokens": "5"}}, ("budget", "max_tokens")),
        ({"budget": {"max_tokens": 1.5}}, ("budget", "max_tokens")),
        ({"budget": {"max_tokens": True}}, ("budget", "max_tokens")),
        ({"budget": {"max_seconds": 0}}, ("budget", "max_seconds")),
        ({"budget": {"max_cost": 1}}, ("budget", "max_cost")),
        ({"output_schema": {"minimum": float("nan")}}, ("output_schema",)),
        ({"input": [{"role": "assistant", "content": "x"}]}, ("input", 0, "role")),
        ({"input": [{"role": "user", "content": "x", "name": "n"}]}, ("input", 0, "name")),
        ({"agent": ""}, ("agent",)),
    ],
)
def test_invalid_bodies_name_the_field(extra: dict[str, Any], field: tuple[Any, ...]) -> None:
    with pytest.raises(ValidationError) as info:
        TurnRequest.model_validate(body(**extra))
    assert field in [tuple(e["loc"]) for e in info.value.errors()]


def test_valid_output_schema_is_kept() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert TurnRequest.model_validate(body(output_schema=schema)).output_schema == schema


def test_multitask_defaults_to_enqueue() -> None:
    from turnkeep.runtime.multitask import Multitask

    req = TurnRequest.model_validate(body())
    assert req.multitask is Multitask.ENQUEUE


@pytest.mark.parametrize("value", ["enqueue", "reject", "interrupt"])
def test_multitask_takes_each_strategy(value: str) -> None:
    from turnkeep.runtime.multitask import Multitask

    assert TurnRequest.model_validate(body(multitask=value)).multitask is Multitask(value)


@pytest.mark.parametrize("value", ["rollback", "Reject", "", None, 1, ["reject"]])
def test_an_unknown_multitask_is_refused(value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        TurnRequest.model_validate(body(multitask=value))
    assert ("multitask",) in [tuple(e["loc"]) for e in info.value.errors()]


def test_multitask_is_not_part_of_the_turns_identity() -> None:
    # what admission hashes (messages, output schema, budget) is the same whatever the
    # strategy, so a replay with another multitask answers the stored turn
    plain = TurnRequest.model_validate(body(budget={"max_tokens": 5}))
    other = TurnRequest.model_validate(body(budget={"max_tokens": 5}, multitask="interrupt"))
    assert (plain.messages(), plain.output_schema, plain.budget_json()) == (
        other.messages(),
        other.output_schema,
        other.budget_json(),
    )
