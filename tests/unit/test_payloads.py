"""Each event type's payload, and a turn's input, read and written back unchanged.

The samples are the JSON as stored: the SQL-written ones in jsonb's key order (as a
row reads), the worker's in its writers' order, older rows missing keys, and keys
no type declares. A payload read and written back dumps to the very same text, and a
writer's payload built in code writes the keys today's writers write, no more.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import msgspec
import pytest

from turnkeep.runtime import payloads
from turnkeep.runtime.admission import TurnInput, identity_hash
from turnkeep.runtime.hashing import canonical_json
from turnkeep.runtime.payloads import (
    PAYLOADS,
    ContextCompacted,
    InputRequested,
    ModelCompleted,
    ToolCompleted,
    ToolInterrupted,
    TurnAccepted,
    TurnFailed,
)
from turnkeep.runtime.states import EventType
from turnkeep.store.rows import jsonb

MSG = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}],
}
TOOL_MSG = {"role": "tool", "content": "3", "tool_call_id": "c1", "name": "add", "is_error": False}
REQUEST = {
    "kind": "approval",
    "step": 2,
    "tool": {"name": "pay", "version": "1", "schema_hash": "ab"},
    "detail": {},
    "at_seq": 5,
    "call_id": "c1",
    "turn_id": "u",
    "arguments": {"amount": 10},
    "tenant_id": "t",
    "expires_at": "2026-01-01T00:00:00+00:00",
    "request_id": "approval-2-1",
    "session_id": "s",
    "answered_by": {"role": "operator"},
    "arguments_hash": "cd",
    "response_schema": {"type": "object"},
    "response_schema_hash": "ef",
}

SAMPLES: dict[EventType, list[dict[str, Any]]] = {
    EventType.TURN_ACCEPTED: [
        {
            "by": "alice",
            "agent": "demo",
            "input": {"messages": [{"role": "user", "content": "hi"}]},
        },
        {
            "by": "",
            "agent": "worker",
            "input": {
                "project": {"id": "p1", "override": {}, "override_hash": "44"},
                "messages": [{"role": "user", "content": "café ☕"}],
                "delegation": {
                    "tools": [],
                    "depth": 1,
                    "parent": {"step": 4, "turn_id": "u", "task_id": "a", "session_id": "s"},
                },
                "attachments": ["a1"],
            },
        },
        {"input": {"messages": []}},  # an older row: no agent, no submitter
    ],
    EventType.TURN_STARTED: [{"attempt": 1}, {}],
    EventType.MODEL_COMPLETED: [
        {
            "message": MSG,
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "model": "demo-1",
            "duration_ms": 12,
            "retries": 0,
            "cost": None,
            "decision": {"why": "primary", "asked": "demo-1", "answered": "demo-1"},
        },
        {
            "cost": 0.002,
            "model": "m",
            "usage": {},
            "message": {"role": "assistant", "content": "{}"},
            "retries": 1,
            "decision": {},
            "receipts": [{"name": "pii", "verdict": "pass"}],
            "lost_tries": 2,
            "correction": {"n": 1, "error": "not an object"},
            "duration_ms": 900,
            "charged_cost": 0.006,
        },
        {"message": MSG, "usage": {"input_tokens": 1}},  # before timings and receipts
    ],
    EventType.TOOL_COMPLETED: [
        {
            "message": TOOL_MSG,
            "tool": "add",
            "version": "1",
            "effect": "read",
            "duration_ms": 3,
            "retries": 0,
        },
        {
            "message": TOOL_MSG,
            "tool": "nope",
            "version": None,
            "error": "unknown_tool",
            "duration_ms": 0,
            "retries": 0,
        },
        {
            "message": TOOL_MSG,
            "tool": "pay",
            "version": "1",
            "effect": "effectful",
            "reconciled": None,
        },
        {
            "message": TOOL_MSG,
            "tool": "delegate_w",
            "specialist": "w",
            "children_usage": {"tokens": 5, "cost_usd": 0.1},
        },
        {
            "message": TOOL_MSG,
            "tool": "delegate_w",
            "specialist": "w",
            "error": "delegation_expired",
        },
        {"message": TOOL_MSG, "tool": "add", "future_key": [1, 2]},
    ],
    EventType.TOOL_INTERRUPTED: [
        {
            "message": TOOL_MSG,
            "tool": "pay",
            "version": "1",
            "effect": "effectful",
            "reason": "crash",
        },
        {"message": TOOL_MSG, "tool": "pay", "version": "1", "effect": "effectful"},
    ],
    EventType.INPUT_REQUESTED: [REQUEST, {"kind": "question", "request_id": "question-1-1"}],
    EventType.INPUT_RESOLVED: [
        {
            "by": "bob",
            "kind": "approval",
            "step": 2,
            "response": {"approved": True},
            "request_id": "approval-2-1",
            "response_hash": "00",
        },
        {
            "by": "runtime",
            "kind": "delegation",
            "step": 3,
            "response": {"expired": True},
            "request_id": "delegation-3-1",
            "response_hash": None,
        },
    ],
    EventType.CONTEXT_COMPACTED: [
        {
            "summary": "so far",
            "from_seq": 1,
            "to_seq": 9,
            "supersedes": None,
            "model": "demo-1",
            "prompt_hash": "99",
            "usage": {"input_tokens": 5, "output_tokens": 1},
            "chunks": 1,
            "before_step": 3,
            "reason": "budget",
        },
        {"model": "m", "summary": "older, without its range"},
    ],
    EventType.TURN_DEFINITION_CHANGED: [
        {
            "from_hash": "a" * 64,
            "to_hash": "b" * 64,
            "from_version": "1",
            "to_version": "2",
            "reason": "newer_version",
        },
        {
            "from_hash": "a" * 64,
            "to_hash": "b" * 64,
            "from_version": None,
            "to_version": "1",
            "reason": "not_served",
        },
    ],
    EventType.TURN_PACED: [
        {
            "until": "2026-12-05T21:00:30.250000+00:00",
            "wait_ms": 30250,
            "limit": "openai/gpt-4o-mini",
            "reason": "requests",
            "tokens": 4210,
        },
        {
            "until": "2026-12-05T21:01:00+00:00",
            "wait_ms": 2000,
            "limit": "openai/*",
            "reason": "provider",
            "tokens": 900,
            "refusals": 2,
        },
    ],
    EventType.TURN_CANCEL_REQUESTED: [
        {"by": "alice"},
        {"by": "alice", "reason": "interrupted", "by_turn": "u2"},
    ],
    EventType.TURN_NEEDS_RECONCILIATION: [
        {"step": 2, "tool": "pay", "effect": "effectful", "call_id": "c1", "version": "1"}
    ],
    EventType.TURN_COMPLETED: [
        {"result": {"text": "4"}},
        {"result": {"text": '{"a": 1}', "output": {"a": 1}}},
    ],
    EventType.TURN_FAILED: [
        {"error": {"code": "budget_exceeded", "message": "max_model_calls"}},
        {"error": {"code": "processor_blocked", "message": "x"}, "receipts": [{"name": "m"}]},
    ],
    EventType.TURN_CANCELLED: [
        {},
        {"by": "alice"},
        {"by": "a", "reason": "interrupted", "by_turn": "u2"},
    ],
}


def test_every_event_type_has_a_payload_type_and_samples() -> None:
    assert set(PAYLOADS) == set(EventType)
    assert set(SAMPLES) == set(EventType)
    assert all(cls.TYPE is t for t, cls in PAYLOADS.items())
    # one member of the union per tag: none shadows another
    assert len(get_args(payloads.EventPayload)) == len(PAYLOADS)


@pytest.mark.parametrize(
    ("type", "data"), [(t, d) for t, ds in SAMPLES.items() for d in ds], ids=str
)
def test_a_payload_gives_back_its_stored_json_unchanged(
    type: EventType, data: dict[str, Any]
) -> None:
    before = json.dumps(data, ensure_ascii=False)
    read = payloads.parse(type, data)
    assert isinstance(read, PAYLOADS[type])
    assert json.dumps(read.to_json(), ensure_ascii=False) == before
    assert json.dumps(data, ensure_ascii=False) == before  # the row is not touched


def test_keys_no_type_declares_are_kept_and_missing_ones_read_as_defaults() -> None:
    tool = ToolCompleted.from_json({"message": TOOL_MSG, "future_key": [1, 2]})
    assert tool.extra == {"future_key": [1, 2]}
    assert (tool.duration_ms, tool.error, tool.effect) == (None, None, None)
    assert not tool.has("error")
    old = ModelCompleted.from_json({"message": MSG})
    assert (old.usage, old.cost, old.receipts, old.correction) == ({}, None, None, None)
    assert old.to_json() == {"message": MSG}
    accepted = TurnAccepted.from_json(SAMPLES[EventType.TURN_ACCEPTED][1])
    assert accepted.input.attachments == ["a1"]
    assert accepted.input.depth == 1
    assert accepted.input.project_id == "p1"
    assert accepted.input.parent == ("s", "u")


def test_writers_write_the_keys_they_give_in_their_order() -> None:
    built = ModelCompleted(
        message=MSG,
        usage={},
        model="m",
        duration_ms=1,
        retries=0,
        cost=None,
        decision={},
        receipts=[],
        correction=None,
    )
    # a cost nobody priced is written as null; empty receipts, no correction: left out
    assert list(built.to_json()) == [
        "message",
        "usage",
        "model",
        "duration_ms",
        "retries",
        "cost",
        "decision",
    ]
    assert built.to_json()["cost"] is None
    assert ToolInterrupted(
        message=TOOL_MSG, tool="p", version="1", effect="effectful", reason="crash"
    ).to_json() == {
        "message": TOOL_MSG,
        "tool": "p",
        "version": "1",
        "effect": "effectful",
        "reason": "crash",
    }
    # a reconciliation nobody answered in time: its outcome written as null
    assert ToolCompleted(message=TOOL_MSG, reconciled=None).to_json() == {
        "message": TOOL_MSG,
        "reconciled": None,
    }
    assert TurnFailed(error={"code": "x"}, receipts=[]).to_json() == {"error": {"code": "x"}}
    assert ContextCompacted(summary="s", supersedes=None).to_json() == {
        "summary": "s",
        "supersedes": None,
    }
    assert InputRequested.from_json(REQUEST).to_json() == REQUEST


def test_a_turns_input_reads_and_writes_back_unchanged() -> None:
    for stored in (
        {"messages": [{"role": "user", "content": "hi"}]},
        SAMPLES[EventType.TURN_ACCEPTED][1]["input"],
        {"messages": [], "someday": True},
    ):
        before = json.dumps(stored, ensure_ascii=False)
        assert json.dumps(TurnInput.from_json(stored).to_json(), ensure_ascii=False) == before
    link = TurnInput.from_json(
        {"messages": [], "delegation": {"parent": {"session_id": "s", "turn_id": "u"}, "depth": 2}}
    )
    assert (link.parent, link.depth, link.project_id) == (("s", "u"), 2, None)
    plain = TurnInput.from_json(None)
    assert (plain.messages, plain.parent, plain.depth) == ([], None, 0)


@pytest.mark.parametrize(
    ("type", "data"), [(t, d) for t, ds in SAMPLES.items() for d in ds], ids=str
)
def test_a_rows_record_is_the_one_its_constructor_builds(
    type: EventType, data: dict[str, Any]
) -> None:
    # from_json passes the row's known keys straight to the constructor
    # (runtime/jsonrecord.py): the same fields, unknown keys and key order as building
    # it from the row's keys
    cls = PAYLOADS[type]
    read = cls.from_json(data)
    names = {f.name for f in msgspec.structs.fields(cls)} - {"extra", "_keys"}
    given = {k: getattr(read, k) for k in data if k in names}
    built = cls(**given, extra=read.extra, _keys=tuple(data))
    assert read == built
    assert {k: getattr(read, k) for k in names} == {k: getattr(built, k) for k in names}
    assert read.to_json() == built.to_json()


def test_a_missing_keys_default_is_each_records_own() -> None:
    one, two = ModelCompleted.from_json({}), ModelCompleted.from_json({})
    one.usage["input_tokens"] = 3
    assert two.usage == {}
    assert ModelCompleted.from_json({}).usage == {}
    built = ModelCompleted(message={})
    built.usage["x"] = 1
    assert ModelCompleted(message={}).usage == {}


def test_a_rows_keys_at_their_defaults_are_written_back() -> None:
    # the records are msgspec Structs, but not with its omit_defaults: a row holding a
    # key at its default keeps it, and readers tell it from an absent one
    row = {"message": MSG, "usage": {}, "cost": None, "retries": 0}
    read = ModelCompleted.from_json(row)
    assert read.to_json() == row
    assert (read.has("usage"), read.has("cost"), read.has("model")) == (True, True, False)
    asked = InputRequested.from_json({"request_id": "", "kind": "question"})
    assert asked.to_json() == {"request_id": "", "kind": "question"}


def test_unknown_keys_survive_nested_and_named_like_the_records_own() -> None:
    row = {
        "extra": 1,
        "_keys": ["x"],
        "input": {"messages": [], "someday": {"a": 1}},
        "agent": "demo",
    }
    read = TurnAccepted.from_json(row)
    assert read.extra == {"extra": 1, "_keys": ["x"]}
    assert read.input.extra == {"someday": {"a": 1}}
    assert json.dumps(read.to_json()) == json.dumps(row)
    # a change keeps what the record does not declare
    moved = read.evolve(agent="other")
    assert moved.to_json() == {**row, "agent": "other"}
    with pytest.raises(AttributeError):
        read.agent = "x"  # type: ignore[misc]


def test_a_stored_inputs_hashed_and_written_bytes_are_unchanged() -> None:
    # the bytes the statements write (store/rows.py jsonb) and the ones the identity
    # hashes (runtime/hashing.py canonical_json) of a row read and written back
    row = {
        "messages": [{"role": "user", "content": "héllo"}],
        "attachments": ["a2", "a1"],
        "project": {"id": "p1", "override_hash": "ab"},
        "delegation": {},
        "someday": [1.5, None],
    }
    again = TurnInput.from_json(row).to_json()
    assert jsonb(again) == jsonb(row)
    assert canonical_json(again).encode() == canonical_json(row).encode()
    assert identity_hash(
        TurnInput.from_json(row), agent_hash="h", output_schema=None, budget=None
    ) == identity_hash(TurnInput.from_json(again), agent_hash="h", output_schema=None, budget=None)
    # an older row missing every optional key hashes as the writer's record without them
    old = TurnInput.from_json({"messages": row["messages"]})
    assert (old.attachments, old.project, old.delegation, old.rerun) == ((), None, None, None)
    assert identity_hash(old, agent_hash="h", output_schema=None, budget=None) == identity_hash(
        TurnInput(messages=row["messages"], attachments=[], project=None),
        agent_hash="h",
        output_schema=None,
        budget=None,
    )
