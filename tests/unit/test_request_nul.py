"""U+0000 (NUL) is refused at the edge: Postgres stores it neither in text nor in jsonb,
so a request holding one would otherwise be a 500 (found by tests/integration/
test_openapi.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from turnkeep.api.http.workflows import NodeRequest
from turnkeep.api.service.requests import TurnRequest, has_nul


def body(**extra: Any) -> dict[str, Any]:
    return {"agent": "demo", "input": [{"role": "user", "content": "hi"}], **extra}


@pytest.mark.parametrize(
    "value",
    ["\x00", "a\x00b", ["x", {"y": "\x00"}], {"k\x00": 1}, {"a": [[["\x00"]]]}],
)
def test_has_nul_finds_it_in_strings_and_keys(value: Any) -> None:
    assert has_nul(value)


@pytest.mark.parametrize("value", ["", "\\u0000", "\x01\n\t", {"a": [1, None, 2.5]}, None])
def test_has_nul_passes_everything_else(value: Any) -> None:
    assert not has_nul(value)


@pytest.mark.parametrize("model", [TurnRequest, NodeRequest])
def test_a_message_or_output_schema_with_nul_is_invalid(model: type[TurnRequest]) -> None:
    with pytest.raises(ValidationError) as nul_content:
        model.model_validate(body(input=[{"role": "user", "content": "a\x00b"}]))
    assert nul_content.value.errors()[0]["loc"] == ("input", 0, "content")
    with pytest.raises(ValidationError) as nul_schema:
        model.model_validate(body(output_schema={"description": "\x00"}))
    assert nul_schema.value.errors()[0]["loc"] == ("output_schema",)
    # the escape written out is text like any other
    assert model.model_validate(body(input=[{"role": "user", "content": "\\u0000"}]))


def test_the_document_says_so() -> None:
    schema = TurnRequest.model_json_schema()
    assert schema["$defs"]["InputMessage"]["properties"]["content"]["pattern"] == r"^[^\x00]*$"


@pytest.mark.parametrize("name", ["agent", "agent_version"])
def test_a_search_by_a_name_with_nul_is_invalid(name: str) -> None:
    # GET /v1/turns?agent=…%00 was a 500 (DataError) before the pattern
    from turnkeep.api.service.search import SessionQuery, TurnQuery

    for model in (TurnQuery, SessionQuery):
        if name not in model.model_fields:
            continue
        with pytest.raises(ValidationError) as nul:
            model.model_validate({name: "demo\x00"})
        assert nul.value.errors()[0]["loc"] == (name,)
        assert getattr(model.model_validate({name: "demo"}), name) == "demo"
