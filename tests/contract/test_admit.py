"""Admission (``admit_turn``, and the transaction of ``lock_session``,
``interrupt_lane`` and ``insert_webhook``) against both stores: what the executor
finds on the lane, and what a replay, a conflict, a busy lane or a quota leaves
(tests/contract/backends.py)."""

from __future__ import annotations

import pytest

from tests.contract.backends import (
    ACCEPTED,
    AGENT,
    ANSWER,
    CANCEL_REQUESTED,
    CANCELLED,
    Backend,
)
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.errors import (
    IdempotencyConflict,
    QuotaExceeded,
    SessionAgentConflict,
    SessionBusy,
    SessionMetadataConflict,
)
from turnkeep.store.records import WebhookSpec


def test_an_admission_queues_the_turn_and_journals_its_input(backend: Backend) -> None:
    first = backend.admission("u1", "hi")
    assert first.created and first.interrupted == ()
    turn = first.turn
    assert (turn.state, turn.attempt, turn.revision, turn.accepted_seq) == (
        TurnState.QUEUED,
        0,
        0,
        1,
    )
    assert (turn.input_hash, turn.submitted_by, turn.usage) == ("hash-of-u1", "tester", {})
    assert first.event is not None and (first.event.seq, first.event.type) == (1, ACCEPTED)
    assert first.event.data == {
        "input": {"messages": [{"role": "user", "content": "hi"}]},
        "agent": AGENT.name,
        "by": "tester",
    }
    second = backend.admission("u2")
    assert second.turn.accepted_seq == 2 and second.turn.ordinal > turn.ordinal
    session = backend.store.reads.get_session(backend.tenant, backend.sid)
    assert (session.head_seq, session.fence, session.agent_name) == (2, 0, AGENT.name)
    assert backend.store.reads.lane_head(backend.tenant, backend.sid).turn_id == "u1"
    assert [t.turn_id for t in backend.store.reads.list_turns(backend.tenant, backend.sid)] == [
        "u1",
        "u2",
    ]


def test_a_replay_is_the_stored_turn_and_other_input_a_conflict(backend: Backend) -> None:
    backend.admit("u1")
    journal = backend.journal()
    replay = backend.admission("u1")
    assert not replay.created and replay.event is None and replay.turn.turn_id == "u1"
    with pytest.raises(IdempotencyConflict):
        backend.admission("u1", input_hash="another")
    with pytest.raises(SessionAgentConflict):
        backend.admission("u2", agent_name="another-agent")
    # none of them wrote anything, nor took a seq
    assert backend.journal() == journal
    assert backend.store.reads.get_session(backend.tenant, backend.sid).head_seq == 1


def test_metadata_is_stored_and_a_sessions_is_set_by_its_first_turn(backend: Backend) -> None:
    first = backend.admission("u1", metadata={"customer": "acme"}, session_metadata={"team": "red"})
    assert first.created and first.turn.metadata == {"customer": "acme"}
    session = backend.store.reads.get_session(backend.tenant, backend.sid)
    assert session.metadata == {"team": "red"}
    # a later turn may leave the session's out, or name the same; other ones are refused
    assert backend.admission("u2").turn.metadata == {}
    assert backend.admission("u3", session_metadata={"team": "red"}).created
    journal = backend.journal()
    with pytest.raises(SessionMetadataConflict):
        backend.admission("u4", session_metadata={"team": "blue"})
    # another agent's session is refused as such, whatever its metadata
    with pytest.raises(SessionAgentConflict):
        backend.admission("u4", agent_name="another-agent", session_metadata={"team": "blue"})
    assert backend.journal() == journal
    assert backend.store.reads.get_session(backend.tenant, backend.sid).metadata == {"team": "red"}


def test_reject_refuses_a_busy_lane_and_writes_nothing(backend: Backend) -> None:
    assert backend.admission("u1", multitask=Multitask.REJECT).created  # an idle lane
    with pytest.raises(SessionBusy):
        backend.admission("u2", multitask=Multitask.REJECT)
    replay = backend.admission("u1", multitask=Multitask.REJECT)  # never refused
    assert not replay.created
    assert backend.journal() == [("u1", ACCEPTED, None, 0)]
    assert backend.store.reads.get_session(backend.tenant, backend.sid).head_seq == 1


def test_interrupt_cancels_every_earlier_turn_in_its_transaction(backend: Backend) -> None:
    backend.admit("u1")
    backend.admit("u2")
    running = backend.start(1, claim=True).turn
    assert running is not None and running.turn_id == "u1"
    third = backend.admission("u3", multitask=Multitask.INTERRUPT)
    assert third.created
    # the running one gets the request, the queued one is settled at once; seqs in
    # admission order after the new turn's own
    assert [(e.turn_id, e.type, e.seq) for e in third.interrupted] == [
        ("u1", CANCEL_REQUESTED, 5),
        ("u2", CANCEL_REQUESTED, 6),
        ("u2", CANCELLED, 7),
    ]
    assert third.interrupted[0].data == {"by": "tester", "reason": "interrupted", "by_turn": "u3"}
    u1 = backend.store.reads.get_turn(backend.tenant, backend.sid, "u1")
    assert u1.state is TurnState.RUNNING and u1.cancel_requested
    assert u1.revision == running.revision  # its worker's next write still lands
    u2 = backend.store.reads.get_turn(backend.tenant, backend.sid, "u2")
    assert u2.state is TurnState.CANCELLED and u2.cancel_requested
    step = backend.append(
        "u1",
        1,
        running.revision,
        state=TurnState.CANCELLED,
        type=EventType.TURN_CANCELLED,
        data={"by": "tester"},
    )
    assert step.cancel_requested and step.lane_runnable  # u3 is next
    # a replay interrupts nothing
    again = backend.admission("u3", multitask=Multitask.INTERRUPT)
    assert not again.created and again.interrupted == ()


def test_quotas_bound_new_turns_and_write_nothing_at_the_bound(backend: Backend) -> None:
    backend.admit("u1")
    with pytest.raises(QuotaExceeded) as session_full:
        backend.admission("u2", max_queued_session=1)
    assert (session_full.value.scope, session_full.value.limit) == ("session", 1)
    with pytest.raises(QuotaExceeded) as tenant_full:
        backend.admission("u2", max_queued_tenant=1)
    assert tenant_full.value.scope == "tenant"
    assert not backend.admission("u1", max_queued_session=1).created  # a replay passes
    assert backend.admission("u2", max_queued_session=2).created
    assert [e[0] for e in backend.journal()] == ["u1", "u2"]


def test_a_webhook_written_with_its_turn_is_reported_by_the_settling_step(
    backend: Backend,
) -> None:
    hook = WebhookSpec(
        run_id="run", node_id="node", url="http://127.0.0.1:9/h", secret_id="k", delivery_id="d"
    )
    assert backend.admission("u1", webhook=hook).created
    assert backend.admission("u2").created
    turn = backend.start(1, claim=True).turn
    assert turn is not None
    settled = backend.append(
        "u1",
        1,
        turn.revision,
        state=TurnState.COMPLETED,
        type=EventType.MODEL_COMPLETED,
        data=ANSWER,
        step=1,
        result={"text": "done"},
        then=(EventType.TURN_COMPLETED, {"result": {"text": "done"}}),
    )
    assert settled.webhook and settled.lane_runnable
    second = backend.start(1, claim=False).turn
    assert second is not None
    other = backend.append(
        "u2",
        1,
        second.revision,
        state=TurnState.CANCELLED,
        type=EventType.TURN_CANCELLED,
        data={"by": "tester"},
    )
    assert not other.webhook and not other.lane_runnable
