"""The MCP tools' input schemas are derived from the models their arguments validate
with (api/mcp_server.py, ``model_json_schema``): each lists exactly its model's fields,
requires exactly its required ones, is self-contained (no ``$ref``) and agrees with the
model on what is valid."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from turnkeep.api.mcp_server import (
    ANSWER_SCHEMA,
    TURN_INPUT_SCHEMA,
    TURN_REF_SCHEMA,
    AnswerArguments,
    TurnArguments,
    TurnRef,
)

SCHEMAS = [
    (TURN_INPUT_SCHEMA, TurnArguments),
    (TURN_REF_SCHEMA, TurnRef),
    (ANSWER_SCHEMA, AnswerArguments),
]


@pytest.mark.parametrize(("schema", "model"), SCHEMAS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_schema_is_its_model(schema: dict[str, Any], model: type[BaseModel]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(model.model_fields)
    required = {n for n, f in model.model_fields.items() if f.is_required()}
    assert set(schema.get("required", ())) == required
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema
    # an optional argument may be left out, not sent as null
    assert "null" not in json.dumps(schema)


def _valid_by_schema(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _valid_by_model(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


ANSWER = {"request_id": "r1", "response": {"approved": True}}
REF = {"session_id": "s1", "turn_id": "t1"}
CASES = [
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi"}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"messages": [{"role": "user", "content": "hi"}]}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi", "budget": {"max_cost_usd": 0.5}}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi", "budget": {"max_tokens": 0}}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi", "budget": {"nope": 1}}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": ""}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi", "session_id": "no/slashes"}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"messages": [{"role": "tool", "content": "x"}]}),
    (TURN_INPUT_SCHEMA, TurnArguments, {"prompt": "hi", "extra": 1}),
    (TURN_REF_SCHEMA, TurnRef, REF),
    (TURN_REF_SCHEMA, TurnRef, {"session_id": "s1"}),
    (ANSWER_SCHEMA, AnswerArguments, {**REF, "answers": [ANSWER]}),
    (ANSWER_SCHEMA, AnswerArguments, {**REF, "answers": []}),
    (ANSWER_SCHEMA, AnswerArguments, {**REF, "answers": [{"request_id": "r1"}]}),
]


@pytest.mark.parametrize(("schema", "model", "value"), CASES)
def test_the_schema_and_the_model_agree(
    schema: dict[str, Any], model: type[BaseModel], value: dict[str, Any]
) -> None:
    assert _valid_by_schema(schema, value) == _valid_by_model(model, value), value
