"""Answers and what else the executor reads and writes beside its steps, against both
stores: an input request answered once (``resolve_input``) and the start that
resumes it, usage added as Postgres adds numbers, a tool call's recorded steps,
remembered facts, and the journal pages (tests/contract/backends.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from psycopg.errors import NotNullViolation

from tests.contract.backends import (
    ACCEPTED,
    CALL,
    MODEL,
    REQUESTED,
    STARTED,
    Backend,
    seen,
)
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import CursorAhead, InputExpired, InputNotOpen, NotFound
from turnkeep.store.records import TurnRecord

RESOLVED = EventType.INPUT_RESOLVED.value


def _park(backend: Backend, *, expires_in: float = 600) -> tuple[TurnRecord, dict[str, Any]]:
    """u1 started under fence 1 and parked waiting on request r1 (step 2)."""
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    expires = datetime.now(UTC) + timedelta(seconds=expires_in)
    request = {"request_id": "r1", "kind": "approval", "step": 2, "expires_at": expires.isoformat()}
    parked = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.WAITING,
        type=EventType.INPUT_REQUESTED,
        data=request,
        pending_input=request,
    )
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.revision == parked.revision and stored.awaiting_input
    return stored, request


def _answer(backend: Backend, response: dict[str, Any], *, request_id: str = "r1", **kw: Any):
    return backend.store.turns.resolve_input(
        backend.tenant, backend.sid, "u1", request_id, response=response, subject="tester", **kw
    )


def test_an_answer_resolves_the_request_once_and_the_next_start_resumes_it(
    backend: Backend,
) -> None:
    parked, request = _park(backend)
    event = _answer(backend, {"approved": True}, response_hash="h1")
    assert (event.type, event.seq, event.step, event.fence) == (RESOLVED, 4, None, 0)
    assert event.data == {
        "request_id": "r1",
        "kind": "approval",
        "step": 2,
        "response": {"approved": True},
        "response_hash": "h1",
        "by": "tester",
    }
    answered = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert answered.state is TurnState.WAITING and answered.runnable
    assert answered.revision == parked.revision + 1
    # the stored wait, read back: the request with its answer beside it
    assert answered.pending_input is not None and answered.pending_input.to_json() == {
        **request,
        "resolved": True,
        "response": {"approved": True},
        "response_hash": "h1",
        "by": "tester",
    }
    with pytest.raises(InputNotOpen):  # once
        _answer(backend, {"approved": False})
    with pytest.raises(NotFound):
        _answer(backend, {"approved": True}, request_id="r2")
    # a wait coming back is not a retry: the attempt stays
    resumed = backend.start(2, claim=True)
    assert resumed.turn is not None and resumed.turn.attempt == 1
    assert resumed.turn.state is TurnState.RUNNING and resumed.turn.pending_input is None
    assert [(e.type, e.seq) for e in resumed.events] == [
        (ACCEPTED, 1),
        (STARTED, 2),
        (REQUESTED, 3),
        (RESOLVED, 4),
        (STARTED, 5),
    ]
    assert resumed.events[-1].data == {"attempt": 1}


def test_an_expired_request_is_answered_only_by_the_scan(backend: Backend) -> None:
    parked, _ = _park(backend, expires_in=-1)
    with pytest.raises(InputNotOpen):
        _answer(backend, {"approved": True})
    assert (
        backend.store.reads.get_turn(backend.tenant, backend.sid, "u1").revision == parked.revision
    )
    event = _answer(backend, {"expired": True}, expired=True)
    assert event.data["response"] == {"expired": True}
    with pytest.raises(NotFound):
        backend.store.turns.resolve_input(
            backend.tenant, backend.sid, "nobody", "r1", response={}, subject="tester"
        )


def test_usage_adds_up_as_numeric_on_the_turn_and_the_session(backend: Backend) -> None:
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    revision = turn.revision
    for step, usage in ((1, {"cost_usd": 0.1, "input_tokens": 3}), (2, {"cost_usd": 0.2})):
        revision = backend.append(
            "u1",
            1,
            revision,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=CALL,
            step=step,
            usage=usage,
        ).revision
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.usage == {"cost_usd": 0.3, "input_tokens": 3}  # not 0.30000000000000004
    session = backend.store.reads.get_session(backend.tenant, backend.sid)
    assert session.usage == stored.usage


def test_a_tool_calls_recorded_step_is_written_once(backend: Backend) -> None:
    backend.admit("u1")
    args = (backend.tenant, backend.sid, "u1", 2)
    assert backend.store.tool_steps.get_tool_step(*args, "charge") is None
    first, wrote = backend.store.tool_steps.record_tool_step(
        *args, "charge", {"id": "ch_1", "n": [1, 2]}
    )
    assert wrote and first.result == {"id": "ch_1", "n": [1, 2]} and first.step == 2
    again, wrote = backend.store.tool_steps.record_tool_step(*args, "charge", {"id": "ch_2"})
    assert not wrote and again == first
    assert backend.store.tool_steps.get_tool_step(*args, "charge") == first
    none, wrote = backend.store.tool_steps.record_tool_step(*args, "nothing", None)
    assert wrote and none.result is None


def test_facts_are_remembered_once_per_call_and_recalled_newest_first(backend: Backend) -> None:
    backend.admit("u1")
    store, scope = backend.store, "subject:tester"
    for key, fact in (("k1", "likes tea"), ("k2", "lives in Lisbon")):
        assert store.memory.remember_fact(
            backend.tenant, scope, key, fact, session_id=backend.sid, turn_id="u1"
        )
    assert not store.memory.remember_fact(
        backend.tenant, scope, "k1", "rerun", session_id=backend.sid, turn_id="u1"
    )
    later = datetime.now(UTC) + timedelta(seconds=5)
    facts = store.memory.recall_facts(backend.tenant, scope, before=later, limit=10)
    assert [(f.source_key, f.fact) for f in facts] == [
        ("k2", "lives in Lisbon"),
        ("k1", "likes tea"),
    ]
    assert store.memory.recall_facts(backend.tenant, scope, before=later, limit=1) == facts[:1]
    assert store.memory.recall_facts(backend.tenant, "subject:other", before=later, limit=10) == []
    earlier = datetime.now(UTC) - timedelta(seconds=60)
    assert store.memory.recall_facts(backend.tenant, scope, before=earlier, limit=10) == []


def test_journal_pages_and_a_turns_events(backend: Backend) -> None:
    with pytest.raises(NotFound):
        backend.store.reads.event_page(backend.tenant, backend.sid, after=0)
    backend.admit("u1")
    backend.admit("u2")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    page = backend.store.reads.event_page(backend.tenant, backend.sid, after=1, limit=2)
    assert (page.head_seq, page.earliest_seq) == (4, 1)
    assert [e.seq for e in page.events] == [2, 3]
    end = backend.store.reads.event_page(backend.tenant, backend.sid, after=4)
    assert end.events == [] and end.head_seq == 4
    with pytest.raises(CursorAhead):
        backend.store.reads.event_page(backend.tenant, backend.sid, after=5)
    talk = backend.store.reads.conversation_page(backend.tenant, backend.sid, after=0, limit=10)
    assert [e.type for e in talk.events] == [ACCEPTED, ACCEPTED, MODEL]
    events = backend.store.reads.turn_events(backend.tenant, backend.sid, "u1")
    assert seen(tuple(events)) == [
        ("u1", ACCEPTED, None, 1, 0),
        ("u1", STARTED, None, 3, 1),
        ("u1", MODEL, 1, 4, 1),
    ]
    pages = backend.store.reads.turn_page(backend.tenant, backend.sid, limit=1)
    assert [t.turn_id for t in pages] == ["u2"]
    older = backend.store.reads.turn_page(
        backend.tenant, backend.sid, limit=5, before=pages[0].ordinal
    )
    assert [t.turn_id for t in older] == ["u1"]


def test_event_data_comes_back_as_jsonb_keeps_it(backend: Backend) -> None:
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    data = {"zz": 1, "b": 1.0, "aaa": 1e20, "a": [2.50, 1e-7], "c": {"yy": None, "x": "é"}}
    step = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=data,
        step=1,
    )
    stored = backend.store.reads.turn_events(backend.tenant, backend.sid, "u1")[-1].data
    assert stored == step.event.data
    # a numeric without an exponent (1e20 an int), keys shortest first, then bytewise
    assert list(stored.items()) == [
        ("a", [2.5, 1e-7]),
        ("b", 1.0),
        ("c", {"x": "é", "yy": None}),
        ("zz", 1),
        ("aaa", 100000000000000000000),
    ]
    assert isinstance(stored["aaa"], int) and isinstance(stored["b"], float)


def test_an_empty_usage_on_a_turn_without_any_is_refused_whole(backend: Backend) -> None:
    # jsonb_object_agg over no keys is NULL, which the usage column refuses; the
    # executor never sends an empty usage (worker/checkpoint.py usage_of), and the
    # statement writes nothing
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    journal = backend.journal()
    with pytest.raises(NotNullViolation):
        backend.append(
            "u1",
            1,
            turn.revision,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=CALL,
            step=1,
            usage={},
        )
    assert backend.journal() == journal
    assert backend.store.reads.get_turn(backend.tenant, backend.sid, "u1").revision == turn.revision


def _park_group(backend: Backend, *, expires_in: float = 600) -> list[dict[str, Any]]:
    """u1 started under fence 1 and parked on a group of three approvals (steps 2-4),
    asked as the tool step asks them: one request after another, the last parking."""
    from turnkeep.runtime import input_groups

    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    expires = (datetime.now(UTC) + timedelta(seconds=expires_in)).isoformat()
    requests = [
        {"request_id": f"r{s}", "kind": "approval", "step": s, "expires_at": expires}
        for s in (2, 3, 4)
    ]
    revision = turn.revision
    for i, r in enumerate(requests):
        last = i == len(requests) - 1
        revision = backend.append(
            "u1",
            1,
            revision,
            state=TurnState.WAITING if last else TurnState.RUNNING,
            type=EventType.INPUT_REQUESTED,
            data=r,
            step=r["step"],
            pending_input=input_groups.pending(requests) if last else None,
        ).revision
    return requests


def test_a_group_is_answered_one_by_one_and_runnable_after_the_last(backend: Backend) -> None:
    from turnkeep.runtime.input_groups import GroupAnswer

    requests = _park_group(backend)
    assert backend.store.reads.get_turn(backend.tenant, backend.sid, "u1").awaiting_input
    # a request of the group alone, out of call order
    event = _answer(backend, {"approved": True}, request_id="r3", response_hash="h3")
    assert (event.type, event.seq, event.fence) == (RESOLVED, 6, 0)
    assert event.data == {
        "request_id": "r3",
        "kind": "approval",
        "step": 3,
        "response": {"approved": True},
        "response_hash": "h3",
        "by": "tester",
    }
    turn = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    wait = turn.pending_input
    assert not turn.runnable and wait is not None and wait.request_id == "r2"
    assert [r.request_id for r in wait.open_requests()] == ["r2", "r4"]
    answered = wait.member("r3")
    assert answered is not None and answered.resolved and answered.response_hash == "h3"
    with pytest.raises(InputNotOpen):
        _answer(backend, {"approved": False}, request_id="r3")
    with pytest.raises(NotFound):
        _answer(backend, {"approved": True}, request_id="r9")
    # the other two at once, all or none: one answered already refuses both
    both = [
        GroupAnswer("r2", {"approved": True}, "h2"),
        GroupAnswer("r4", {"approved": False}, "h4"),
    ]
    with pytest.raises(InputNotOpen):
        backend.store.waits.resolve_inputs(
            backend.tenant, backend.sid, "u1", [both[0], GroupAnswer("r3", {}, "x")], subject="t"
        )
    events = backend.store.waits.resolve_inputs(
        backend.tenant, backend.sid, "u1", both, subject="t"
    )
    assert [(e.seq, e.data["request_id"]) for e in events] == [(7, "r2"), (8, "r4")]
    turn = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert turn.runnable and turn.pending_input is not None
    assert turn.pending_input.open_requests() == []
    resumed = backend.start(2, claim=True)
    assert resumed.turn is not None and resumed.turn.attempt == 1
    assert [e.type for e in resumed.events].count(RESOLVED) == 3
    assert len(requests) == 3


def test_the_scan_settles_every_expired_request_of_a_group_at_once(backend: Backend) -> None:
    _park_group(backend, expires_in=-1)
    with pytest.raises(InputExpired):  # past its expiry: nobody's to answer
        _answer(backend, {"approved": True}, request_id="r2")
    event = _answer(backend, {"expired": True}, request_id="r2", expired=True)
    assert event.data["request_id"] == "r2"
    turn = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert turn.runnable
    resolved = [
        e.data["request_id"]
        for e in backend.store.reads.turn_events(backend.tenant, backend.sid, "u1")
        if e.type == RESOLVED
    ]
    assert resolved == ["r2", "r3", "r4"]
