"""Each wire shape declared once (issue 38): the service builds a turn, a session and an
open request as their wire models (turnkeep/models.py), so a field the model declares
is on the wire; the OpenAPI document's closed bodies are derived from the same models
(api/http/bodies.py ``closed``), never restated; the problem is one model the server
renders and the client parses (turnkeep/problems.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, get_args

import httpx

from turnkeep import models
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.http import bodies
from turnkeep.api.openapi_dump import document
from turnkeep.api.problems import ProblemAnswer
from turnkeep.api.service import wire
from turnkeep.client.errors import problem
from turnkeep.problems import Problem
from turnkeep.runtime import input_groups
from turnkeep.runtime.pending import AskedInput, TurnWait
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.records import SessionRecord, TurnRecord

AT = datetime(2026, 12, 8, 0, 0, 1, 250000, tzinfo=UTC)
REQUEST = {
    "request_id": "r1",
    "kind": "approval",
    "step": 2,
    "tool": {"name": "refund"},
    "call_id": "c1",
    "arguments": {"amount": 5},
    "expires_at": AT.isoformat(),
    # kept by the store beside the request, never shown
    "tenant_id": "never shown",
    "response_hash": "h",
}
LINEAGE = {
    "session_id": "s0",
    "turn_id": "t0",
    "from_step": 2,
    "edited": None,
    "edit_hash": None,
    "by": "alice",
    "before_seq": 4,
}


def _turn(**changes: Any) -> TurnRecord:
    fields: dict[str, Any] = {
        "tenant_id": "ten",
        "session_id": "s",
        "turn_id": "t1",
        "ordinal": 1,
        "state": TurnState.WAITING,
        "agent_name": "support",
        "agent_hash": "h",
        "input_hash": "i",
        "input": {"messages": [], "rerun": LINEAGE},
        "output_schema": None,
        "budget": None,
        "attempt": 1,
        "revision": 3,
        "cancel_requested": False,
        "pending_input": TurnWait.from_json(
            input_groups.pending([REQUEST, {**REQUEST, "request_id": "r2"}])
        ),
        "result": None,
        "error": None,
        "accepted_seq": 5,
        "submitted_by": "alice",
        "created_at": AT,
        "updated_at": AT,
        "usage": {"input_tokens": Decimal(12), "output_tokens": 3, "cost_usd": Decimal("1E-5")},
        "agent_version": "2",
        "metadata": {"team": "billing"},
    }
    return TurnRecord(**{**fields, **changes})


def test_turn_json_is_the_turn_model_field_for_field() -> None:
    shown = wire.turn_json(_turn())
    unset = ("held", "paced")  # only while they apply (GET of a turn reads them)
    assert list(shown) == [name for name in models.Turn.model_fields if name not in unset]
    assert shown["created_at"] == "2026-12-08T00:00:01.250000+00:00"  # isoformat, no Z
    assert shown["usage"] == {"input_tokens": 12, "output_tokens": 3, "cost_usd": 1e-05}
    assert (
        json.dumps(shown["usage"]) == '{"input_tokens": 12, "output_tokens": 3, "cost_usd": 1e-05}'
    )
    assert shown["rerun_of"] == {
        "session_id": "s0",
        "turn_id": "t0",
        "from_step": 2,
        "edited": None,
        "by": "alice",
    }
    assert [r["request_id"] for r in shown["pending_inputs"]] == ["r1", "r2"]
    bodies.closed(models.Turn).model_validate(shown)  # what the document says it answers

    held = models.Held(reason="definition_unavailable", definition_hash="h")
    paced = models.Paced(until=AT, limit="openai", reason="tokens", step=2)
    both = wire.turn_json(_turn(), held=held, paced=paced)
    assert list(both) == list(models.Turn.model_fields)
    assert both["paced"]["until"] == AT.isoformat()


def test_an_open_request_shows_the_fields_it_has_in_the_models_order() -> None:
    shown = wire.pending_json(AskedInput.from_json(dict(reversed(REQUEST.items()))))
    assert shown == {
        "request_id": "r1",
        "kind": "approval",
        "step": 2,
        "tool": {"name": "refund"},
        "call_id": "c1",
        "arguments": {"amount": 5},
        "expires_at": AT.isoformat(),
    }
    assert list(shown) == [name for name in models.PendingInput.model_fields if name in shown]
    assert wire.pending_json(None) is None
    turn = wire.turn_wire(_turn())
    assert isinstance(turn.pending_input, models.PendingInput)  # parsed once, typed


def test_session_json_is_the_session_model_field_for_field() -> None:
    session = SessionRecord(
        tenant_id="ten",
        session_id="s",
        agent_name="support",
        fence=1,
        head_seq=9,
        created_at=AT,
        updated_at=AT,
        usage={"input_tokens": Decimal(7)},
        project_id="p",
    )
    idle = wire.session_json(session, None)
    assert list(idle) == list(models.Session.model_fields)
    assert (idle["state"], idle["active_turn"], idle["usage"]) == (
        "idle",
        None,
        {"input_tokens": 7},
    )
    busy = wire.session_json(session, _turn())
    assert (busy["state"], busy["active_turn"]) == ("waiting", "t1")
    bodies.closed(models.Session).model_validate(busy)


def test_a_closed_body_is_its_wire_model_and_nothing_else() -> None:
    turn = bodies.closed(models.Turn)
    assert turn is bodies.closed(models.Turn)  # one class, one schema name
    assert issubclass(turn, models.Turn)
    assert (turn.__name__, turn.__doc__) == ("Turn", models.Turn.__doc__)
    assert turn.model_config["extra"] == "forbid"
    assert list(turn.model_fields) == list(models.Turn.model_fields)
    assert bodies.closed(models.Held) in get_args(turn.model_fields["held"].annotation)
    page = bodies.closed(models.TurnPage).model_fields["turns"].annotation
    assert get_args(page) == (turn,)
    for model in bodies.OPEN:
        assert bodies.closed(model) is model
    event = bodies.closed(models.Event)
    assert event.model_fields["type"].annotation is EventType


def test_the_document_names_each_wire_model_once() -> None:
    schemas = document()["components"]["schemas"]
    assert schemas["Turn"]["additionalProperties"] is False
    assert schemas["PendingInput"]["additionalProperties"] is True
    assert not [name for name in schemas if "__" in name]  # no two classes of one name


def test_the_problem_the_server_renders_is_the_one_the_client_parses() -> None:
    answer = ProblemAnswer.of(RequestInvalid, "invalid field(s): x", extra={"errors": []})
    response = answer.response()
    body = json.loads(response.body)
    assert list(body) == ["type", "title", "status", "code", "detail", "errors"]
    bodies.closed(Problem).model_validate(body)
    refused = problem(httpx.Response(422, content=response.body))
    assert (refused.code, refused.detail, refused.status) == (
        "validation_error",
        "invalid field(s): x",
        422,
    )
