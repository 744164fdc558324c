"""A turn's start (``start_turn``) against both stores: the fence
claim or confirmation, which lane head starts and which does not, and the context an
attempt starts from (tests/contract/backends.py)."""

from __future__ import annotations

import pytest

from tests.contract.backends import (
    ACCEPTED,
    ANSWER,
    CALL,
    CAP,
    HASHES,
    MODEL,
    REQUESTED,
    STARTED,
    Backend,
    seen,
)
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import NotFound
from turnkeep.store.records import LaneStarted

# -- start ------------------------------------------------------------------------------


def test_a_session_without_a_row_starts_nothing(backend: Backend) -> None:
    started = backend.start(1, claim=True)
    assert started == LaneStarted(claimed=False, stored_fence=0, head=None)
    assert backend.store.reads.fence_floor(backend.tenant, backend.sid) == 0
    with pytest.raises(NotFound):
        backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")


def test_a_claim_starts_the_lane_heads_attempt(backend: Backend) -> None:
    backend.admit("u1")
    started = backend.start(1, claim=True)
    assert started.claimed and started.stored_fence == 0
    assert started.head is not None and started.head.turn_id == "u1"
    assert started.head.state is TurnState.QUEUED and started.head.attempt == 0
    turn = started.turn
    assert turn is not None and turn.turn_id == "u1"
    assert (turn.state, turn.attempt, turn.revision) == (TurnState.RUNNING, 1, 1)
    assert not turn.cancel_requested and turn.pending_input is None
    assert started.prior == ()
    assert seen(started.events) == [("u1", ACCEPTED, None, 1, 0), ("u1", STARTED, None, 2, 1)]
    assert started.events[-1].data == {"attempt": 1}
    assert started.events[0].data["input"] == {"messages": [{"role": "user", "content": "hello"}]}
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert (stored.state, stored.attempt, stored.revision) == (TurnState.RUNNING, 1, 1)
    assert backend.store.reads.fence_floor(backend.tenant, backend.sid) == 1
    assert [e.seq for e in backend.store.reads.turn_events(backend.tenant, backend.sid, "u1")] == [
        1,
        2,
    ]


def test_a_claim_needs_a_fence_above_the_stored_one_and_a_confirm_the_same_one(
    backend: Backend,
) -> None:
    backend.admit("u1")
    assert backend.start(4, claim=True).claimed
    journal = backend.journal()
    # an equal or older fence is refused, the stored one said; nothing written
    for fence in (4, 3):
        refused = backend.start(fence, claim=True)
        assert not refused.claimed and refused.stored_fence == 4 and refused.turn is None
        assert refused.head is not None and refused.head.state is TurnState.RUNNING
    # a confirm holds only for the stored fence (no agent served: nothing started)
    assert not backend.start(5, claim=False, hashes=[]).claimed
    assert not backend.start(3, claim=False, hashes=[]).claimed
    confirmed = backend.start(4, claim=False, hashes=[])
    assert confirmed.claimed and confirmed.stored_fence == 4 and confirmed.turn is None
    assert backend.journal() == journal
    assert backend.store.reads.fence_floor(backend.tenant, backend.sid) == 4


def test_a_head_at_the_cap_or_of_an_agent_not_served_is_not_started(backend: Backend) -> None:
    backend.admit("u1")
    # each claim starts another attempt of the running head, up to the cap
    for fence in range(1, CAP + 1):
        started = backend.start(fence, claim=True)
        assert started.turn is not None and started.turn.attempt == fence
    capped = backend.start(CAP + 1, claim=True)
    assert capped.claimed and capped.turn is None
    assert capped.head is not None and capped.head.attempt == CAP
    other = backend.start(CAP + 2, claim=True, hashes=["another-agents-hash"])
    assert other.claimed and other.turn is None and other.head is not None
    assert backend.journal() == [("u1", ACCEPTED, None, 0)] + [
        ("u1", STARTED, None, fence) for fence in range(1, CAP + 1)
    ]
    assert backend.store.reads.fence_floor(backend.tenant, backend.sid) == CAP + 2


def test_a_waiting_turn_is_not_started_until_its_request_is_answered(backend: Backend) -> None:
    backend.admit("u1")
    started = backend.start(1, claim=True)
    assert started.turn is not None
    request = {"request_id": "r1", "kind": "approval", "step": 2}
    parked = backend.append(
        "u1",
        1,
        started.turn.revision,
        state=TurnState.WAITING,
        type=EventType.INPUT_REQUESTED,
        data=request,
        pending_input=request,
    )
    assert parked.revision == started.turn.revision + 1
    again = backend.start(1, claim=False)
    assert again.claimed and again.turn is None
    assert again.head is not None and again.head.state is TurnState.WAITING
    assert again.head.pending_input is not None
    assert again.head.pending_input.to_json() == request
    assert backend.journal()[-1] == ("u1", REQUESTED, None, 1)


# -- what a start carries over ----------------------------------------------------------------


def test_a_start_after_an_earlier_turn_compacted_begins_at_its_compaction(
    backend: Backend,
) -> None:
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    one = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    summary = {"summary": "so far", "from_seq": 1, "to_seq": one.seq, "supersedes": None}
    compacted = backend.append(
        "u1",
        1,
        one.revision,
        state=TurnState.RUNNING,
        type=EventType.CONTEXT_COMPACTED,
        data=summary,
    )
    settled = backend.append(
        "u1",
        1,
        compacted.revision,
        state=TurnState.COMPLETED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=2,
        result={"text": "done"},
        then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
    )
    backend.admit("u2")
    second = backend.start(1, claim=False)
    assert second.turn is not None and second.turn.turn_id == "u2"
    # the compaction stands for everything up to its to_seq; what came after follows it
    assert [(e.type, e.seq) for e in second.prior] == [
        (EventType.CONTEXT_COMPACTED.value, compacted.seq),
        (MODEL, settled.events[0].seq),
    ]
    assert second.prior[0].data == summary


def test_a_steps_usage_is_added_to_its_turns(backend: Backend) -> None:
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None and turn.usage == {}
    revision = turn.revision
    for step in (1, 2):
        revision = backend.append(
            "u1",
            1,
            revision,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=CALL,
            step=step,
            usage={"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.25},
        ).revision
    backend.append(
        "u1",
        1,
        revision,
        state=TurnState.RUNNING,
        type=EventType.TOOL_COMPLETED,
        data={"result": 1},
        step=3,
    )
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.usage == {"input_tokens": 200, "output_tokens": 20, "cost_usd": 0.5}
    restarted = backend.start(2, claim=True).turn
    assert restarted is not None and restarted.usage == stored.usage


def test_the_earlier_turns_a_start_carries_are_the_newest_within_the_window(
    backend: Backend,
) -> None:
    # the same store over the same tables (a pool, or the in-memory connector)
    small = type(backend.store)(backend.store.db, window_rows=3, window_bytes=1 << 20)
    for turn_id in ("u1", "u2"):
        backend.admit(turn_id)
        turn = small.turns.start(
            backend.tenant,
            backend.sid,
            1,
            claim=turn_id == "u1",
            agent_hashes=HASHES,
            max_attempts=CAP,
        ).turn
        assert turn is not None and turn.turn_id == turn_id
        backend.append(
            turn_id,
            1,
            turn.revision,
            state=TurnState.COMPLETED,
            type=EventType.MODEL_COMPLETED,
            data=ANSWER,
            step=1,
            result={"text": "done"},
            then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
        )
    backend.admit("u3")
    third = small.turns.start(
        backend.tenant, backend.sid, 1, claim=False, agent_hashes=HASHES, max_attempts=CAP
    )
    assert third.turn is not None and third.turn.turn_id == "u3"
    # four earlier events, the newest three kept, in turn then seq order
    assert [(e.turn_id, e.type) for e in third.prior] == [
        ("u1", MODEL),
        ("u2", ACCEPTED),
        ("u2", MODEL),
    ]
    # a byte bound below any event's keeps none of them
    tiny = type(backend.store)(backend.store.db, window_rows=100, window_bytes=1)
    backend.admit("u4")
    done = backend.append(
        "u3",
        1,
        third.turn.revision,
        state=TurnState.CANCELLED,
        type=EventType.TURN_CANCELLED,
        data={"by": "tester"},
    )
    assert done.lane_runnable
    fourth = tiny.turns.start(
        backend.tenant, backend.sid, 1, claim=False, agent_hashes=HASHES, max_attempts=CAP
    )
    assert fourth.turn is not None and fourth.turn.turn_id == "u4" and fourth.prior == ()


def test_a_delegated_childs_start_carries_no_earlier_turn_of_its_lane(backend: Backend) -> None:
    """Children of one call may share a lane (max_concurrent): a later child's context
    is its own task alone, never an earlier sibling's task or answer (issue 25)."""
    link = {"parent": {"session_id": "p", "turn_id": "pt", "step": 2, "task_id": "a"}}
    for turn_id, task in (("c1", "task a"), ("c2", "task b")):
        backend.admission(
            turn_id,
            input={"messages": [{"role": "user", "content": task}], "delegation": link},
        )
    first = backend.start(1, claim=True).turn
    assert first is not None and first.turn_id == "c1"
    backend.append(
        "c1",
        1,
        first.revision,
        state=TurnState.COMPLETED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=1,
        result={"text": "done"},
        then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
    )
    second = backend.start(1, claim=False)
    assert second.turn is not None and second.turn.turn_id == "c2"
    assert second.prior == ()
    assert [e.type for e in second.events] == [ACCEPTED, STARTED]


def test_a_reruns_start_carries_the_conversation_its_source_saw(backend: Backend) -> None:
    """A rerun (runtime/reruns.py) is admitted after its source: its context is the
    session's before the source's admission, never the source's own input or answer,
    nor a turn admitted after the source."""
    for turn_id, text in (("u1", "first"), ("u2", "the source"), ("u3", "after it")):
        backend.admit(turn_id, text)
        started = backend.start(int(turn_id[1]), claim=True).turn
        assert started is not None and started.turn_id == turn_id
        backend.append(
            turn_id,
            int(turn_id[1]),
            started.revision,
            state=TurnState.COMPLETED,
            type=EventType.MODEL_COMPLETED,
            data=ANSWER,
            step=1,
            result={"text": "done"},
            then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
        )
    source = backend.store.reads.get_turn(backend.tenant, backend.sid, "u2")
    lineage = {"session_id": backend.sid, "turn_id": "u2", "from_step": 1}
    backend.admission(
        "r1",
        "the source",
        input={
            "messages": [{"role": "user", "content": "the source"}],
            "rerun": {**lineage, "before_seq": source.accepted_seq},
        },
    )
    rerun = backend.start(9, claim=True)
    assert rerun.turn is not None and rerun.turn.turn_id == "r1"
    assert {e.turn_id for e in rerun.prior} == {"u1"}
    assert all(e.seq < source.accepted_seq for e in rerun.prior)
    assert [e.type for e in rerun.events] == [ACCEPTED, STARTED]
