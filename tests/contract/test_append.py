"""A step's write (``fenced_append``) against both stores: its
guards, the settling step's two events, and the API's cancellation the executor races
with (``request_cancel``) (tests/contract/backends.py)."""

from __future__ import annotations

import pytest

from tests.contract.backends import (
    ACCEPTED,
    ANSWER,
    CALL,
    CANCEL_REQUESTED,
    CANCELLED,
    COMPLETED,
    FAILED,
    MODEL,
    REQUESTED,
    STARTED,
    Backend,
    seen,
)
from turnkeep.runtime.signals import LeaseLost
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import NotFound, OutcomeAlreadyRecorded, TurnNotActive

# -- append: the guards ---------------------------------------------------------------------


def test_append_moves_the_turn_and_takes_the_next_seq(backend: Backend) -> None:
    backend.admit("u1")
    turn = backend.start(2, claim=True).turn
    assert turn is not None
    ok = backend.append(
        "u1",
        2,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    assert (ok.revision, ok.attempt, ok.cancel_requested) == (2, 1, False)
    assert seen(ok.events) == [("u1", MODEL, 1, 3, 2)] and ok.event.data == CALL
    assert not ok.lane_runnable and not ok.webhook
    # a step that counts an attempt (a corrective retry)
    inc = backend.append(
        "u1",
        2,
        ok.revision,
        state=TurnState.RUNNING,
        type=EventType.TOOL_COMPLETED,
        data={"result": 1},
        step=2,
        attempt_inc=1,
    )
    assert (inc.revision, inc.attempt, inc.seq) == (3, 2, 4)
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert (stored.revision, stored.attempt, stored.state) == (3, 2, TurnState.RUNNING)


def test_append_refuses_a_stale_fence_revision_turn_or_transition_and_takes_no_seq(
    backend: Backend,
) -> None:
    backend.admit("u1")
    turn = backend.start(4, claim=True).turn
    assert turn is not None
    ok = backend.append(
        "u1",
        4,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    journal = backend.journal()
    refusals: list[tuple[str, int, int, TurnState]] = [
        ("u1", 3, ok.revision, TurnState.RUNNING),  # an older fence
        ("u1", 5, ok.revision, TurnState.RUNNING),  # a fence never claimed
        ("u1", 4, ok.revision - 1, TurnState.RUNNING),  # a stale revision
        ("u1", 4, ok.revision + 1, TurnState.RUNNING),  # a revision from the future
        ("u1", 4, ok.revision, TurnState.QUEUED),  # not a declared transition
        ("nobody", 4, ok.revision, TurnState.RUNNING),  # no such turn
    ]
    for turn_id, fence, revision, state in refusals:
        with pytest.raises(LeaseLost):
            backend.append(
                turn_id,
                fence,
                revision,
                state=state,
                type=EventType.TOOL_COMPLETED,
                data={"result": 1},
                step=2,
            )
    # one outcome per step, whichever outcome type comes second
    for type in (EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED):
        with pytest.raises(OutcomeAlreadyRecorded):
            backend.append(
                "u1", 4, ok.revision, state=TurnState.RUNNING, type=type, data={}, step=1
            )
    # a newer fence claimed elsewhere: the old holder is out
    assert backend.store.turns.claim(backend.tenant, backend.sid, 5)
    with pytest.raises(LeaseLost):
        backend.append(
            "u1",
            4,
            ok.revision,
            state=TurnState.RUNNING,
            type=EventType.TOOL_COMPLETED,
            data={"result": 1},
            step=2,
        )
    assert backend.journal() == journal  # no refused statement wrote or took a seq
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.revision == ok.revision and stored.state is TurnState.RUNNING
    # the new holder writes on from the next seq
    next_ = backend.append(
        "u1",
        5,
        ok.revision,
        state=TurnState.RUNNING,
        type=EventType.TOOL_COMPLETED,
        data={"result": 1},
        step=2,
    )
    assert next_.seq == len(journal) + 1


# -- settlement ---------------------------------------------------------------------------


def test_a_settling_step_writes_both_events_and_says_whether_the_lane_goes_on(
    backend: Backend,
) -> None:
    backend.admit("u1")
    backend.admit("u2", "again")
    first = backend.start(1, claim=True)
    assert first.turn is not None and first.turn.turn_id == "u1"
    assert seen(first.events) == [("u1", ACCEPTED, None, 1, 0), ("u1", STARTED, None, 3, 1)]
    settled = backend.append(
        "u1",
        1,
        first.turn.revision,
        state=TurnState.COMPLETED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=1,
        result={"text": "done"},
        then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
    )
    assert seen(settled.events) == [("u1", MODEL, 1, 4, 1), ("u1", COMPLETED, None, 5, 1)]
    assert settled.events[1].data == {"result": {"text": "done"}}
    assert settled.lane_runnable and not settled.webhook  # u2 is queued behind it
    done = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert (done.state, done.result, done.revision) == (
        TurnState.COMPLETED,
        {"text": "done"},
        settled.revision,
    )
    # terminal states never change
    for state in (TurnState.FAILED, TurnState.RUNNING, TurnState.CANCELLED):
        with pytest.raises(LeaseLost):
            backend.append(
                "u1", 1, settled.revision, state=state, type=EventType.TURN_FAILED, data={}
            )
    # the lane goes on under the same lease: earlier turns give their input and outcomes
    second = backend.start(1, claim=False)
    assert second.claimed and second.turn is not None and second.turn.turn_id == "u2"
    assert [(e.turn_id, e.type, e.seq) for e in second.prior] == [
        ("u1", ACCEPTED, 1),
        ("u1", MODEL, 4),
    ]
    assert seen(second.events) == [("u2", ACCEPTED, None, 2, 0), ("u2", STARTED, None, 6, 1)]
    failed = backend.append(
        "u2",
        1,
        second.turn.revision,
        state=TurnState.FAILED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=1,
        error={"code": "output_invalid"},
        then=(EventType.TURN_FAILED, {"error": {"code": "output_invalid"}}),
    )
    assert [e.type for e in failed.events] == [MODEL, FAILED]
    assert not failed.lane_runnable  # nothing left on the lane
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u2")
    assert stored.state is TurnState.FAILED and stored.error == {"code": "output_invalid"}
    assert stored.result is None
    idle = backend.start(1, claim=False)
    assert idle.claimed and idle.head is None and idle.turn is None


def test_a_turn_its_worker_cancels_says_the_next_one_can_run(
    backend: Backend,
) -> None:
    backend.admit("u1")
    backend.admit("u2")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    settled = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.CANCELLED,
        type=EventType.TURN_CANCELLED,
        data={"by": "tester"},
    )
    assert settled.lane_runnable and [e.type for e in settled.events] == [CANCELLED]


# -- the API's cancellation, which the executor races with ------------------------------------


def test_cancelling_a_running_turn_is_a_request_its_next_step_reports(backend: Backend) -> None:
    backend.admit("u1")
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    assert backend.cancel("u1") == [CANCEL_REQUESTED]
    assert backend.cancel("u1") == []  # recorded already
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.state is TurnState.RUNNING and stored.cancel_requested
    assert stored.revision == turn.revision  # the holder's next write is not refused
    step = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    assert step.cancel_requested and step.seq == 4
    settled = backend.append(
        "u1",
        1,
        step.revision,
        state=TurnState.CANCELLED,
        type=EventType.TURN_CANCELLED,
        data={"by": "tester"},
    )
    assert not settled.lane_runnable
    with pytest.raises(TurnNotActive):
        backend.cancel("u1")


def test_cancelling_a_turn_no_worker_steps_settles_it_at_once(backend: Backend) -> None:
    backend.admit("u1")
    backend.admit("u2")
    assert backend.cancel("u1") == [CANCEL_REQUESTED, CANCELLED]
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert stored.state is TurnState.CANCELLED and stored.cancel_requested
    # a waiting turn too: nobody is stepping it either
    turn = backend.start(1, claim=True).turn
    assert turn is not None and turn.turn_id == "u2"
    request = {"request_id": "r1", "kind": "approval", "step": 2}
    backend.append(
        "u2",
        1,
        turn.revision,
        state=TurnState.WAITING,
        type=EventType.INPUT_REQUESTED,
        data=request,
        pending_input=request,
    )
    assert backend.cancel("u2") == [CANCEL_REQUESTED, CANCELLED]
    waited = backend.store.reads.get_turn(backend.tenant, backend.sid, "u2")
    assert waited.state is TurnState.CANCELLED and waited.pending_input is None
    # the worker that parked it finds its revision gone
    with pytest.raises(LeaseLost):
        backend.append(
            "u2",
            1,
            turn.revision + 1,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=CALL,
            step=3,
        )
    assert [t for _, t, _, _ in backend.journal()] == [
        ACCEPTED,
        ACCEPTED,
        CANCEL_REQUESTED,
        CANCELLED,
        STARTED,
        REQUESTED,
        CANCEL_REQUESTED,
        CANCELLED,
    ]
    with pytest.raises(NotFound):
        backend.cancel("nobody")


# -- a move to another definition (turn.definition_changed) ------------------------------


def test_a_definition_change_moves_the_turns_hash_and_version_in_its_own_step(
    backend: Backend,
) -> None:
    """Admission pins version and policy; a start that serves another hash leaves the
    head unstarted; the move's statement sets the hash and version and clears an
    operator's request, and the turn's next steps run on it."""
    backend.admission("u1", agent_version="1", on_deploy="pinned")
    head = backend.start(2, claim=True, hashes=["f" * 64]).head
    assert head is not None and head.state is TurnState.QUEUED
    assert (head.agent_version, head.on_deploy, head.upgrade_requested) == ("1", "pinned", False)
    turn = backend.start(2, claim=False, hashes=["f" * 64, head.agent_hash]).turn
    assert turn is not None and turn.state is TurnState.RUNNING
    moved = backend.append(
        "u1",
        2,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.TURN_DEFINITION_CHANGED,
        data={"from_hash": head.agent_hash, "to_hash": "e" * 64, "reason": "requested"},
        agent_hash="e" * 64,
        agent_version="2",
    )
    assert seen(moved.events) == [("u1", EventType.TURN_DEFINITION_CHANGED.value, None, 3, 2)]
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert (stored.agent_hash, stored.agent_version, stored.on_deploy) == ("e" * 64, "2", "pinned")
    assert stored.revision == moved.revision
    # an ordinary step leaves the definition as it is
    backend.append(
        "u1",
        2,
        moved.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=CALL,
        step=1,
    )
    stored = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert (stored.agent_hash, stored.agent_version) == ("e" * 64, "2")


# -- a model call's provider state (docs/erasure.md) ------------------------------------------


def test_a_steps_provider_state_is_kept_beside_its_event_and_read_by_provider(
    backend: Backend,
) -> None:
    backend.admit("u1")
    turn = backend.start(2, claim=True).turn
    assert turn is not None
    envelope = {"v": 1, "provider": "anthropic", "blocks": [{"type": "thinking", "signature": "s"}]}
    data = {**CALL, "provider_state": "anthropic"}
    ok = backend.append(
        "u1",
        2,
        turn.revision,
        state=TurnState.RUNNING,
        type=EventType.MODEL_COMPLETED,
        data=data,
        step=1,
        provider_state=envelope,
    )
    # the event is as given: the envelope is not in it
    assert ok.event.data == data and "blocks" not in str(ok.event.data)
    # a settling step's state goes with its own event, not the terminal one after it
    done = backend.append(
        "u1",
        2,
        ok.revision,
        state=TurnState.COMPLETED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=3,
        then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
        result={"text": "done"},
        provider_state={**envelope, "blocks": []},
    )
    first, terminal = done.events
    store, t, s = backend.store, backend.tenant, backend.sid
    every = [ok.seq, first.seq, terminal.seq]
    assert store.provider_state.provider_state(t, s, "anthropic", every) == {
        ok.seq: envelope,
        first.seq: {**envelope, "blocks": []},
    }
    assert (
        store.provider_state.provider_state(t, s, "openai", every) == {}
    )  # another provider's: none
    assert store.provider_state.provider_state(t, s, "anthropic", []) == {}
