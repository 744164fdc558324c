"""The bounds of a turn's request (api/service/bounds.py): a message's length, the output
schema's serialized size and depth (checked before the schema is validated as a JSON
Schema) and the SSE streams a tenant may hold open on one process."""

from __future__ import annotations

from typing import Any

import pytest

from turnkeep.api.errors import RequestInvalid
from turnkeep.api.service.bounds import StreamSlots, check_turn, depth_over
from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime.settings import Settings
from turnkeep.store.errors import QuotaExceeded

SETTINGS = Settings(
    bounds={"max_message_chars": 10, "max_schema_bytes": 200, "max_schema_depth": 4}
)


def request(content: str = "hi", schema: dict[str, Any] | None = None) -> TurnRequest:
    return TurnRequest.model_validate(
        {
            "agent": "demo",
            "input": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": content},
            ],
            "output_schema": schema,
        }
    )


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def refused(body: TurnRequest) -> RequestInvalid:
    with pytest.raises(RequestInvalid) as info:
        check_turn(body, SETTINGS)
    return info.value


def test_within_every_bound_passes() -> None:
    check_turn(request("x" * 10, nested(2)), SETTINGS)


def test_a_long_message_names_its_field() -> None:
    err = refused(request("x" * 11))
    assert err.where == "body.input.1.content" and "at most 10" in err.message
    assert "xxxxxxxxxxx" not in str(err) + err.message  # never echoes the input


def test_a_large_schema_names_the_field() -> None:
    props = {f"p{i}": {"type": "string"} for i in range(20)}
    err = refused(request(schema={"type": "object", "properties": props}))
    assert err.where == "body.output_schema" and "bytes" in err.message


def test_a_deep_schema_names_the_field_and_never_recurses() -> None:
    assert not depth_over(nested(2), 4) and depth_over(nested(3), 4)
    err = refused(request(schema=nested(3)))
    assert err.where == "body.output_schema" and "deeper than 4" in err.message
    # far deeper than the interpreter could recurse: the walk is iterative
    deep: Any = {}
    for _ in range(100_000):
        deep = {"a": deep}
    assert depth_over(deep, 32)
    assert not depth_over("scalar", 0) and depth_over([], 0) and not depth_over([], 1)


def test_an_invalid_json_schema_is_refused_after_the_bounds() -> None:
    err = refused(request(schema={"type": 12}))
    assert err.where == "body.output_schema" and "not a valid JSON Schema" in err.message


def test_stream_slots_per_tenant() -> None:
    slots = StreamSlots()
    releases = [slots.take("a", 2), slots.take("a", 2)]
    with pytest.raises(QuotaExceeded) as info:
        slots.take("a", 2)
    assert (info.value.scope, info.value.limit) == ("streams", 2)
    slots.take("b", 2)  # another tenant's are its own
    releases[0]()
    releases[0]()  # a second release gives nothing back twice
    assert slots.open("a") == 1
    slots.take("a", 2)
    with pytest.raises(QuotaExceeded):
        slots.take("a", 2)


def test_a_dataset_version_past_a_postgres_integer_is_invalid() -> None:
    # POST /v1/experiments with dataset_version 2**63 was a 500 (NumericValueOutOfRange)
    from pydantic import ValidationError

    from turnkeep.api.service.datasets import FromTurns
    from turnkeep.api.service.experiments import ExperimentRequest
    from turnkeep.evaluation import MAX_DATASET_VERSION

    body = {"dataset": "d", "agent": "demo"}
    top = ExperimentRequest.model_validate({**body, "dataset_version": MAX_DATASET_VERSION})
    assert top.dataset_version == MAX_DATASET_VERSION
    with pytest.raises(ValidationError) as past:
        ExperimentRequest.model_validate({**body, "dataset_version": 2**63})
    assert past.value.errors()[0]["loc"] == ("dataset_version",)
    turns = [{"session_id": "s", "turn_id": "t"}]
    with pytest.raises(ValidationError) as base:
        FromTurns.model_validate({"turns": turns, "base": MAX_DATASET_VERSION + 1})
    assert base.value.errors()[0]["loc"] == ("base",)
